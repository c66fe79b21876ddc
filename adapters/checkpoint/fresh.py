"""What a command needs to know of a state dir before it opens a checkpoint, if it opens one at all:
whether the dir holds one (`holds_checkpoint`), the names of the checkpoint's files, and the key of a
new job's custom_ids (`new_job_key`). It imports neither SQLite nor the store: a dry run on a fresh
state dir, which reads no checkpoint, loads this module and not `adapters.checkpoint.store`."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from judgecore.job.ids import job_key

#: The checkpoint's own files in a state dir: the database (`DB_NAME`) and SQLite's companions.
STATE_FILES = ("judgecore.sqlite3", "judgecore.sqlite3-wal", "judgecore.sqlite3-shm")
DB_NAME = STATE_FILES[0]


def holds_checkpoint(state_dir: Path | str) -> bool:
    """Whether `state_dir` holds a checkpoint (`adapters.checkpoint.store.Store.exists`)."""
    return (Path(state_dir) / DB_NAME).exists()


def new_job_key(manifest: Mapping[str, Any]) -> str:
    """The key of a new job's custom_ids (`judgecore.job.ids.job_key`): its manifest's alone, so the
    same job started afresh, in any dir, on any machine, from the same rows in any format, derives
    the same key and so the same custom_ids; no nonce."""
    return job_key(orjson.dumps(dict(manifest), option=orjson.OPT_SORT_KEYS))


def fresh_key_of(state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str:
    """`adapters.checkpoint.jobkey.ids_job_for` of a state dir its caller found holding no checkpoint
    (or of no dir): the new job's key, `new_job_key` (`state_dir` is not read). The key of a dir that
    holds one is read from its checkpoint (`ids_job_for`)."""
    return new_job_key(manifest)
