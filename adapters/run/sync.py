"""The sync path's shell: an interpreter of the run machine (`judgecore.run.sync.SyncRun`), through the
one interpreter loop (`adapters.run.interpreter`).

It decides nothing. It asks the machine what to do (`advance`) and performs it: `Launch` starts a task
sending that request, `Wait` sleeps until an answer comes back or the clock reaches the time given,
`Record` writes rows durably (fsynced) before anything else happens, `Say` prints a line, `Done` ends
the run (cancelling what is still in flight after a stop). An interrupt (Ctrl-C, SIGTERM: the run's
task cancelled) launches nothing more and waits up to `DRAIN_SECONDS` for the answers in flight,
recording each as it comes back: they were sent, so they are billed. Each answer goes back to the machine with
the clock's time and a jitter draw. The probe is the same run limited to one item.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Collection, Mapping, Sequence
from typing import Any, assert_never

import attrs

from adapters.checkpoint.store import OutcomeRow, Store
from adapters.providers.port import MessagesApi
from adapters.run.clock import Clock
from adapters.run.events import Emit, Notice, SyncProgress, discard
from adapters.run.interpreter import Interpreter, first_done
from adapters.run.sync_settings import SyncSettings
from judgecore.decide.breaker import Breaker, BreakerPolicy
from judgecore.decide.planning import ModelPrice
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.spend import Budget, Expect, request_bound
from judgecore.results.outcomes import FailureClass, Outcome, classify
from judgecore.results.status import Status
from judgecore.run.sync import Action, Answered, Done, Launch, Record, Row, Say, SyncRun, Todo, Wait
from judgecore.values import frozen
from judgecore.wire.requests import Request, RequestTemplate

#: How long an interrupted sync run waits for the answers in flight (sent, so billed) to record them.
DRAIN_SECONDS = 20.0


@frozen(kw_only=True)
class SyncRunResult:
    """What one `run_sync` did: this run's `Tally` and how it ended. `fatal` is a one-line reason when
    it stopped early (exit 4); `budget_stopped` when it stopped launching to keep the budget, whose
    spend (earlier runs included) is `spent_usd`."""

    fatal: str | None
    total: int
    skipped: int
    pending: int
    concurrency: int
    elapsed: float
    budget_stopped: bool = False
    #: the `--budget` a rerun needs to send what the cap left pending (None: the cap did not stop it)
    rerun_budget: float | None = None
    spent_usd: float = 0.0
    sends: int = 0
    retries: int = 0
    rate_limited: int = 0
    succeeded: int = 0
    miss: int = 0
    quarantined: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Cached rubric tokens read / (read + written); None when nothing was cacheable."""
        seen = self.cache_read_input_tokens + self.cache_creation_input_tokens
        return None if seen == 0 else self.cache_read_input_tokens / seen


@frozen(kw_only=True)
class ProbeResult:
    """The probe's item as it last came back (None if nothing did), the tier it read, and a one-line
    reason when the run must stop (exit 4). Its rows are already recorded."""

    outcome: Outcome | None
    reading: RateLimitReading
    fatal: str | None


