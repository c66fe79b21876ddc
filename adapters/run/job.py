"""A whole judge job: the Python API (`judge`, `ajudge`, `judge_dry_run`) and the interpreter of the
job's machine (`judgecore.run.job._machine.JobRun`).

The machine decides (the route kept or decided again, the probe, which ids go to which part, the
probe's spent send, the warm-up, the exit status); this module performs what it asks, in the order
the checkpoint's promises require: the job is bound before anything is sent, the probe's answer is
recorded as its item's result, a decided route is recorded before a part runs, and the output is
written from the checkpoint, atomically, in one streaming pass. A dry run asks the same machine
(`JobRun.dry_run`) on a store opened read-only, and stops where the run would first send
(`adapters.run.dryrun`).

The settings, the items' loading, the output, the dry run and the result live in `adapters.run.settings`,
`adapters.files.items_io`, `adapters.files.output`, `adapters.run.dryrun` and `adapters.run.result`.
"""

from __future__ import annotations

import asyncio
import gc
import os
import random
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, assert_never

import attrs

from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.reads import history_from_store, spend_from_store
from adapters.checkpoint.statelock import StateLockedError
from adapters.checkpoint.store import ContentConflictError, StateMismatchError, Store
from adapters.files.messages import JobInput, MessageSource
from adapters.files.output import write_output
from adapters.files.paths import kept_path, out_problem, output_problem, state_problem
from adapters.providers.registry import provider_of
from adapters.run.clock import Clock, RealClock
from adapters.run.deadline import all_sync_reason, start_tokens_each
from adapters.run.dryrun import dry_run_of
from adapters.run.dryrun_plan import conflict_message, machine_of
from adapters.run.events import Emit, Event, Notice, discard
from adapters.run.interpreter import Interpreter
from adapters.run.operations import Ports, close_owned, connect, probe_one
from adapters.run.panels import batch_part, sync_part
from adapters.run.planning import check_arguments, job_of
from adapters.run.planning_run import record_estimate, record_for_summary, run_job_of
from adapters.run.result import JudgeResult
from adapters.run.settings import Fatal, JobSettings
from adapters.run.sync_settings import sync_settings_for
from adapters.usage import (
    UsageError,
)
from judgecore.decide.planning import JobPlan
from judgecore.job.items import Item
from judgecore.job.when import When
from judgecore.run.job._machine import Done, Say
from judgecore.run.job._vocab import (
    Action,
    Connect,
    Estimate,
    Probe,
    RecordRoute,
    RunBatch,
    RunSync,
    WriteOutput,
    Wrote,
)
from judgecore.run.job._vocab import (
    Event as JobEvent,
)
from judgecore.run.vocab import Wait


async def ajudge(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    client: Any = None,
    out: Path | str | None = None,
    dry_run: bool = False,
    clock: Clock | None = None,
    progress: Emit | None = None,
    environ: Mapping[str, str] | None = None,
    keep_records: bool = True,
    invocation: Mapping[str, Any] | None = None,
) -> JudgeResult:
    """Run (or resume) a judge job; see `judge` for the arguments. `invocation`: how the CLI started
    it, kept in the checkpoint once the job is bound (`judgecore run --state DIR` alone resumes it)."""
    check_arguments(
        items,
        rubric=rubric,
        state_dir=state_dir,
        settings=settings,
        out=out,
        progress=progress,
        client=client,
    )
    state_dir = Path(state_dir)
    if dry_run:
        job = job_of(items, rubric=rubric, settings=settings, state_dir=state_dir, key_of=ids_job_for)
        return dry_run_of(job, rubric=rubric, settings=settings, state_dir=state_dir)

    job, messages = run_job_of(items, rubric=rubric, settings=settings, state_dir=state_dir)

    # The job's items and requests live as long as the run: kept out of every collection pass of the
    # run (which would walk them all again and again), and given back at the end.
    frozen_here = gc.get_freeze_count() == 0
    if frozen_here:
        gc.freeze()
    # The run is a task of its own, so that a `progress` callback that raises stops it the way a Ctrl-C
    # does (cancelled: the answers in flight are waited for and kept), not by unwinding it from inside
    # whichever step called the callback; its exception is then raised here. Cancelling this task (a
    # Ctrl-C, SIGTERM) cancels the run's, and waits for it to stop.
    guard = _Guarded(progress) if progress is not None else None
    run = asyncio.ensure_future(
        _run(
            job,
            messages,
            rubric=rubric,
            state_dir=state_dir,
            settings=settings,
            client=client,
            out=out,
            clock=clock,
            emit=guard if guard is not None else discard,
            environ=environ,
            keep_records=keep_records,
            invocation=invocation,
            reads=(Path(items),) if isinstance(items, str | os.PathLike) else (),
        )
    )
    if guard is not None:
        guard.run = run
    try:
        try:
            result = await run
        except asyncio.CancelledError:
            if guard is None or guard.error is None or _cancelled_here():
                raise
            raise guard.error from None
        if guard is not None and guard.error is not None:  # it failed on the run's last event
            raise guard.error
        return result
    finally:
        if frozen_here:
            gc.unfreeze()


