"""The sync run machine itself: `SyncRun`, a frozen value that `advance(now)` asks what to do next and
`on(Answered)` tells what came back (the rules are in `judgecore.run.sync`'s docstring)."""

from __future__ import annotations

import attrs

from judgecore.decide import concurrency as adaptive
from judgecore.decide.backoff import backoff
from judgecore.decide.breaker import Breaker
from judgecore.decide.planning import ModelPrice
from judgecore.decide.ratelimit import NOTHING, Concurrency, Cost, Pacer, RateLimitReading
from judgecore.decide.spend import Budget, Expect, answer_cost, budget_line, rerun_budget, stops_for_budget
from judgecore.results.outcomes import CONNECT_FAILED, FailureClass, Outcome, Status, Usage, stop_line
from judgecore.run.sync._vocab import (
    MIN_WAIT,
    NOTE_WAIT,
    Action,
    Answered,
    Done,
    Effect,
    Flight,
    Launch,
    Record,
    Row,
    Say,
    SyncPolicy,
    Tally,
    Todo,
    Tries,
    Wait,
    _Retry,
)
from judgecore.run.vocab import ExitStatus


def _one_line(text: str) -> str:
    return " ".join(text.split())


# --- the machine ---------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SyncRun:
    """One sync run (see the module docstring). Build it with `SyncRun.start`."""

    policy: SyncPolicy
    todos: tuple[Todo, ...]
    pacer: Pacer
    conc: Concurrency
    breaker: Breaker
    #: a served model's concurrency (`SyncPolicy.adaptive`); None: `conc` holds it
    adaptive: adaptive.AdaptiveConcurrency | None = None
    budget: Budget
    price: ModelPrice | None = None
    fresh: int = 0  # index of the next never-sent item in `todos`
    retries: tuple[_Retry, ...] = ()  # sorted by (due, seq)
    in_flight: tuple[Flight, ...] = ()
    warming: str | None = None  # the warm-up item's custom_id until it is resolved
    contacted: bool = False  # an HTTP answer has come back in this run
    #: Record what the breaker holds when the run ends undecided (False for the probe: the run that
    #: follows it asks again, so its breaker sees the answer among the job's first).
    record_held: bool = True
    #: Say the budget's line when the cap stops the run (False for the probe: the run that follows it
    #: says one line for every item left, where the probe's would count itself alone).
    tells_budget: bool = True
    #: what the budget line calls a request: "item" (one request per item), or "request" (a design's)
    noun: str = "item"
    held: tuple[Row, ...] = ()  # INVALID_REQUEST rows held while the breaker decides
    outbox: tuple[Record | Say, ...] = ()
    stop: str | None = None  # why the run stopped early (exit 4)
    out_of_budget: bool = False
    #: the `--budget` a rerun needs to send what the cap left pending (set when the cap stops the run)
    rerun_budget: float | None = None
    #: what one more request is expected to cost (the mean of real answers), for the budget's line
    expect: Expect = attrs.field(factory=Expect)
    tally: Tally = attrs.field(factory=Tally)
    #: The latest answer's outcome, and the latest rate-limit reading that said anything.
    last: Outcome | None = None
    reading: RateLimitReading | None = None

    @classmethod
    def start(
        cls,
        todos: tuple[Todo, ...],
        *,
        policy: SyncPolicy,
        now: float,
        breaker: Breaker,
        reading: RateLimitReading | None = None,
        budget: Budget | None = None,
        price: ModelPrice | None = None,
        contacted: bool = False,
        record_held: bool = True,
        tells_budget: bool = True,
        expect: Expect | None = None,
        noun: str = "item",
    ) -> SyncRun:
        """A run over `todos` (the job's items not final yet, in input order, no repeats).

        `breaker` is the job's, seeded from the checkpoint; `reading` the tier as last read (None:
        unpaced until the first answer's headers); `budget` the job's cap with its spend so far.
        `contacted` says the run has already had an HTTP answer (e.g. the probe's). `expect`: what one
        request is expected to cost, as the checkpoint's answers (or the plan) say.
        """
        if len({t.custom_id for t in todos}) != len(todos):
            raise ValueError("a sync run's items must be distinct")
        warm = todos[0].custom_id if policy.warm_up and todos else None
        return cls(
            policy=policy,
            todos=todos,
            pacer=Pacer.start(reading, now, policy.pacing),
            conc=Concurrency.start(policy.concurrency),
            adaptive=adaptive.AdaptiveConcurrency.start(
                policy.concurrency, max(policy.concurrency, policy.adaptive_maximum)
            )
            if policy.adaptive
            else None,
            breaker=breaker,
            budget=budget or Budget(cap=None),
            price=price,
            warming=warm,
            contacted=contacted,
            record_held=record_held,
            tells_budget=tells_budget,
            expect=expect or Expect(),
            noun=noun,
        )

    # -- queries -------------------------------------------------------------------------------

    @property
    def stopped(self) -> bool:
        return self.stop is not None

    @property
    def limit(self) -> int:
        """Requests that may be in flight now."""
        return self.adaptive.current if self.adaptive is not None else self.conc.limit

    @property
    def unsent(self) -> int:
        """Items not resolved and not in flight (fresh ones and waiting retries)."""
        return len(self.todos) - self.fresh + len(self.retries)

    def in_flight_cost(self) -> Cost:
        """What is reserved for the requests in flight (the pacer clamps its lanes by it)."""
        total = NOTHING
        for f in self.in_flight:
            total = total + f.cost
        return total

    # -- advance -------------------------------------------------------------------------------

    def effects(self) -> tuple[SyncRun, tuple[Effect, ...]]:
        """The effects the answers so far have queued (rows to record, lines to say), taken out: what
        `advance` hands out first. The shell performs them in the task that took the answer."""
        if not self.outbox:
            return self, ()
        return attrs.evolve(self, outbox=()), self.outbox

    def advance(self, now: float) -> tuple[SyncRun, tuple[Action, ...]]:
        """What to do at `now`, and the run that has done it: the effects queued, every `Launch` that
        may leave now (each already in flight in the run returned), then `Wait` or `Done`."""
        run, out = self, list(self.outbox)
        if out:
            run = attrs.evolve(run, outbox=())
        deadline = self.policy.deadline
        late = deadline is not None and now >= deadline  # the end: send nothing more
        while True:
            if run.stop is not None:
                out.append(Done(ExitStatus.FATAL, run.stop))
                return run, tuple(out)
            wake: float | None = None
            held_back = run.out_of_budget or late
            candidate, from_retry = (None, False) if held_back else run._candidate(now)
            if candidate is not None and run._may_launch(candidate, now):
                bound = candidate.todo.bound
                if stops_for_budget(run.budget, bound, in_flight=bool(run.in_flight)):
                    run, said = run._out_of_budget(bound).effects()
                    out += said
                    continue
                if run.budget.admits(bound):
                    cost = run.pacer.estimate(candidate.todo.max_tokens)
                    wait = run.pacer.wait(now, cost)
                    if wait <= 0:
                        run, launch = run._launch(candidate, from_retry, cost, now)
                        out.append(launch)
                        continue
                    wake = now + max(wait, MIN_WAIT)
            # A candidate held back by the concurrency limit, the warm-up or the budget (until an
            # answer in flight frees its bound) waits for an answer.
            # (the earliest retry not yet due: a due one held back by the limit waits for an answer,
            # or for a refused request's backoff to end and hand its slot back)
            later = next((r.due for r in run.retries if r.due > now), None) if not held_back else None
            if later is not None:
                wake = later if wake is None else min(wake, later)
            if wake is not None and deadline is not None:
                wake = min(wake, deadline)  # no wait runs past the deadline
            if not run.in_flight and wake is None:
                if run.held and run.record_held and not run.breaker.tripped:
                    # The run ends with the breaker undecided: what it held is final, record it.
                    run, rows = attrs.evolve(run, held=())._emit(run.held).effects()
                    out += rows
                    continue
                out.append(run._done())
                return run, tuple(out)
            out.append(Wait(wake))
            return run, tuple(out)

    def _candidate(self, now: float) -> tuple[_Retry | None, bool]:
        """The item that goes next (a due retry, else the next fresh one), as a `_Retry` value."""
        if self.retries and self.retries[0].due <= now:
            return self.retries[0], True
        if self.fresh < len(self.todos):
            todo = self.todos[self.fresh]
            return _Retry(due=now, seq=self.fresh, todo=todo, tries=Tries()), False
        return None, False

    def _may_launch(self, candidate: _Retry, now: float) -> bool:
        busy = len(self.in_flight)
        if self.adaptive is not None:  # a refused request backing off keeps its slot
            busy += sum(1 for r in self.retries if r.holds and r.due > now)
        if busy >= self.limit:
            return False
        # The warm-up item goes alone; nothing else leaves until it is resolved.
        return self.warming is None or (candidate.todo.custom_id == self.warming and not self.in_flight)

    def _launch(self, c: _Retry, from_retry: bool, cost: Cost, now: float) -> tuple[SyncRun, Launch]:
        flight = Flight(todo=c.todo, seq=c.seq, tries=c.tries, cost=cost, sent=now)
        t = self.tally
        run = attrs.evolve(
            self,
            fresh=self.fresh if from_retry else self.fresh + 1,
            retries=self.retries[1:] if from_retry else self.retries,
            in_flight=(*self.in_flight, flight),
            pacer=self.pacer.admit(now, cost),
            budget=self.budget.reserve(c.todo.bound),
            tally=attrs.evolve(t, sends=t.sends + 1, retries=t.retries + (1 if from_retry else 0)),
        )
        return run, Launch(todo=c.todo, cost=cost, retry=from_retry)

    def _out_of_budget(self, next_bound: float) -> SyncRun:
        left = len(self.retries) + len(self.todos) - self.fresh
        if not self.tells_budget:
            return attrs.evolve(self, out_of_budget=True)
        text = budget_line(
            self.budget, self.expect, left=left, in_flight=0, next_bound=next_bound, noun=self.noun
        )
        note = Say("warning", text)
        rerun = rerun_budget(self.budget, self.expect, left=left, in_flight=0, next_bound=next_bound)
        return attrs.evolve(self, out_of_budget=True, rerun_budget=rerun, outbox=(*self.outbox, note))

    def _done(self) -> Done:
        if self.unsent or self.tally.left_pending:
            return Done(ExitStatus.PENDING, "budget" if self.out_of_budget else None)
        return Done(ExitStatus.OK, None)

    # -- events --------------------------------------------------------------------------------

    def on(self, event: Answered) -> SyncRun:
        """The run after an answer for one of its requests in flight."""
        index = next((i for i, f in enumerate(self.in_flight) if f.todo.custom_id == event.custom_id), None)
        if index is None:
            raise ValueError(f"{event.custom_id} is not in flight")
        flight = self.in_flight[index]
        now, outcome = event.now, event.outcome
        in_flight = self.in_flight[:index] + self.in_flight[index + 1 :]
        tries = attrs.evolve(flight.tries, sends=flight.tries.sends + 1)
        paid = outcome.usage if outcome.status in (Status.SUCCEEDED, Status.MISS) else None
        cost = answer_cost(paid, self.price, "sync") if paid is not None and self.price is not None else 0.0
        run = attrs.evolve(self, in_flight=in_flight)
        run = attrs.evolve(
            run,
            pacer=self.pacer.settle(now, flight.cost, paid).observe(
                now, event.reading, in_flight=run.in_flight_cost()
            ),
            budget=self.budget.settle(flight.todo.bound, cost),
            expect=self.expect.learn(cost) if paid is not None and self.price is not None else self.expect,
            tally=_add_usage(self.tally, paid),
            contacted=self.contacted or outcome.error_type not in ("connection_error", CONNECT_FAILED),
            last=outcome,
            reading=self.reading if event.reading.empty else event.reading,
        )
        if self.adaptive is not None:
            run = run._adapt(flight, outcome, now, len(self.in_flight))
        match outcome.status:
            case Status.SUCCEEDED | Status.MISS | Status.QUARANTINED:
                return run._final(flight, tries, outcome)
            case Status.FATAL:  # a configuration or an account state: it stays pending
                run = attrs.evolve(run, stop=stop_line(outcome), warming=None)
                if outcome.account_state:  # recorded not final: its line says why it waits
                    row = Row(custom_id=flight.todo.custom_id, outcome=outcome, attempts=tries.sends)
                    run = attrs.evolve(run, outbox=(*run.outbox, Record(rows=(row,))))
                return run
            case Status.RETRY:
                return run._retry(flight, tries, outcome, event)

    def _adapt(self, flight: Flight, outcome: Outcome, now: float, inflight: int) -> SyncRun:
        """Tell the adaptive concurrency what came back: an answer (its latency), a refusal (429, a
        5xx: a full queue's 503), a lost connection; a note when a refusal cuts the limit."""
        assert self.adaptive is not None
        event: adaptive.Event
        if outcome.status is not Status.RETRY:
            event = adaptive.Answered(now=now, latency=max(now - flight.sent, 1e-6), inflight=inflight)
        elif outcome.error_type in ("connection_error", CONNECT_FAILED):
            event = adaptive.Unreachable(now=now)
        elif outcome.failure is FailureClass.RATE_LIMIT or _refusal(outcome):
            event = adaptive.Refused(now=now)
        else:
            return self
        after = adaptive.step(self.adaptive, event)
        run = attrs.evolve(self, adaptive=after)
        if not isinstance(event, adaptive.Answered) and after.current < self.adaptive.current:
            note = Say(
                "info", f"server refused ({outcome.reason}): concurrency {self.limit} -> {after.current}"
            )
            run = attrs.evolve(run, outbox=(*run.outbox, note))
        return run

    def _final(self, flight: Flight, tries: Tries, outcome: Outcome) -> SyncRun:
        row = Row(custom_id=flight.todo.custom_id, outcome=outcome, attempts=tries.sends)
        breaker = self.breaker.observe(outcome)
        changes: dict[str, object] = {"breaker": breaker, "conc": self.conc.on_success()}
        if self.warming == flight.todo.custom_id:
            changes["warming"] = None
        if breaker.tripped:
            first = self.held[0].outcome if self.held else outcome
            reason = f"{breaker.reason()}; the first said: {first.error_message or first.reason}"
            changes.update(stop=_one_line(reason), held=(), warming=None)
        elif breaker.holds(outcome):
            changes["held"] = (*self.held, row)
        else:
            changes["held"] = ()
            return attrs.evolve(self, **changes)._emit((*self.held, row))  # type: ignore[arg-type]
        return attrs.evolve(self, **changes)  # type: ignore[arg-type]

    def _emit(self, rows: tuple[Row, ...]) -> SyncRun:
        """Put final rows in the outbox, in order, and count them."""
        t = self.tally
        counts = {s: sum(1 for r in rows if r.outcome.status is s) for s in Status}
        tally = attrs.evolve(
            t,
            succeeded=t.succeeded + counts[Status.SUCCEEDED],
            miss=t.miss + counts[Status.MISS],
            quarantined=t.quarantined + counts[Status.QUARANTINED],
        )
        return attrs.evolve(self, outbox=(*self.outbox, Record(rows=rows)), tally=tally)

    def _retry(self, flight: Flight, tries: Tries, outcome: Outcome, event: Answered) -> SyncRun:
        p, now, todo = self.policy, event.now, flight.todo
        if outcome.error_type == CONNECT_FAILED and not self.contacted:
            reason = f"FATAL_CONFIG: {outcome.error_message or 'the endpoint cannot be reached'}"
            return attrs.evolve(self, stop=_one_line(reason), warming=None)
        outbox = self.outbox
        conc, pacer = self.conc, self.pacer
        if outcome.failure is FailureClass.RATE_LIMIT:
            tries = attrs.evolve(tries, rate_limited=tries.rate_limited + 1)
            conc = conc.on_429(now)
            pacer = pacer.on_429(now, outcome.retry_after, event.reading)
            if conc.limit < self.conc.limit and self.adaptive is None:
                message = f"rate limited: concurrency {self.conc.limit} -> {conc.limit}"
                outbox = (*outbox, Say("info", message))
            exhausted = tries.rate_limited >= p.max_rate_limited
            attempt = tries.rate_limited - 1
        elif self.adaptive is not None and _refusal(outcome):
            # a served model's full queue (503): a refusal to wait out, as a 429 is (`max_rate_limited`)
            tries = attrs.evolve(tries, rate_limited=tries.rate_limited + 1)
            exhausted = tries.rate_limited >= p.max_rate_limited
            attempt = tries.rate_limited - 1
        else:
            tries = attrs.evolve(tries, failures=tries.failures + 1)
            exhausted = tries.failures >= p.max_attempts
            attempt = tries.failures - 1
        limited = outcome.failure is FailureClass.RATE_LIMIT
        t = attrs.evolve(self.tally, rate_limited=self.tally.rate_limited + int(limited))
        if exhausted:
            row = Row(custom_id=todo.custom_id, outcome=outcome, attempts=tries.sends)
            message = (
                f"{todo.name}: still failing after {tries.sends} sends ({outcome.reason}); "
                "left pending, rerun to resume"
            )
            return attrs.evolve(
                self,
                conc=conc,
                pacer=pacer,
                warming=None if self.warming == todo.custom_id else self.warming,
                outbox=(*outbox, Record(rows=(row,)), Say("warning", message)),
                tally=attrs.evolve(t, left_pending=t.left_pending + 1),
            )
        delay = backoff(attempt, outcome.retry_after, p.backoff, event.u)
        if delay >= NOTE_WAIT:
            message = f"{todo.name}: {outcome.reason}; resending in {delay:.0f} s"
            outbox = (*outbox, Say("info", message))
        holds = self.adaptive is not None and (
            outcome.failure is FailureClass.RATE_LIMIT or _refusal(outcome)
        )
        retry = _Retry(due=now + delay, seq=flight.seq, todo=todo, tries=tries, holds=holds)
        return attrs.evolve(
            self,
            conc=conc,
            pacer=pacer,
            retries=_insort(self.retries, retry),
            outbox=outbox,
            tally=t,
        )


def _refusal(outcome: Outcome) -> bool:
    """A server's refusal to take more now: a 5xx answer (a served model's full queue is a 503), not a
    lost connection."""
    return outcome.failure is FailureClass.INFRA_TRANSIENT and outcome.error_type not in (
        "connection_error",
        CONNECT_FAILED,
    )


def _insort(retries: tuple[_Retry, ...], retry: _Retry) -> tuple[_Retry, ...]:
    lo, hi = 0, len(retries)
    while lo < hi:
        mid = (lo + hi) // 2
        if retries[mid] < retry:
            lo = mid + 1
        else:
            hi = mid
    return (*retries[:lo], retry, *retries[lo:])


def _add_usage(t: Tally, usage: Usage | None) -> Tally:
    if usage is None:
        return t
    return attrs.evolve(
        t,
        input_tokens=t.input_tokens + usage.input_tokens,
        output_tokens=t.output_tokens + usage.output_tokens,
        cache_creation_input_tokens=t.cache_creation_input_tokens + usage.cache_creation_input_tokens,
        cache_read_input_tokens=t.cache_read_input_tokens + usage.cache_read_input_tokens,
    )