@attrs.define
class _Shell:
    """What the interpreter performs the machine's actions with."""

    store: Store
    requests: Mapping[str, Request]
    template: RequestTemplate
    api: MessagesApi
    clock: Clock
    emit: Emit
    rng: random.Random
    progress_interval: float = float("inf")
    earlier: int = 0  # the job's items an earlier run made final
    probed: Status | None = None  # the final status this run's probe gave its item (counted as this run's)
    shown: float = -float("inf")

    def record(self, rows: Sequence[Row]) -> None:
        at = self.clock.now()
        self.store.record_outcomes(
            OutcomeRow(custom_id=r.custom_id, outcome=r.outcome, route="sync", at=at, attempts=r.attempts)
            for r in rows
        )

    def progress(self, run: SyncRun, in_flight: int, started: float, *, force: bool = False) -> None:
        now = self.clock.now()
        if self.progress_interval == float("inf") or not (
            force or now - self.shown >= self.progress_interval
        ):
            return
        self.shown, t = now, run.tally
        probed = self.probed is not None
        self.emit(
            SyncProgress(
                done=t.finals + t.left_pending + probed,
                total=len(run.todos) + probed,
                retries=t.retries,
                rate_limited=t.rate_limited,
                in_flight=in_flight,
                concurrency=run.limit,
                output_tokens=t.output_tokens,
                elapsed=now - started,
                succeeded=t.succeeded + (self.probed is Status.SUCCEEDED),
                pending=t.left_pending,
                earlier=self.earlier,
                probed=probed,
            )
        )

    async def _send(self, custom_id: str, params: dict[str, Any]) -> Answered:
        """One request in flight; its answer, with the clock's time and a jitter draw."""
        raw, reading, _request_id = await self.api.create(params)
        clock = self.clock
        return Answered(
            custom_id=custom_id, outcome=classify(raw), reading=reading, now=clock.now(), u=self.rng.random()
        )

    def _took(self, run: SyncRun) -> SyncRun:
        """Right after the machine took an answer, in the task that received it: what that put in the
        outbox (its rows, a note) is performed at once, before anything else runs: the window between
        a delivered answer and its commit is one commit."""
        run, effects = run.effects()
        for effect in effects:
            self._effect(effect)
        return run

    def _effect(self, action: Record | Say) -> None:
        """Write the rows durably, or print the line."""
        match action:
            case Record(rows=rows):
                self.record(rows)
            case Say(level=level, text=message):
                self.emit(Notice(level=level, message=message))

    def _perform(self, action: Action) -> Awaitable[Answered] | None:
        match action:
            case Launch(todo=todo):
                cid = todo.custom_id  # its messages read back from the checkpoint as it goes
                (messages,) = self.store.messages_of([cid])
                return self._send(cid, self.requests[cid].params(self.template, messages))
            case Record() | Say():
                self._effect(action)
                return None
            case Wait() | Done():  # pragma: no cover - the interpreter's
                raise AssertionError(action)
            case _:
                assert_never(action)

    async def _drain(self, pending: Collection[asyncio.Future[Any]]) -> None:
        """Interrupted: what is in flight was sent, and is billed whether or not its answer is read:
        its answers are waited for (a while) and recorded, so a rerun does not pay for them again."""
        clock = self.clock
        self.emit(
            Notice(
                level="warning",
                message=f"interrupted: waiting up to {DRAIN_SECONDS:.0f} s for the "
                f"{len(pending):,} {'answer' if len(pending) == 1 else 'answers'} in flight, so "
                "a rerun does not pay for them again (interrupt again to drop them)",
            )
        )
        deadline = clock.now() + DRAIN_SECONDS
        while (pending := {t for t in pending if not t.done()}) and clock.now() < deadline:
            await first_done(pending, deadline, clock)

    async def interpret(self, run: SyncRun) -> tuple[SyncRun, Done]:
        """Perform the machine's actions until it is done (the one interpreter loop,
        `adapters.run.interpreter`); cancel what is in flight on the way out (after an interrupt, once
        its answers are recorded or `DRAIN_SECONDS` have passed).

        An answer is taken by the machine, and the rows it makes are committed, in the task that
        received it, as soon as the SDK call returns (`eager`): not when the loop next wakes, which
        behind a burst of answers being read can be a second later.
        """
        started = self.clock.now()
        loop = Interpreter(
            run,
            self.clock,
            self._perform,
            eager=self._took,
            waiting=lambda r: self.progress(r, len(r.in_flight), started),
            interrupted=self._drain,
            bounded=False,
        )
        done = await loop.run()
        # A stop's reason is the caller's to print: it is the run's closing error line.
        self.progress(loop.machine, len(loop.machine.in_flight), started, force=True)
        return loop.machine, done