async def _run(
    job: JobPlan,
    messages: MessageSource,
    *,
    rubric: str | None,
    state_dir: Path,
    settings: JobSettings,
    client: Any,
    out: Path | str | None,
    clock: Clock | None,
    emit: Emit,
    environ: Mapping[str, str] | None,
    keep_records: bool,
    invocation: Mapping[str, Any] | None = None,
    reads: tuple[Path, ...] = (),
) -> JudgeResult:
    """The run itself: bind the job, then perform what the job's machine asks until it is done.
    `reads`: the input file(s) the items were read from, which `out` must not overwrite."""

    clock = clock or RealClock()
    environ = os.environ if environ is None else environ
    if settings.deadline is not None:  # a duration counts from this run's start: resolved once, here
        settings = attrs.evolve(settings, deadline=When(at=settings.deadline.resolve(clock.now())))
    # kept for the result: with no `progress`, the caller would hear none of them; the settings' own
    # (a deprecated model) were printed on stderr when the job was planned
    warnings: list[str] = list(settings.warnings())
    try:  # every JUDGECORE_* knob in its range before the state dir is bound (nothing sent)
        sync_settings_for(settings, environ)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    emit = _keeping_warnings(emit, warnings)
    rng = random.Random(settings.seed)
    out_path = Path(out) if out is not None else None

    problem = state_problem(state_dir, create=True) or (
        (out_problem(out_path, inputs=reads, state=state_dir) or output_problem(out_path))
        if out_path is not None
        else None
    )
    if problem:
        raise UsageError(problem)
    try:
        store = Store.open(state_dir, exclusive="run")  # one run per state dir, until it closes
    except StateLockedError as exc:
        raise UsageError(str(exc)) from None
    try:
        try:
            # no name keeps the bindings' iterator: spent, it still refers to the digests the source
            # may hold (11.5 MB at 720,000 items), which the source drops at the hand-off
            store.bind_job(
                settings.manifest(rubric),
                job.items.bindings(messages.digests(job.items)),
                ids_job=job.items.job,
            )
        except ContentConflictError as exc:
            given = invocation.get("input") if invocation is not None else None
            where = str(kept_path(state_dir, given)) if given else None
            raise UsageError(conflict_message(exc, job.items, where)) from None
        except StateMismatchError as exc:
            raise UsageError(str(exc)) from None
        if invocation is not None:
            store.invocation = dict(invocation)
        # the last run's deadline, for `status` (None: this run has none)
        store.deadline = settings.deadline.at if settings.deadline is not None else None
        store.rubric = rubric  # the report quotes it in full (the manifest has its digest)
        record_for_summary(store, job, settings)
        history = history_from_store(store, provider_of(settings.request_model).route_limit)
        final = history.final
        # a new job has nothing final: its custom_ids are not walked (0.2 CPU s at 720,000 items)
        left = sum(1 for c in job.requests.custom_ids if c not in final) if final else len(job.requests)
        why = all_sync_reason(
            clock.now(),
            settings,
            left=left,
            otpm_read=history.otpm_read,
            reading=store.rate_limits,
            tokens_each=start_tokens_each(settings, job, rubric, store),
        )
        run = machine_of(job, history, settings, all_sync=why)
        ports: Ports | None = None
        written = None

        def perform(action: Action) -> Awaitable[JobEvent] | None:
            nonlocal ports, written
            match action:
                case Connect():
                    ports = connect(store, job, messages, settings, client, clock, emit, rng, environ)
                case Say(level=level, text=text):
                    emit(Notice(level=level, message=text))
                case RecordRoute(route=chosen):
                    store.route = chosen
                case Estimate(route=chosen):
                    record_estimate(store, job, chosen, rubric, settings)
                case Probe(custom_id=cid):
                    assert ports is not None
                    return probe_one(ports, cid)
                case RunBatch(ids=ids, switched=switched):
                    assert ports is not None
                    return batch_part(ports, ids, switched=switched)
                case RunSync():
                    assert ports is not None
                    return sync_part(ports, action)
                case WriteOutput(reuse=reuse):
                    v = settings.verdict
                    written = write_output(
                        store,
                        job.items,
                        out_path,
                        keep=keep_records,
                        verdict=v,
                        reuse=reuse,
                        design=settings.design,
                    )
                    return _answered(Wrote(pending=written.counts.get("pending", 0)))
                case Wait() | Done():  # pragma: no cover - the interpreter's
                    raise AssertionError(action)
                case _:  # pragma: no cover
                    assert_never(action)
            return None

        loop = Interpreter(run, clock, perform, inline=True)
        try:
            done = await loop.run()
        finally:
            if ports is not None:
                await close_owned(ports)
        run = loop.machine
        assert written is not None
        money = spend_from_store(store)
        return JudgeResult(
            exit_code=int(done.exit_status),
            route=run.route,
            counts=written.counts,
            records=written.records,
            fatal=Fatal(done.reason) if done.reason is not None else None,
            stuck_batches=run.stuck,
            rerun_budget=run.rerun_budget,
            output_path=out_path,
            cache_hit_rate=run.cache_hit_rate,
            spend_usd=money.spend_usd,
            all_sync_usd=money.all_sync_usd,
            estimate_usd=money.estimate_usd,
            unparsed=written.unparsed,
            warnings=tuple(warnings),
        )
    finally:
        store.close()


