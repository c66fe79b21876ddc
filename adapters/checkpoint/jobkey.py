"""A state dir's job key, the one its custom_ids are derived with (`judgecore.job.ids.job_key`): the key its
checkpoint keeps, or a new one for a new dir."""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.checkpoint.fresh import holds_checkpoint, new_job_key
from adapters.checkpoint.store import Store


def ids_job_for(state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str | None:
    """The job key a job's custom_ids are derived with (`judgecore.job.ids`), read before its input is.

    A state dir bound to a job keeps its key (None for one bound before job keys: it keeps its `v1`
    ids; a key drawn with a nonce before 2026-12-03: its `v2` ids). For a new dir (or none) the key is
    the manifest's alone (`new_job_key`): the same job started afresh, in any dir, on any machine, from
    the same rows in any format, derives the same key and so the same custom_ids; no nonce.
    """
    if state_dir is not None and holds_checkpoint(state_dir):
        try:
            store = Store.open_readonly(state_dir)
        except sqlite3.Error:
            store = None
        if store is not None:
            try:
                kept = store.manifest
                if kept is not None and (kept == dict(manifest) or store.answered()):
                    return store.ids_job
                # else another job, and this one never received an answer: it takes the dir afresh
            except sqlite3.Error:
                pass  # a database never bound (no tables yet): a new job's
            finally:
                store.close()
    return new_job_key(manifest)
