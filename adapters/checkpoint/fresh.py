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
    """`adapters.checkpoint.jobkey.ids_job_for` of a state dir that holds no checkpoint (or none):
    the new job's key, `new_job_key`. For a dir that holds one, its key is read from the checkpoint."""
    assert state_dir is None or not holds_checkpoint(state_dir), "a checkpoint's job key is read from it"
    return new_job_key(manifest)
