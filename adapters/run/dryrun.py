"""The dry run: the plan of what a run would do, asked of the same job machine (`JobRun.dry_run`) on a
checkpoint opened read-only, with nothing sent and nothing written, and without an event loop; and
`plan_of`, the plan of sending a job's requests on a route, which a run keeps as its estimate too."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from adapters.checkpoint.reads import history_from_store, learned_from_store, spend_from_store
from adapters.checkpoint.store import ContentConflictError, StateMismatchError, Store
from adapters.checkpoint.store.schema import holds_checkpoint
from adapters.files.messages import JobInput
from adapters.providers.anthropic.count_tokens import count_prompt
from adapters.providers.registry import provider_of
from adapters.run.lanes import lane_counts, lanes, route_lanes_of
from adapters.run.planning import check_arguments, job_of, plan_of
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import EXIT_OK, UsageError
from judgecore.decide.planning import JobPlan, Learned
from judgecore.decide.routing import Lane
from judgecore.job.items import Item, Items
from judgecore.run.job._machine import History, JobPolicy, JobRun


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


def job_policy(
    settings: JobSettings, *, all_sync: str | None = None, lanes: tuple[Lane, ...] = ()
) -> JobPolicy:
    """The job machine's policy under `settings` (`lanes`: a panel across providers', `machine_of`)."""
    return JobPolicy(
        force=settings.force,
        otpm=settings.otpm,
        route_policy=settings.route_policy,
        all_sync=all_sync,
        lanes=lanes,
    )


def judge_dry_run(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    count_tokens: bool = False,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> JudgeResult:
    """What `judge(..., dry_run=True)` returns (the plan, nothing sent, nothing written), without an
    event loop: a dry run awaits nothing, so `judgecore run --dry-run` does not import asyncio.
    `count_tokens`: count one prompt's real input tokens with the API (`client`, a sync
    `anthropic.Anthropic`; None: built from the environment) to scale the estimate."""
    check_arguments(
        items, rubric=rubric, state_dir=state_dir, settings=settings, client=client, async_client=False
    )
    job = job_of(items, rubric=rubric, settings=settings, state_dir=Path(state_dir))
    return dry_run_of(
        job,
        rubric=rubric,
        settings=settings,
        state_dir=Path(state_dir),
        count_tokens=count_tokens,
        client=client,
        environ=environ,
        source=source,
    )


def dry_run_of(
    job: JobPlan,
    *,
    rubric: str | None,
    settings: JobSettings,
    state_dir: Path,
    count_tokens: bool = False,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
    source: str | None = None,
) -> JudgeResult:
    """The plan of what the run would do, with nothing sent and nothing written (`source`: the file
    the items were read from, named in an error about one of its lines).

    The estimate learns from the checkpoint's answers; on a job with none, `count_tokens` asks the
    API to count one prompt of the job (`client.messages.count_tokens`: no message is sent, nothing is
    billed) and scales the input estimate by it.

    On an existing state dir (opened read-only) it is checked as the run checks it (another job's
    manifest, an item changed under its id: exit 2), and the job's machine says the route and what
    is left (`JobRun.dry_run`): items final or live in a batch are counted, not sent. A route to
    decide takes its tier from `--otpm`, a reading from an earlier run, or the assumed 400,000 (a dry
    run never probes).
    """
    history = History()
    learned, spent = Learned(), 0.0
    if holds_checkpoint(state_dir):  # the checkpoint's package (and SQLite) only for one that exists
        store = Store.open_readonly(state_dir)
        try:
            store.check_job(settings.manifest(rubric), job.items.bindings(), ids_job=job.items.job)
            history = history_from_store(store, provider_of(settings.request_model).route_limit)
            learned, spent = learned_from_store(store), spend_from_store(store).spend_usd or 0.0
        except ContentConflictError as exc:
            raise UsageError(conflict_message(exc, job.items, source)) from None
        except StateMismatchError as exc:
            raise UsageError(str(exc)) from None
        finally:
            store.close()
    dry = machine_of(job, history, settings).dry_run()
    left = job.requests if len(dry.left) == len(job.requests) else job.requests.only(dry.left)
    if count_tokens and not learned.answers and len(left):
        learned = count_prompt(job, left, dry.route.path, client=client, environ=environ)
    p = plan_of(
        job, left, dry.route, rubric, settings, final=dry.final, live=dry.live, learned=learned, spent=spent
    )
    return JudgeResult(exit_code=EXIT_OK, route=dry.route, counts={}, records={}, plan=p)