def _todos(
    requests: Sequence[Request], template: RequestTemplate, price: ModelPrice | None
) -> tuple[Todo, ...]:
    """The machine's items; each carries the upper bound of its cost when a budget has a price."""
    cached = len(template.system_json or b"")

    def bound(r: Request) -> float:
        if price is None:
            return 0.0
        size, tokens = r.size, r.max_tokens
        return request_bound(
            request_bytes=size, cached_bytes=cached, max_tokens=tokens, price=price, route="sync"
        )

    return tuple(
        Todo(custom_id=r.custom_id, max_tokens=r.max_tokens, bound=bound(r), item_id=r.item_id)
        for r in requests
    )


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
    settings: SyncSettings | None = None,
    emit: Emit = discard,
    rng: random.Random | None = None,
    budget: Budget | None = None,
    price: ModelPrice | None = None,
    expect: Expect | None = None,
) -> ProbeResult:
    """The run's first launch: `request` alone through the run machine (retry-after, backoff,
    `max_attempts`, fatal, the breaker and the budget apply), its rows recorded; its outcome and the
    tier its rate-limit headers gave. An invalid answer the breaker holds is left to the run after."""
    settings = settings or SyncSettings()
    run = SyncRun.start(
        _todos([request], template, price),
        policy=settings.policy(None, warm_up=False),
        now=clock.now(),
        breaker=_breaker(store, sum(store.counts().values())),
        budget=budget,
        price=price,
        record_held=False,
        tells_budget=False,
        expect=expect,
    )
    shell = _Shell(store, {request.custom_id: request}, template, api, clock, emit, rng or random.Random())
    run, done = await shell.interpret(run)
    fatal = done.reason if run.stopped else None
    return ProbeResult(outcome=run.last, reading=run.reading or RateLimitReading(), fatal=fatal)


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
    contacted: bool = False,
    probed: Status | None = None,
    expect: Expect | None = None,
    noun: str = "item",
) -> SyncRunResult:
    """Send every request not yet final in `store` (already bound to the job, its messages kept:
    each is read back as its request is launched) through the run machine.

    `reading` is the tier as last read (the probe's, or `RateLimitReading.for_otpm(n)` for `--otpm`);
    None starts unpaced until the first answer's headers arrive. `warm_up=False` skips the lone first
    request: only when the probe has just answered (it wrote the rubric cache, and the run has had an
    HTTP answer). `probed`: the final status this run's probe gave its item (final in `store`
    already), which the progress counts as this run's, not an earlier one's. `contacted` says the run has had an HTTP answer already (the probe's), so a
    connection error is transient from the first send on. `budget` (with the job's spend so far) and
    `price` keep a `--budget` cap; `expect` (what one request is expected to cost) is the figure its
    last line starts from; `noun` what that line calls a request ("request" for a design's, which
    are not the job's items).
    """
    started = clock.now()
    final = store.job_state().final
    todo = {r.custom_id: r for r in requests if r.custom_id not in final}
    run = SyncRun.start(
        _todos(list(todo.values()), template, price),
        policy=settings.policy(reading, warm_up=warm_up and template.system_json is not None),
        now=started,
        breaker=_breaker(store, len({r.custom_id for r in requests})),
        reading=reading,
        budget=budget,
        price=price,
        contacted=contacted or not warm_up,
        expect=expect,
        noun=noun,
    )
    earlier = len(requests) - len(todo) - (probed is not None)
    shell = _Shell(store, todo, template, api, clock, emit, rng, settings.progress_interval, earlier, probed)
    run, done = await shell.interpret(run)
    counts = {k: v for k, v in attrs.asdict(run.tally).items() if k != "left_pending"}
    return SyncRunResult(
        fatal=done.reason if run.stopped else None,
        total=len(todo),
        skipped=len(requests) - len(todo),
        pending=len(todo) - run.tally.finals,
        concurrency=run.limit,
        elapsed=clock.now() - started,
        budget_stopped=run.out_of_budget,
        rerun_budget=run.rerun_budget,
        spent_usd=run.budget.spent,
        **counts,
    )


__all__ = ["ProbeResult", "SyncRunResult", "SyncSettings", "probe", "run_sync"]
