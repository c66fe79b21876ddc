"""The sync path: send a job's requests through the Messages API, fast and polite at once.

Order of events in `run_sync`:
1. Skip every custom_id already final in the checkpoint (a rerun resends only the rest).
2. Warm the prompt cache: the first request goes alone and is answered (or given up) before any other
   leaves, so the rest read the rubric from the cache it wrote.
3. Fan out with at most `Concurrency.limit` requests in flight, each admitted by the `Pacer` (the org's
   rate limits as seen in the `anthropic-ratelimit-*` headers); a 429 halves concurrency and blocks
   sends until its retry-after, a 5xx does not touch either.
4. Classify every answer (`judgecore.classify`): succeeded / miss / quarantined are final and recorded
   durably the moment they arrive; RATE_LIMIT waits retry-after plus jitter; INFRA_TRANSIENT and NOT_RUN
   back off with full jitter; FATAL_CONFIG stops the run at once (in-flight requests are cancelled,
   everything already answered is on disk). Budgets per item per run: `max_attempts` sends that end in
   a non-429 failure, plus `max_rate_limited` 429s; past either the item stays `pending` for a rerun.
5. The breaker: when the first outcomes of the run are all INVALID_REQUEST, the job itself is broken;
   those quarantines are held back (not recorded) until the breaker has decided, so a tripped run
   leaves nothing final behind and a fixed rerun sends them again.

All decisions (classification, backoff, pacing, concurrency, breaker) are pure functions of
`judgecore`; this module only sequences them, sends, sleeps and records.
"""

from __future__ import annotations

import asyncio
import collections
import heapq
import math
import random
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from adapters.clock import Clock
from adapters.events import Emit, Notice, SyncProgress
from adapters.store import OutcomeRow, Store
from adapters.sync_api import Answer, MessagesApi
from judgecore import (
    BackoffPolicy,
    FailureClass,
    Outcome,
    Request,
    RequestTemplate,
    Status,
    backoff,
    breaker_tripped,
    classify,
)
from judgecore.breaker import BreakerPolicy
from judgecore.ratelimit import (
    NOTHING,
    Concurrency,
    Cost,
    Pacer,
    PacingPolicy,
    RateLimitReading,
    concurrency_for,
)

# --- settings ---------------------------------------------------------------------------------------

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


