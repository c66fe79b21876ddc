"""The dry run's plan: what a run would do, asked of the same job machine (`JobRun.dry_run`), from what
the job's checkpoint holds (given: `adapters.run.dryrun.kept_figures` reads it), with nothing sent,
nothing written and no event loop. This module reads no checkpoint: a dry run of a new job imports
neither the store nor SQLite."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.providers.anthropic.count_tokens import count_prompt
from adapters.run.lanes import lane_counts, lanes, route_lanes_of
from adapters.run.planning import plan_of
from adapters.run.policy import job_policy
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import EXIT_OK
from judgecore.decide.planning import JobPlan, Learned
from judgecore.job.items import Items
from judgecore.run.job._machine import History, JobRun


def conflict_message(exc: Exception, items: Items, where: str | None) -> str:
    """A changed item's error, led by where its line is (`FILE:LINE`, or `line N` for rows given to
    the Python API) when the first id it names is one of `items`."""
    ids = getattr(exc, "item_ids", ())
    first = ids[0] if ids else None
    k = next((k for k, i in enumerate(items.ids) if i == first), None)
    if k is None:
        return str(exc)
    line = items.lines[k]
    return f"{where}:{line}: {exc}" if where else f"line {line}: {exc}"


def machine_of(
    job: JobPlan, history: History, settings: JobSettings, *, all_sync: str | None = None
) -> JobRun:
    """The job's machine, started from what its checkpoint holds (`history`) under the settings' policy:
    the run's and the dry run's alike. `all_sync`: why this run alone goes on the sync route. A panel
    across providers gives the machine its lanes, each routed by its own count (`route_lanes_of`)."""
    models = settings.models
    by_lane = (
        route_lanes_of(
            models,
            lane_counts(job.requests, settings.request_model),
            settings.request_model,
            threshold=settings.sync_threshold,
        )
        if len(lanes(models)) > 1  # a job of one lane is routed by its whole count, its lanes not counted
        else ()
    )
    return JobRun.start(
        job.requests.custom_ids, history, job_policy(settings, all_sync=all_sync, lanes=by_lane)
    )


def dry_run_plan(
    job: JobPlan,
    *,
    rubric: str | None,
    settings: JobSettings,
    history: History | None = None,
    learned: Learned | None = None,
    spent: float = 0.0,
    count_tokens: bool = False,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeResult:
    """The plan of what the run would do, with nothing sent and nothing written: the job's machine,
    started from `history` (what its checkpoint holds; None: a new job's, empty), says the route and what
    is left (`JobRun.dry_run`): items final or live in a batch are counted, not sent. A route to decide
    takes its tier from `--otpm`, a reading from an earlier run, or the assumed 400,000 (a dry run
    never probes).

    The estimate learns from the checkpoint's answers (`learned`; None: none, with the job's `spent` so far); on a
    job with none, `count_tokens` asks the API to count one prompt of the job
    (`client.messages.count_tokens`: no message is sent, nothing is billed) and scales the input
    estimate by it.
    """
    learned = Learned() if learned is None else learned
    dry = machine_of(job, History() if history is None else history, settings).dry_run()
    left = job.requests if len(dry.left) == len(job.requests) else job.requests.only(dry.left)
    if count_tokens and not learned.answers and len(left):
        learned = count_prompt(job, left, dry.route.path, client=client, environ=environ)
    p = plan_of(
        job, left, dry.route, rubric, settings, final=dry.final, live=dry.live, learned=learned, spent=spent
    )
    return JudgeResult(exit_code=EXIT_OK, route=dry.route, counts={}, records={}, plan=p)