async def _answered(event: Wrote) -> Wrote:
    """An operation performed at once (the output is written where it is handed out), as an awaitable."""
    return event


class _Guarded:
    """The caller's `progress` callback, called with each event until it raises: its exception is kept
    and the run's task cancelled (`ajudge` raises it once the run has stopped); it hears no more."""

    def __init__(self, progress: Emit) -> None:
        self.progress = progress
        self.error: Exception | None = None
        self.run: asyncio.Future[JudgeResult] | None = None

    def __call__(self, event: Event) -> None:
        if self.error is not None:
            return
        try:
            self.progress(event)
        except Exception as exc:
            self.error = exc
            if self.run is not None:
                self.run.cancel()


def _cancelled_here() -> bool:
    """The task running `ajudge` was itself cancelled (a Ctrl-C, SIGTERM), not only the run's."""

    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _keeping_warnings(emit: Emit, warnings: list[str]) -> Emit:
    """`emit`, keeping the message of each warning `Notice` in `warnings` as it passes."""

    def keeping(event: Event) -> None:
        if isinstance(event, Notice) and event.level == "warning":
            warnings.append(event.message)
        emit(event)

    return keeping


def judge(
    items: Sequence[Item] | Iterable[Mapping[str, Any]] | JobInput,
    *,
    rubric: str | None,
    state_dir: Path | str,
    settings: JobSettings = JobSettings(),
    client: Any = None,
    out: Path | str | None = None,
    dry_run: bool = False,
    clock: Clock | None = None,
    progress: Emit | None = None,
    environ: Mapping[str, str] | None = None,
) -> JudgeResult:
    """Judge `items` (objects shaped like input lines: `{"id", "prompt" | "messages", ...}`).

    Runs the whole job, or resumes it from `state_dir`, and returns a `JudgeResult` whose `records`
    map each item id to its output object. `client` is an `anthropic.AsyncAnthropic` (built from
    the environment when None); `out`, when given, also writes the output JSONL atomically.
    `progress` receives the run's events (`adapters.run.events`) as they happen, e.g. `print` or
    `adapters.run.progress.PlainProgress()` (None: they are dropped).
    Raises `UsageError` on bad input or a state dir of another job, before anything is sent; inside
    a running event loop (a notebook, an async app), use `await ajudge(...)` instead.
    """

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop running: judge() starts its own
    else:
        raise UsageError("judge() was called inside a running event loop; use `await ajudge(...)` there")
    return asyncio.run(
        ajudge(
            items,
            rubric=rubric,
            state_dir=state_dir,
            settings=settings,
            client=client,
            out=out,
            dry_run=dry_run,
            clock=clock,
            progress=progress,
            environ=environ,
        )
    )


__all__ = ["ajudge", "judge"]
