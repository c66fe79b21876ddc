"""The sync path's shell: an interpreter of the run machine (`judgecore.syncrun.SyncRun`).

It decides nothing. It asks the machine for the next action and performs it: `Launch` starts a task
sending that request, `Wait` sleeps until an answer comes back or the clock reaches the time given,
`Record` writes rows durably (fsynced) before anything else happens, `Note` prints a line, `Done` ends
the run (cancelling what is still in flight after a stop). Each answer goes back to the machine with
the clock's time and a jitter draw. The probe is the same run limited to one item.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Mapping, Sequence
from typing import Any, assert_never

import attrs

from adapters.clock import Clock
from adapters.events import Emit, Notice, SyncProgress, discard
from adapters.store import OutcomeRow, Store
from adapters.sync_api import Answer, MessagesApi
from judgecore import (
    BackoffPolicy,
    Breaker,
    BreakerPolicy,
    FailureClass,
    Outcome,
    Request,
    RequestTemplate,
    classify,
)
from judgecore.planning import ModelPrice
from judgecore.ratelimit import PacingPolicy, RateLimitReading, concurrency_for
from judgecore.spend import Budget, request_bound
from judgecore.syncrun import Answered, Done, Launch, Note, Record, SyncPolicy, SyncRun, Todo, Wait

#: Environment overrides read by `SyncSettings.from_env` (name -> field, kind). Listed in the README.
#: `max_attempts` has none: `--max-attempts` (default 3) is its one name, shared with the batch path.
ENV_VARS: Mapping[str, tuple[str, type]] = {
    "JUDGECORE_MAX_CONCURRENCY": ("concurrency", int),
    "JUDGECORE_MAX_RATE_LIMITED": ("max_rate_limited", int),
    "JUDGECORE_BACKOFF_BASE": ("backoff_base", float),
    "JUDGECORE_BACKOFF_CAP": ("backoff_cap", float),
    "JUDGECORE_PACING_HEADROOM": ("pacing_headroom", float),
    "JUDGECORE_PACING_BURST": ("pacing_burst", float),
    "JUDGECORE_REQUEST_TIMEOUT": ("request_timeout", float),
    "JUDGECORE_PROGRESS_INTERVAL": ("progress_interval", float),
}


@attrs.frozen(kw_only=True)
class SyncSettings:
    """Knobs of the sync path; each has a default, and all but `max_attempts` a JUDGECORE_* override.
    `concurrency` None means from the tier; `request_timeout` None means the SDK's (600 s read)."""

    concurrency: int | None = None
    max_attempts: int = 3
    max_rate_limited: int = 10
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    pacing_headroom: float = 0.95
    pacing_burst: float = 2.0
    request_timeout: float | None = None
    progress_interval: float = 0.5

    def __attrs_post_init__(self) -> None:
        if self.request_timeout is not None and not self.request_timeout > 0:
            raise ValueError(f"request_timeout must be > 0, got {self.request_timeout}")
        self.policy(None)  # validates every other knob

    def policy(self, reading: RateLimitReading | None, *, warm_up: bool = True) -> SyncPolicy:
        """The run machine's rules, the concurrency ceiling from the tier unless set."""
        return SyncPolicy(
            max_attempts=self.max_attempts,
            max_rate_limited=self.max_rate_limited,
            backoff=BackoffPolicy(base=self.backoff_base, cap=self.backoff_cap),
            pacing=PacingPolicy(headroom=self.pacing_headroom, burst_seconds=self.pacing_burst),
            concurrency=self.concurrency or concurrency_for(reading),
            warm_up=warm_up,
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: Any) -> SyncSettings:
        """Defaults, then JUDGECORE_* variables, then `overrides`; a bad value is a ValueError naming it."""
        values: dict[str, Any] = {}
        for name, (field, kind) in ENV_VARS.items():
            raw = environ.get(name)
            if raw is None or not raw.strip():
                continue
            try:
                values[field] = kind(raw.strip())
            except ValueError:
                raise ValueError(f"{name}={raw!r}: expected {kind.__name__}") from None
        values.update(overrides)
        try:
            return cls(**values)
        except ValueError as exc:
            raise ValueError(f"sync settings: {exc}") from None