def _positive_or_none(_inst: object, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not value > 0:
        raise ValueError(f"{attribute.name} must be > 0, got {value}")


def _at_least_one(_inst: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


@attrs.frozen(kw_only=True)
class SyncSettings:
    """Knobs of the sync path; each has a default, and all but `max_attempts` a JUDGECORE_* override."""

    #: Requests in flight at most; None = from the tier (`judgecore.ratelimit.concurrency_for`).
    concurrency: int | None = attrs.field(default=None, validator=_positive_or_none)
    #: Sends per item per run that may end in a non-429 retriable failure before it is left pending.
    max_attempts: int = attrs.field(default=3, validator=_at_least_one)
    #: 429s per item per run before it is left pending (on top of `max_attempts`).
    max_rate_limited: int = attrs.field(default=10, validator=_at_least_one)
    backoff_base: float = 1.0
    backoff_cap: float = 60.0
    #: Share of each per-minute limit the job aims at; the rest is left to other sessions of the org.
    pacing_headroom: float = 0.95
    #: Seconds of the paced rate a burst may spend at once.
    pacing_burst: float = 2.0
    #: Per-phase HTTP timeout of one request in seconds; None = the SDK's (600 s read, 5 s connect).
    request_timeout: float | None = attrs.field(default=None, validator=_positive_or_none)
    #: Clock seconds between two `SyncProgress` events.
    progress_interval: float = 0.5

    def __attrs_post_init__(self) -> None:
        self.backoff  # noqa: B018 - validates base/cap
        self.pacing  # noqa: B018 - validates headroom/burst

    @property
    def backoff(self) -> BackoffPolicy:
        return BackoffPolicy(base=self.backoff_base, cap=self.backoff_cap)

    @property
    def pacing(self) -> PacingPolicy:
        return PacingPolicy(headroom=self.pacing_headroom, burst_seconds=self.pacing_burst)

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


# --- results ----------------------------------------------------------------------------------------


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

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached rubric tokens read / (read + written); None when nothing was cacheable."""
        seen = self.cache_read_input_tokens + self.cache_creation_input_tokens
        return None if seen == 0 else self.cache_read_input_tokens / seen

    @property
    def rate_limited_share(self) -> float:
        return 0.0 if self.sends == 0 else self.rate_limited / self.sends


# --- probe ------------------------------------------------------------------------------------------


async def probe(
    *, api: MessagesApi, request: Request, template: RequestTemplate, clock: Clock
) -> tuple[Outcome, RateLimitReading]:
    """Send one request alone and read the tier from its rate-limit headers.

    The outcome is that item's answer (record it: a final one is never sent again). One send, no retry:
    a retriable outcome leaves the item for `run_sync`; the reading of a refused request still counts.
    """
    del clock  # one send, no wait: the signature keeps the clock for symmetry with run_sync
    raw, reading, _ = await api.create(request.params(template))
    return classify(raw), reading


def record_reading(store: Store, reading: RateLimitReading, *, key: str = "rate_limits") -> None:
    """Keep a reading in the checkpoint (for `status` and later dry-runs)."""
    store.set_meta(key, reading.to_json())


#: The shortest pacing sleep (seconds); epoch floats near 1.8e9 resolve about 0.2 microseconds.
_MIN_SLEEP = 0.001

# --- the run ----------------------------------------------------------------------------------------


@attrs.define(eq=False)
class _Item:
    request: Request
    seq: int
    sends: int = 0
    failures: int = 0  # non-429 retriable outcomes this run
    rate_limited: int = 0  # 429s this run
    done: bool = False
    last: Outcome | None = None


@attrs.define(eq=False)
class _Runner:
    store: Store
    template: RequestTemplate
    api: MessagesApi
    clock: Clock
    settings: SyncSettings
    emit: Emit
    rng: random.Random
    pacer: Pacer
    conc: Concurrency
    total: int
    job_total: int
    skipped: int
    started: float
    ready: collections.deque[_Item] = attrs.field(factory=collections.deque)
    delayed: list[tuple[float, int, _Item]] = attrs.field(factory=list)
    in_flight: dict[asyncio.Task[Answer], tuple[_Item, Cost]] = attrs.field(factory=dict)
    fatal: str | None = None
    tally: collections.Counter[str] = attrs.field(factory=collections.Counter)
    # The breaker: failure classes of the first final outcomes, and quarantines held back meanwhile.
    breaker: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    first_failures: list[FailureClass | None] = attrs.field(factory=list)
    breaker_open: bool = True  # still deciding
    held: list[OutcomeRow] = attrs.field(factory=list)
    last_progress: float = -math.inf

    # -- recording -------------------------------------------------------------------------------

    def _write(self, rows: Sequence[OutcomeRow]) -> None:
        self.store.record_outcomes(rows)
        for row in rows:
            self.tally[str(row.outcome.status) if row.outcome.final else "pending"] += 1

    def _record(self, item: _Item, outcome: Outcome) -> None:
        """Durably record an item's outcome for this run (final, or the last retriable one)."""
        row = OutcomeRow(
            custom_id=item.request.custom_id,
            outcome=outcome,
            route="sync",
            at=self.clock.now(),
            attempts=item.sends,
        )
        if self.breaker_open:
            self.first_failures.append(outcome.failure)
            if breaker_tripped(self.first_failures, total=self.job_total, policy=self.breaker):
                first = self.held[0].outcome if self.held else outcome
                self.fatal = (
                    f"the first {len(self.first_failures)} requests were all rejected as invalid; "
                    f"the job's configuration is broken: {first.error_message or first.reason}"
                )
                self.held.clear()
                return
            if outcome.failure is FailureClass.INVALID_REQUEST:
                self.held.append(row)
                return
            self.breaker_open = False
            rows, self.held = [*self.held, row], []
            self._write(rows)
            return
        self._write([row])

    def _release_held(self) -> None:
        """The run ends with the breaker undecided (fewer outcomes than it needs): keep the quarantines."""
        if self.held and self.fatal is None:
            self._write(self.held)
        self.held = []

    # -- progress --------------------------------------------------------------------------------

    def _progress(self, *, force: bool = False) -> None:
        now = self.clock.now()
        if not force and now - self.last_progress < self.settings.progress_interval:
            return
        self.last_progress = now
        t = self.tally
        self.emit(
            SyncProgress(
                done=t["succeeded"] + t["miss"] + t["quarantined"] + t["pending"],
                total=self.total,
                retries=t["retries"],
                rate_limited=t["rate_limited"],
                in_flight=len(self.in_flight),
                concurrency=self.conc.limit,
                output_tokens=t["output_tokens"],
                elapsed=now - self.started,
                succeeded=t["succeeded"],
                pending=t["pending"],
                earlier=self.skipped,
            )
        )

    # -- sending ---------------------------------------------------------------------------------

    def _promote(self, now: float) -> None:
        """Retries whose wait is over go to the front of the line, oldest item first."""
        due: list[_Item] = []
        while self.delayed and self.delayed[0][0] <= now:
            due.append(heapq.heappop(self.delayed)[2])
        for item in sorted(due, key=lambda i: i.seq, reverse=True):
            self.ready.appendleft(item)

    def _launch(self, item: _Item, now: float) -> None:
        cost = self.pacer.estimate(item.request.max_tokens)
        self.pacer = self.pacer.admit(now, cost)
        if item.sends:
            self.tally["retries"] += 1
        item.sends += 1
        self.tally["sends"] += 1
        task = asyncio.ensure_future(self.api.create(item.request.params(self.template)))
        self.in_flight[task] = (item, cost)

    def _in_flight_cost(self) -> Cost:
        total = NOTHING
        for _, cost in self.in_flight.values():
            total = total + cost
        return total

    async def _wait(self, wake: float | None) -> None:
        """Until an in-flight request is answered or the clock reaches `wake`."""
        waiters: set[asyncio.Future[Any]] = set(self.in_flight)
        sleeper = None
        if wake is not None:
            sleeper = asyncio.ensure_future(self.clock.sleep(max(0.0, wake - self.clock.now())))
            waiters.add(sleeper)
        if not waiters:
            return
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if sleeper is not None and not sleeper.done():
                sleeper.cancel()

    async def pump(self) -> None:
        """Send, wait and handle answers until every queued item is done, or the run is fatal."""
        while self.fatal is None:
            if not (self.ready or self.delayed or self.in_flight):
                return
            now = self.clock.now()
            self._promote(now)
            wake: float | None = None
            if self.ready and len(self.in_flight) < self.conc.limit:
                item = self.ready[0]
                wait = self.pacer.wait(now, self.pacer.estimate(item.request.max_tokens))
                if wait <= 0:
                    self.ready.popleft()
                    self._launch(item, now)
                    continue
                # At least 1 ms: a wait below the clock's resolution would spin without time moving.
                wake = now + max(wait, _MIN_SLEEP)
            if self.delayed:
                wake = self.delayed[0][0] if wake is None else min(wake, self.delayed[0][0])
            self._progress()
            await self._wait(wake)
            for task in [t for t in self.in_flight if t.done()]:
                item, cost = self.in_flight.pop(task)
                self._handle(item, cost, task.result())
                if self.fatal is not None:
                    return

    def _handle(self, item: _Item, cost: Cost, answer: Answer) -> None:
        raw, reading, _request_id = answer
        now = self.clock.now()
        outcome = classify(raw)
        item.last = outcome
        usage = outcome.usage if outcome.status in (Status.SUCCEEDED, Status.MISS) else None
        self.pacer = self.pacer.settle(now, cost, usage)
        self.pacer = self.pacer.observe(now, reading, in_flight=self._in_flight_cost())
        if usage is not None:
            self.tally["input_tokens"] += usage.input_tokens
            self.tally["output_tokens"] += usage.output_tokens
            self.tally["cache_creation"] += usage.cache_creation_input_tokens
            self.tally["cache_read"] += usage.cache_read_input_tokens
        match outcome.status:
            case Status.SUCCEEDED | Status.MISS | Status.QUARANTINED:
                self.conc = self.conc.on_success()
                item.done = True
                self._record(item, outcome)
            case Status.FATAL:
                item.done = True
                self.fatal = f"{outcome.reason}: {outcome.error_message or 'no message'}".replace("\n", " ")
            case Status.RETRY:
                self._retry(item, outcome, now, reading)
        self._progress()

    def _retry(self, item: _Item, outcome: Outcome, now: float, reading: RateLimitReading) -> None:
        s = self.settings
        if outcome.failure is FailureClass.RATE_LIMIT:
            self.tally["rate_limited"] += 1
            item.rate_limited += 1
            before = self.conc.limit
            self.conc = self.conc.on_429(now)
            self.pacer = self.pacer.on_429(now, outcome.retry_after, reading)
            if self.conc.limit < before:
                self.emit(
                    Notice(level="info", message=f"rate limited: concurrency {before} -> {self.conc.limit}")
                )
            exhausted = item.rate_limited >= s.max_rate_limited
            attempt = item.rate_limited - 1
        else:
            item.failures += 1
            exhausted = item.failures >= s.max_attempts
            attempt = item.failures - 1
        if exhausted:
            item.done = True
            self.emit(
                Notice(
                    level="warning",
                    message=f"{item.request.item_id}: still failing after {item.sends} sends "
                    f"({outcome.reason}); left pending, rerun to resume",
                )
            )
            self._record(item, outcome)
            return
        delay = backoff(attempt, outcome.retry_after, s.backoff, self.rng.random())
        if delay >= 30:
            self.emit(
                Notice(
                    level="info",
                    message=f"{item.request.item_id}: {outcome.reason}; resending in {delay:.0f} s",
                )
            )
        heapq.heappush(self.delayed, (now + delay, item.seq, item))

    async def cancel_in_flight(self) -> None:
        tasks = list(self.in_flight)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
        self.in_flight.clear()

    def result(self) -> SyncRunResult:
        t = self.tally
        finals = t["succeeded"] + t["miss"] + t["quarantined"]
        return SyncRunResult(
            fatal=self.fatal,
            total=self.total,
            skipped=self.skipped,
            succeeded=t["succeeded"],
            miss=t["miss"],
            quarantined=t["quarantined"],
            pending=self.total - finals,
            sends=t["sends"],
            retries=t["retries"],
            rate_limited=t["rate_limited"],
            input_tokens=t["input_tokens"],
            output_tokens=t["output_tokens"],
            cache_creation_input_tokens=t["cache_creation"],
            cache_read_input_tokens=t["cache_read"],
            concurrency=self.conc.limit,
            elapsed=self.clock.now() - self.started,
        )


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
) -> SyncRunResult:
    """Send every request not yet final in `store` (already bound to the job); see the module docstring.

    `reading` is the tier as last read (the probe's, or `RateLimitReading.for_otpm(n)` for `--otpm`);
    None starts unpaced until the first answer's headers arrive. `warm_up=False` skips the lone first
    request (only when the rubric cache was just written, e.g. by a successful probe).
    """
    started = clock.now()
    final = store.job_state().final
    todo: list[Request] = []
    seen: set[str] = set()
    for r in requests:
        if r.custom_id not in final and r.custom_id not in seen:
            seen.add(r.custom_id)
            todo.append(r)
    ceiling = settings.concurrency or concurrency_for(reading)
    runner = _Runner(
        store=store,
        template=template,
        api=api,
        clock=clock,
        settings=settings,
        emit=emit,
        rng=rng,
        pacer=Pacer.start(reading, started, settings.pacing),
        conc=Concurrency.start(ceiling),
        total=len(todo),
        job_total=len({r.custom_id for r in requests}),
        skipped=len(requests) - len(todo),
        started=started,
    )
    # The breaker judges the job's first outcomes, earlier runs (and the probe) included.
    prior = [None if f is None else FailureClass(f) for f in store.first_failures(runner.breaker.k)]
    runner.first_failures = prior
    runner.breaker_open = all(f is FailureClass.INVALID_REQUEST for f in prior)
    items = [_Item(r, n) for n, r in enumerate(todo)]
    try:
        if warm_up and template.system_json is not None and items:
            # The cache warm-up: the first item alone, answered (or given up) before any other leaves.
            runner.ready.append(items.pop(0))
            await runner.pump()
        runner.ready.extend(items)
        await runner.pump()
    finally:
        await runner.cancel_in_flight()
        runner._release_held()
    runner._progress(force=True)
    if runner.fatal is not None:
        emit(Notice(level="warning", message=f"stopped: {runner.fatal}"))
    return runner.result()
