"""`judgecore run --dry-run` when the plan is not made as the file is read (`adapters.run.streamed`): a
design, a state dir that holds a checkpoint (its items checked against it), `--count-tokens`. The
items are held, the job planned (`adapters.run.planning`) and its plan asked of the job's machine
from what the checkpoint holds (`adapters.run.dryrun_plan`). The command's dispatch loads this module
only when it is called: a dry run of a new job imports neither."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from adapters.checkpoint.fresh import fresh_key_of
from adapters.cli.remembered import KeptJob
from adapters.cli.run import Deadline, show_plan
from adapters.files.items_io import load_design_items, load_items
from adapters.files.readers import InputKind
from adapters.run.dryrun_plan import dry_run_plan
from adapters.run.planning import job_of
from adapters.run.settings import JobSettings
from judgecore.job.items import Items


def held_dry_run(
    ns: argparse.Namespace,
    kept: dict[str, Any] | None,
    kind: InputKind | None,
    rubric: str | None,
    settings: JobSettings,
    deadline: Deadline | None,
    stored: KeptJob | None,
    *,
    job: str | None,
) -> int:
    """Read the items (their custom_ids those of job key `job`; their messages held only for
    `--count-tokens`, their digests only to check them against the checkpoint `stored`), check them
    against it, and print the plan."""
    fresh = stored is None
    held = bool(ns.count_tokens)
    dry = (
        load_items(ns.input, hold_messages=held, digests=not fresh, job=job, kind=kind, lazy_ids=fresh)
        if settings.plain  # one request per item
        else load_design_items(ns.input, settings.design, job=job, kind=kind)
    )
    if stored is not None:
        stored.check_overlap(ns, kept, dry.ids)
    return _dry_run(ns, dry, rubric, settings, deadline, stored)


def _dry_run(
    ns: argparse.Namespace,
    items: Items,
    rubric: str | None,
    settings: JobSettings,
    deadline: Deadline | None = None,
    stored: KeptJob | None = None,
) -> int:
    """Print the plan (`adapters.run.dryrun_plan`, from what the job `stored` in `--state` holds),
    with no event loop."""
    state_dir = ns.state or Path()
    job = job_of(
        items,
        rubric=rubric,
        settings=settings,
        state_dir=state_dir,
        key_of=fresh_key_of if stored is None else stored.key_of,
    )
    figures: dict[str, Any] = {}
    if stored is not None:
        history, learned, spent = stored.dry_figures(
            job, rubric=rubric, settings=settings, source=str(ns.input)
        )
        figures = {"history": history, "learned": learned, "spent": spent}
    result = dry_run_plan(job, rubric=rubric, settings=settings, count_tokens=ns.count_tokens, **figures)
    return show_plan(ns, result, settings, deadline)
