"""`judgecore run` on a state dir that holds a checkpoint: what its checks read of the job kept there
(how it was started, its manifest, its job key, its items, and what a dry run's plan starts from),
each read from the store opened read-only. The command's dispatch gives a `StoredJob` to
`adapters.cli.run.cmd_run` only when `--state` holds a checkpoint: a dry run of a new job imports
neither this module nor the store (nor SQLite)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from adapters.checkpoint.fresh import holds_checkpoint
from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.store import Store
from adapters.files.paths import kept_path
from adapters.run.dryrun import kept_figures
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, Learned
from judgecore.run.job._machine import History


class StoredJob:
    """The job the checkpoint in `state` holds, as `run`'s checks read it (`adapters.cli.remembered.
    KeptJob`): each read opens the store read-only and closes it again."""

    def __init__(self, state: Path) -> None:
        self.state = state

    def started(self) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        """How the job was started (its remembered invocation; None before judgecore kept one) and its
        manifest."""
        store = Store.open_readonly(self.state)
        try:
            return store.invocation, store.manifest
        finally:
            store.close()

    def manifest_answered(self, manifest: Mapping[str, Any]) -> tuple[dict[str, Any] | None, bool]:
        """The kept manifest, and whether the job received an answer when it differs from `manifest`
        (`Store.answered`: a job that never did gives its dir to another)."""
        store = Store.open_readonly(self.state)
        try:
            old = store.manifest
            return old, old is not None and old != manifest and store.answered()
        finally:
            store.close()

    def key_of(self, state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str | None:
        """The job key its custom_ids are derived with (`adapters.checkpoint.jobkey.ids_job_for`)."""
        return ids_job_for(state_dir, manifest)

    def check_overlap(self, ns: argparse.Namespace, kept: dict[str, Any] | None, ids: Any) -> None:
        """`_check_overlap`: the input's item ids against the job's."""
        _check_overlap(ns, kept, ids)

    def dry_figures(
        self, job: JobPlan, *, rubric: str | None, settings: JobSettings, source: str | None
    ) -> tuple[History, Learned, float]:
        """What a dry run's plan starts from (`adapters.run.dryrun.kept_figures`)."""
        return kept_figures(self.state, job, rubric=rubric, settings=settings, source=source)


def _check_overlap(ns: argparse.Namespace, kept: dict[str, Any] | None, ids: Any) -> None:
    """An input that shares no item id with the job in `--state` is exit 2 (a new job's input, most
    likely, given the wrong `--state`), naming both files and the ways out, unless `--add-items`; one
    that holds only some of the job's items is a warning (the output lists every item of the job)."""

    if ns.state is None or not holds_checkpoint(ns.state):
        return
    store = Store.open_readonly(ns.state)
    try:
        if store.manifest is None:
            return
        bound, given, known = store.known_items(ids)
    finally:
        store.close()
    started = (
        f"started from {kept_path(ns.state, kept['input'])}" if kept and kept.get("input") else "started"
    )
    if bound and not known and not ns.add_items:
        raise UsageError(
            f"{ns.input}: none of its {given:,} item id(s) is in the job in --state {ns.state} ({started}, "
            f"{bound:,} items): point --state at a new directory for a new job, or give --add-items to add "
            "them to this one"
        )
    if known < bound and given == known:
        print(
            f"warning: {ns.input} holds {known:,} of the {bound:,} items of the job in --state {ns.state} "
            f"({started}); the output lists all {bound:,}",
            file=sys.stderr,
        )
