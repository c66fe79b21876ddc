"""A run's side of its job's plan: the job with where its messages are until the checkpoint keeps them
(`run_job_of`), and what the run records in the checkpoint for `status` and `summary` before it sends
(its items' metadata, the estimate) and what one more request is expected to cost (`expect_now`).
The dry run's side, which reads no checkpoint, is `adapters.run.planning`."""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.reads import learned_from_store
from adapters.checkpoint.store import Store
from adapters.files.checkpointed import load_input
from adapters.files.items_io import load_design_input
from adapters.files.messages import JobInput, MessageSource, joined_digests, split_messages
from adapters.run.planning import checked_plan, items_of, plan_of
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan
from judgecore.decide.routing import Route
from judgecore.decide.spend import Expect
from judgecore.job.items import Item, RoutePath


def run_job_of(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
) -> tuple[JobPlan, MessageSource]:
    """`job_of` for a run: the plan holds no messages, and the source says where they are until the
    run hands them to its checkpoint (`adapters.files.checkpointed.hand_to_checkpoint`)."""

    design = settings.design
    if isinstance(items, str | os.PathLike):  # a path: its messages read again, never held
        # the custom_ids derived once, with the job's key (as the CLI does), not once more in `items_of`
        path, job = Path(items), ids_job_for(state_dir, settings.manifest(rubric))
        single = design.single and design.template is None
        items = load_input(path, job=job) if single else load_design_input(path, design, job=job)
    if isinstance(items, JobInput):
        cols, source = items.items, items.messages
        if cols.digests is None and not cols.holds_messages:  # the source's digests, lent for the ids
            lent = attrs.evolve(cols, digests=joined_digests(source, cols))
            cols = attrs.evolve(items_of(lent, rubric, settings, state_dir, ids_job_for), digests=None)
        else:
            cols = items_of(cols, rubric, settings, state_dir, ids_job_for)
    else:
        cols = items_of(items, rubric, settings, state_dir, ids_job_for)
        if not cols.holds_messages:
            raise UsageError(
                "the items do not hold their messages (loaded with hold_messages=False): "
                "load the input with adapters.files.checkpointed.load_input to run it"
            )
        split = split_messages(cols)
        cols, source = split.items, split.messages
    return checked_plan(cols, rubric=rubric, settings=settings), source


def record_for_summary(store: Store, job: JobPlan, settings: JobSettings) -> None:
    """What `judgecore summary` needs from the checkpoint alone: each item's metadata and the verdict
    spec of this run (a pattern may change between runs; the latest is what `summary` applies)."""
    meta = job.items.metadata_json
    store.record_metadata(
        zip(job.items.custom_ids, meta, strict=True), any_given=meta.count(None) != len(meta)
    )
    store.verdict = settings.verdict.to_json() if settings.verdict is not None else None
    design = settings.design
    if not design.single:  # what `summary` needs to fold the checkpoint's requests into items
        store.design = design


def record_estimate(
    store: Store, job: JobPlan, chosen: Route, rubric: str | None, settings: JobSettings
) -> None:
    """Keep the estimate of the whole job on its route, for `status` and `summary` to show beside what
    was spent: the dry run's on a fresh job, learned from the checkpoint's answers on a rerun."""

    p = plan_of(job, job.requests, chosen, rubric, settings, learned=learned_from_store(store))
    store.estimate = {"estimated_cost_usd": p.estimated_cost_usd, "all_sync_cost_usd": p.all_sync_cost_usd}


def expect_now(store: Store, job: JobPlan, settings: JobSettings, path: RoutePath) -> Expect | None:
    """What one more request of the job is expected to cost on `path`, for a budget's last line: the
    plan of the whole job as the checkpoint's answers teach it, weighted by how many there are (each
    answer of the run then adds its real cost). None without a budget."""
    if settings.budget is None or not len(job.requests):
        return None

    learned = learned_from_store(store)
    route = Route(
        path=path, n=len(job.requests), threshold=0, otpm=0, otpm_source="assumed", forced=True, reason=""
    )
    p = plan_of(
        job, job.requests, route, None, attrs.evolve(settings, budget=None), learned=learned, chunked=False
    )
    per = p.per_request_usd
    return None if per is None else Expect(per_request=per, weight=learned.answers)