@attrs.frozen(kw_only=True)
class SyncRunResult:
    """What one `run_sync` did. `fatal` is a one-line reason when the run stopped early (exit 4)."""

    fatal: str | None
    total: int
    skipped: int
    succeeded: int
    miss: int
    quarantined: int
    pending: int
    sends: int
    retries: int
    rate_limited: int
    input_tokens: int
    output_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    concurrency: int
    elapsed: float
    #: The run stopped launching to keep `--budget`; `spent_usd` is the budget's spend (seed included).
    budget_stopped: bool = False
    spent_usd: float = 0.0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached rubric tokens read / (read + written); None when nothing was cacheable."""
        seen = self.cache_read_input_tokens + self.cache_creation_input_tokens
        return None if seen == 0 else self.cache_read_input_tokens / seen


@attrs.frozen(kw_only=True)
class ProbeResult:
    """The probe's item as it last came back (None if nothing did), the tier it read, and a one-line
    reason when the run must stop (exit 4). Its rows are already recorded."""

    outcome: Outcome | None
    reading: RateLimitReading
    fatal: str | None


async def _interpret(
    run: SyncRun,
    *,
    requests: Mapping[str, Request],
    store: Store,
    template: RequestTemplate,
    api: MessagesApi,
    clock: Clock,
    emit: Emit,
    rng: random.Random,
    progress_interval: float,
) -> tuple[SyncRun, Done, Outcome | None, RateLimitReading]:
    started, shown = clock.now(), -float("inf")
    tasks: dict[asyncio.Future[Answer], str] = {}
    last: tuple[Outcome | None, RateLimitReading] = (None, RateLimitReading())

    def progress(force: bool = False) -> None:
        nonlocal shown
        if progress_interval < float("inf") and (force or clock.now() - shown >= progress_interval):
            shown, t = clock.now(), run.tally
            done, total = t.finals + t.left_pending, len(run.todos)
            emit(SyncProgress(done=done, total=total, retries=t.retries, rate_limited=t.rate_limited,
                              in_flight=len(tasks), concurrency=run.conc.limit,
                              output_tokens=t.output_tokens, elapsed=shown - started))  # fmt: skip

    try:
        while True:
            run, action = run.step(clock.now())
            match action:
                case Launch(todo=todo):
                    params = requests[todo.custom_id].params(template)
                    tasks[asyncio.ensure_future(api.create(params))] = todo.custom_id
                case Record(rows=rows):
                    now = clock.now()
                    store.record_outcomes(
                        OutcomeRow(custom_id=r.custom_id, outcome=r.outcome, route="sync", at=now, attempts=r.attempts)
                        for r in rows
                    )  # fmt: skip
                case Note(level=level, message=message):
                    emit(Notice(level=level, message=message))
                case Wait(until=until):
                    progress()
                    await _wait(tasks, until, clock)
                    for task in [t for t in tasks if t.done()]:
                        raw, reading, _request_id = task.result()
                        outcome = classify(raw)
                        last = (outcome, reading if not reading.empty else last[1])
                        answered = Answered(custom_id=tasks.pop(task), outcome=outcome, reading=reading,
                                            now=clock.now(), u=rng.random())  # fmt: skip
                        run = run.on(answered)
                case Done():
                    progress(
                        force=True
                    )  # a stop's reason is the caller's to print (it is the run's exit line)
                    return run, action, *last
                case _:
                    assert_never(action)
    finally:
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)


async def _wait(tasks: Mapping[asyncio.Future[Answer], str], until: float | None, clock: Clock) -> None:
    """Until a task is done or the clock reaches `until` (None: a task only)."""
    waiters: set[asyncio.Future[Any]] = set(tasks)
    sleeper = None if until is None else asyncio.ensure_future(clock.sleep(until - clock.now()))
    if sleeper is not None:
        waiters.add(sleeper)
    try:
        await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if sleeper is not None and not sleeper.done():
            sleeper.cancel()


def _todos(
    requests: Sequence[Request], template: RequestTemplate, price: ModelPrice | None
) -> tuple[Todo, ...]:
    cached = len(template.system_json or b"")
    return tuple(
        Todo(custom_id=r.custom_id, max_tokens=r.max_tokens,
             bound=0.0 if price is None else request_bound(request_bytes=r.size, cached_bytes=cached,
                                                           max_tokens=r.max_tokens, price=price, route="sync"))
        for r in requests
    )  # fmt: skip


def _breaker(store: Store, total: int) -> Breaker:
    """The job's breaker, seeded from the checkpoint's earliest outcomes (earlier runs, the probe)."""
    prior = [None if f is None else FailureClass(f) for f in store.first_failures(BreakerPolicy().k)]
    return Breaker.start(total, prior)


async def probe(
    *,
    store: Store,
    api: MessagesApi,
    request: Request,
    template: RequestTemplate,
    clock: Clock,
    settings: SyncSettings = SyncSettings(),
    emit: Emit = discard,
    rng: random.Random | None = None,
    budget: Budget | None = None,
    price: ModelPrice | None = None,
) -> ProbeResult:
    """The run's first launch: `request` alone, through the run machine (retry-after, backoff,
    `max_attempts`, fatal, the breaker and the budget apply), its rows recorded; returns its outcome
    and the tier read from its rate-limit headers."""
    run = SyncRun.start(
        _todos([request], template, price),
        policy=settings.policy(None, warm_up=False),
        now=clock.now(),
        breaker=_breaker(store, sum(store.counts().values())),
        budget=budget,
        price=price,
        record_held=False,
    )
    _run, done, outcome, reading = await _interpret(
        run, requests={request.custom_id: request}, store=store, template=template, api=api, clock=clock,
        emit=emit, rng=rng or random.Random(), progress_interval=float("inf"),
    )  # fmt: skip
    return ProbeResult(outcome=outcome, reading=reading, fatal=done.reason if _run.stopped else None)


async def run_sync(
    *,
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    api: MessagesApi,
    clock: Clock,
    settings: SyncSettings,
    emit: Emit,
    rng: random.Random,
    reading: RateLimitReading | None,
    warm_up: bool = True,
    budget: Budget | None = None,
    price: ModelPrice | None = None,
) -> SyncRunResult:
    """Send every request not yet final in `store` (already bound to the job) through the run machine.

    `reading` is the tier as last read (the probe's, or `RateLimitReading.for_otpm(n)` for `--otpm`);
    None starts unpaced until the first answer's headers arrive. `warm_up=False` skips the lone first
    request: only when the probe has just answered (it wrote the rubric cache, and the run has had an
    HTTP answer). `budget` (with the job's spend so far) and `price` keep a `--budget` cap.
    """
    started = clock.now()
    final = store.job_state().final
    todo = list({r.custom_id: r for r in requests if r.custom_id not in final}.values())
    run = SyncRun.start(
        _todos(todo, template, price),
        policy=settings.policy(reading, warm_up=warm_up and template.system_json is not None),
        now=started,
        breaker=_breaker(store, len({r.custom_id for r in requests})),
        reading=reading,
        budget=budget,
        price=price,
        contacted=not warm_up,
    )
    run, done, _outcome, _reading = await _interpret(
        run, requests={r.custom_id: r for r in todo}, store=store, template=template, api=api, clock=clock,
        emit=emit, rng=rng, progress_interval=settings.progress_interval,
    )  # fmt: skip
    t = run.tally
    return SyncRunResult(
        fatal=done.reason if run.stopped else None,
        total=len(todo),
        skipped=len(requests) - len(todo),
        succeeded=t.succeeded,
        miss=t.miss,
        quarantined=t.quarantined,
        pending=len(todo) - t.finals,
        sends=t.sends,
        retries=t.retries,
        rate_limited=t.rate_limited,
        input_tokens=t.input_tokens,
        output_tokens=t.output_tokens,
        cache_creation_input_tokens=t.cache_creation_input_tokens,
        cache_read_input_tokens=t.cache_read_input_tokens,
        concurrency=run.conc.limit,
        elapsed=clock.now() - started,
        budget_stopped=run.out_of_budget,
        spent_usd=run.budget.spent,
    )
