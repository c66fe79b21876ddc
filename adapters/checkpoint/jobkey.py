"""A state dir's job key, the one its custom_ids are derived with (`judgecore.job.ids.job_key`): the key its
checkpoint keeps, or a new one for a new dir."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from adapters.checkpoint.store import Store
from adapters.checkpoint.store.schema import holds_checkpoint
from judgecore.job.ids import job_key


def ids_job_for(state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str | None:
    """The job key a job's custom_ids are derived with (`judgecore.job.ids`), read before its input is.

    A state dir bound to a job keeps its key (None for one bound before job keys: it keeps its `v1`
    ids). For a new dir (or none) the key is made from the manifest and a fresh nonce: `bind_job`
    keeps it, and every later run reads it back, so the ids are the job's own in every process.
    """
    if state_dir is not None and holds_checkpoint(state_dir):
        try:
            store = Store.open_readonly(state_dir)
        except sqlite3.Error:
            store = None
        if store is not None:
            try:
                if store.get_meta("manifest") is not None:
                    return store.get_meta("custom_id_job")
            except sqlite3.Error:
                pass  # a database never bound (no tables yet): a new job's
            finally:
                store.close()
    canonical = orjson.dumps(dict(manifest), option=orjson.OPT_SORT_KEYS)
    return job_key(canonical, os.urandom(8).hex())  # `secrets.token_hex(8)`, without importing `secrets`
