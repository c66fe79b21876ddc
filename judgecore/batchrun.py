"""The batch run as a sans-I/O machine: given what the checkpoint holds, what to do next.

Theory of operation (in the manner of h11's `Connection`). `BatchRun` is a frozen value. The shell
builds it from the checkpoint (`BatchRun.start(checkpoint, requests=..., settings=..., now=...)`), then
loops: `run, actions = run.advance(now)` says what to do now, and `run = run.on(event)` takes each
answer. No I/O, no clock, no randomness here: `now` and every jitter draw `u` come in as arguments.

`advance` returns, in order, first the *effects* the shell performs at once and in order, before
anything else (`Record` a sub-batch's move, `Reject` a request too large for any batch, `Release`
held quarantines, `Begin` a round, `Say` a line on stderr), then the *operations* it may start
concurrently, each of which ends in one event: `Create(sub)` (write the intent, then POST: `Created` or
`CreateFailed`), `Reconcile(intents)` (list recent batches: `Listed` or `ListFailed`), `Poll(sub)`
(`Snapshot` or `PollFailed`), `Harvest(sub)` (stream and record its lines: `Harvested`), and finally
`Sleep(until)` when nothing can start before then, or `Done(exit_status, reason)` when the run is over.
An operation handed out is marked busy in the returned value, so it is never handed out twice.

The rules, each a bound or a promise of CONTRACT.md:
- rounds: a round offers every id that is neither final nor in flight (`diff_resume`), chunked; the
  next round starts once every sub-batch of the run is harvested or parked (stuck, unconfirmed,
  cut). `settings.max_attempts` bounds the rounds, so the sends per id, *per run*: a rerun gives
  every pending id a fresh budget;
- creates: at most `concurrency` in flight; a create that failed in a way that may have made a batch
  is never re-sent before a reconciliation says no batch was made, and no create is in flight while
  a reconciliation lists (a sibling's fresh batch is never mistaken for an orphan); each sub-batch has
  at most `create_attempts` creates and reconciliations; 413 splits it in halves (`after_create_error`);
- polling: `next_poll_action` against each batch's own deadline; overdue is `stuck` (ids pending, never
  resent while it may end); a 404 is `gone` (its ids are free: nothing can answer for them any more);
- harvest: one at a time, at most `harvest_attempts` streams per batch per run; the shell streams the
  lines through the breaker (`judgecore.breaker`) and reports one `Harvested`;
- stopping: a fatal answer (authentication, permission, unknown model, an endpoint that cannot be
  reached on the run's first contact; an account state, whose ids stay pending, whether a create was
  refused with it or a harvested line carried it) halts the run: nothing new starts; a tripped breaker stops
  creating, harvests what is live, and ends with exit 4. Every loop is bounded, so a run always ends.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TypeVar

import attrs

from judgecore.backoff import BackoffPolicy, backoff
from judgecore.batching import (
    Fatal,
    GiveUp,
    Intent,
    OrphanWindow,
    RetryCreate,
    Split,
    after_create_error,
    could_fit,
    match_orphans,
    orphan_groups,
)
from judgecore.batching import (
    Reject as RejectDecision,
)
from judgecore.breaker import Breaker, BreakerPolicy
from judgecore.chunking import MAX_BYTES, MAX_REQUESTS, chunk
from judgecore.harvesting import Held
from judgecore.items import Request, RequestIndex, custom_ids_of, item_ids_of
from judgecore.machine import Done, ExitStatus, Say
from judgecore.outcomes import (
    CONNECT_FAILED,
    FailureClass,
    Outcome,
    RawResult,
    Status,
    Usage,
    classify,
    stop_line,
)
from judgecore.planning import ModelPrice
from judgecore.polling import (
    BatchSnapshot,
    Overdue,
    PollPolicy,
    Wait,
    next_poll_action,
)
from judgecore.polling import (
    Harvest as HarvestNow,
)
from judgecore.resume import JobState, diff_resume
from judgecore.spend import Budget, answer_cost, request_bound
from judgecore.subbatch import IN_FLIGHT, TERMINAL, SubEvent, SubState, next_state

EXIT_OK, EXIT_PENDING, EXIT_FATAL = ExitStatus.OK, ExitStatus.PENDING, ExitStatus.FATAL

_K = TypeVar("_K")
_V = TypeVar("_V")


@attrs.frozen(kw_only=True)
class BatchSettings:
    """Knobs of the batch run; the defaults are the CLI's."""

    max_batch_requests: int = MAX_REQUESTS
    max_batch_bytes: int = MAX_BYTES
    poll: PollPolicy = attrs.field(factory=PollPolicy)
    backoff: BackoffPolicy = attrs.field(factory=BackoffPolicy)
    #: rounds per run: each id is offered at most this many times per run
    max_attempts: int = 3
    #: creates in flight at once
    concurrency: int = 8
    breaker: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    #: create calls (and reconciliations) per sub-batch before its ids are left pending for a rerun
    create_attempts: int = 5
    #: result streams per ended batch before it is left `ended` (a rerun resumes the harvest)
    harvest_attempts: int = 4
    #: which listed batch can be an intent's (see `judgecore.batching.OrphanWindow`)
    orphan_window: OrphanWindow = attrs.field(factory=OrphanWindow)
    #: at most this many listed batches are scanned per reconciliation
    list_scan_limit: int = 2000
    #: outcome rows per durable commit during a harvest
    write_group: int = 5000

    def __attrs_post_init__(self) -> None:
        for name in (
            "max_batch_requests",
            "max_attempts",
            "concurrency",
            "create_attempts",
            "harvest_attempts",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")


# -- what the checkpoint holds ---------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class SubView:
    """One sub-batch as the checkpoint holds it. `ids`: its custom_ids with no outcome recorded under
    it (the store fills them for in-flight states only)."""

    sub_id: int
    round: int
    n: int
    intent_at: float
    state: SubState
    batch_id: str | None = None
    created_at: float | None = None
    expires_at: float | None = None
    group: int | None = None
    ids: tuple[str, ...] = ()


@attrs.frozen(kw_only=True)
class Checkpoint:
    """The pure view of a job's checkpoint that a run starts from (`adapters.store.Store.checkpoint`)."""

    subs: tuple[SubView, ...] = ()
    final: frozenset[str] = frozenset()
    #: failure classes (None: none) of the job's earliest final outcomes, in arrival order
    first_final: tuple[FailureClass | None, ...] = ()


# -- actions: effects (performed at once, in order) and operations (each ends in one event) ----------


@attrs.frozen
class Record:
    """Make the sub-batch's move durable (`batch` with CREATED/ADOPTED: its id and times)."""

    sub_id: int
    event: SubEvent
    state: SubState
    note: str | None = None
    batch: BatchSnapshot | None = None
    n: int = 0
    group: int | None = None


@attrs.frozen
class Release:
    """Record these lines now (held quarantines the breaker let through; a request no batch can hold)."""

    held: tuple[Held, ...]


@attrs.frozen
class Begin:
    """Round `number` starts: `n` requests in `sub_batches` sub-batches."""

    number: int
    n: int
    sub_batches: int


@attrs.frozen
class Create:
    """Write the intent stamped `at` (re-stamp it when `written`: a resend after a reconciliation proved
    no batch was made), then POST the sub-batch's create once."""

    sub_id: int
    round: int
    requests: Sequence[Request]
    at: float
    written: bool = False


@attrs.frozen
class Reconcile:
    """List recent batches, newest first, down to `oldest` (at most `limit`), to adopt these intents.

    The listing is the workspace's: a listed batch `worth_checking` (ended, and of an intent's size and
    window) has the first custom_id of its results read, so that one of another job is never adopted
    (`Listed.first_ids`)."""

    intents: tuple[Intent, ...]
    oldest: float
    limit: int
    window: OrphanWindow = attrs.field(factory=OrphanWindow)

    def worth_checking(self, batch: BatchSnapshot) -> bool:
        return not batch.live and any(could_fit(i, batch, self.window) for i in self.intents)


@attrs.frozen
class Poll:
    sub_id: int
    batch_id: str


@attrs.frozen
class Harvest:
    """Stream the results of `batch_id` into the checkpoint, each line through `breaker` (`held`: lines
    it holds so far). `group`: the sub-batches whose ids the batch may answer for (itself alone when
    empty). `settle`: the sub-batches whose missing lines become retriable once the stream is whole."""

    sub_id: int
    batch_id: str
    group: tuple[int, ...]
    settle: tuple[int, ...]
    breaker: Breaker
    held: tuple[Held, ...]


@attrs.frozen
class Sleep:
    until: float


Effect = Record | Release | Begin | Say
Operation = Create | Reconcile | Poll | Harvest
Action = Effect | Operation | Sleep | Done


# -- events -------------------------------------------------------------------------------------------


@attrs.frozen
class Created:
    sub_id: int
    batch: BatchSnapshot
    at: float


@attrs.frozen
class CreateFailed:
    sub_id: int
    error: RawResult
    at: float
    u: float  # the jitter draw in [0, 1)


@attrs.frozen
class Listed:
    batches: tuple[BatchSnapshot, ...]
    conclusive: bool  # reached `oldest` or the end of the list
    at: float
    #: `(batch_id, custom_id)`: the first result line's custom_id of each batch `worth_checking`
    first_ids: tuple[tuple[str, str], ...] = ()


@attrs.frozen
class ListFailed:
    error: RawResult
    at: float
    u: float


@attrs.frozen
class Snapshot:
    sub_id: int
    batch: BatchSnapshot
    at: float


@attrs.frozen
class PollFailed:
    sub_id: int
    error: RawResult
    at: float


@attrs.frozen
class Harvested:
    """A harvest's result. `error`: the stream was cut (None when whole). `open`: the ids it recorded as
    not final (retriable, fatal, or with no line at all); every other id of the settled sub-batches was
    recorded final, or is held. `fatal`: a line that stops the run (recorded as it came)."""

    sub_id: int
    at: float
    u: float
    breaker: Breaker
    held: tuple[Held, ...]
    open: frozenset[str] = frozenset()
    error: RawResult | None = None
    fatal: Outcome | None = None
    fatal_where: str = ""
    usage: Usage = attrs.field(factory=Usage)  # the sum of its answers' usage (what the batch cost)


Event = Created | CreateFailed | Listed | ListFailed | Snapshot | PollFailed | Harvested


# -- the machine ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Sub:
    """A sub-batch as the run tracks it."""

    sub_id: int
    round: int
    n: int
    intent_at: float
    state: SubState
    ids: tuple[str, ...] = ()
    requests: Sequence[Request] = ()  # known for sub-batches planned by this run
    group: int | None = None
    snap: BatchSnapshot | None = None
    busy: bool = False
    parked: bool = False  # in flight, but this run does nothing more with it
    due: float = 0.0  # next poll / next create or reconcile / next harvest, not before
    tries: int = 0  # creates + failed listings (intents), or streams (ended batches), this run
    unsure: bool = False  # a create failed in a way that may have made a batch
    ended: bool = False  # polled ended: harvest it
    recovered: bool = False  # an intent of an earlier run
    open: frozenset[str] = frozenset()  # ids its group's harvests recorded not final, until settled
    bound: float = 0.0  # the upper bound of its cost, reserved in the budget until it is harvested
    cost: float = 0.0  # what its group's harvests cost, until settled


def _frozen(m: Mapping[_K, _V]) -> Mapping[_K, _V]:
    """A read-only copy of `m`; one already read-only is kept as it is (every `attrs.evolve` passes the
    field through this again: wrapping a proxy in a proxy nested one level per evolve, so a long run
    paid for the depth on each read and at about a thousand hit RecursionError)."""
    return m if isinstance(m, MappingProxyType) else MappingProxyType(dict(m))


@attrs.frozen(kw_only=True)
class BatchRun:
    """The batch run of one job (see the module docstring); build it with `BatchRun.start`."""

    settings: BatchSettings
    ids: tuple[str, ...]
    requests: RequestIndex = attrs.field(converter=RequestIndex.of, eq=False, repr=False)
    subs: Mapping[int, Sub] = attrs.field(converter=_frozen, repr=False)
    final: frozenset[str] = attrs.field(repr=False)
    offers: Mapping[str, int] = attrs.field(converter=_frozen, repr=False, factory=dict)
    breaker: Breaker
    held: tuple[Held, ...] = ()
    queue: tuple[Sequence[Request], ...] = ()  # planned sub-batches, not yet intents
    rounds: int = 0  # rounds begun by this run
    last_round: int = 0  # the job's highest round number
    next_sub: int = 1
    claimed: frozenset[str] = frozenset()  # every batch id the job knows
    answered: bool = False  # the API has answered this run at least once
    stop: str | None = None  # why the run ends with exit 4
    halted: bool = False  # stop everything at once (stop is set)
    pending_effects: tuple[Effect, ...] = ()
    stuck: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    sent: int = 0
    budget: Budget = attrs.field(factory=lambda: Budget(cap=None))
    stop_creating: bool = False  # the budget cannot cover the next sub-batch
    price: ModelPrice | None = None
    cached_bytes: int = 0  # the part of each request billed at the cache-write rate at most (the rubric)

    # -- building ----------------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        checkpoint: Checkpoint,
        *,
        requests: Sequence[Request],
        settings: BatchSettings,
        now: float,
        total: int | None = None,
        budget: Budget | None = None,
        price: ModelPrice | None = None,
        cached_bytes: int = 0,
    ) -> BatchRun:
        """The run of `requests` (the job's, in input order) from what `checkpoint` holds. `total`: the
        job's number of ids, for the breaker (default: `len(requests)`). `budget` (with the model's
        `price` and each request's `cached_bytes`): the hard cap, its `spent` the job's spend so far; the
        bounds of the sub-batches in flight are reserved in it."""
        by_id = RequestIndex.of(requests)
        if budget is not None and budget.cap is not None and price is None:
            raise ValueError("a budget needs the model's price")
        bound = _bounder(price, cached_bytes, by_id)
        subs: dict[int, Sub] = {}
        for v in checkpoint.subs:
            if v.state not in IN_FLIGHT:
                continue
            snap = None
            if v.batch_id is not None:
                snap = BatchSnapshot(
                    id=v.batch_id,
                    status="ended" if v.state is SubState.ENDED else "in_progress",
                    created_at=v.created_at if v.created_at is not None else v.intent_at,
                    expires_at=v.expires_at if v.expires_at is not None else v.intent_at + 86_400.0,
                )
            subs[v.sub_id] = Sub(
                sub_id=v.sub_id,
                round=v.round,
                n=v.n,
                intent_at=v.intent_at,
                state=v.state,
                ids=v.ids,
                group=v.group,
                snap=snap,
                due=now,
                ended=v.state is SubState.ENDED,
                recovered=v.batch_id is None and v.group is None,
                bound=sum(bound(c) for c in v.ids),
                # waiting for the rest of its orphan group (a batchless member, or a harvested one)
                parked=v.state is SubState.GROUP_HARVESTED or (v.batch_id is None and v.group is not None),
            )
        claimed = frozenset(v.batch_id for v in checkpoint.subs if v.batch_id is not None)
        breaker = Breaker.start(
            len(by_id) if total is None else total, checkpoint.first_final, settings.breaker
        )
        budget = budget or Budget(cap=None)
        budget = budget.reserve(sum(s.bound for s in subs.values()))
        return cls(
            settings=settings,
            ids=tuple(by_id),
            requests=by_id,
            subs=subs,
            final=checkpoint.final,
            breaker=breaker,
            last_round=max((v.round for v in checkpoint.subs), default=0),
            next_sub=max((v.sub_id for v in checkpoint.subs), default=0) + 1,
            claimed=claimed,
            stop=breaker.reason() if breaker.tripped else None,
            budget=budget,
            price=price,
            cached_bytes=cached_bytes,
        )

    # -- queries -------------------------------------------------------------------------------------

    @property
    def in_flight(self) -> frozenset[str]:
        """Ids in sub-batches that may still answer for them: never offered again while there."""
        return frozenset(c for s in self.subs.values() if s.state in IN_FLIGHT for c in s.ids)

    def pending(self) -> int:
        return sum(1 for c in self.ids if c not in self.final)

    # -- small helpers -------------------------------------------------------------------------------

    def _put(self, sub: Sub, **changes: object) -> BatchRun:
        return attrs.evolve(self, subs={**self.subs, sub.sub_id: attrs.evolve(sub, **changes)})  # type: ignore[arg-type]

    def _emit(self, *effects: Effect) -> BatchRun:
        return attrs.evolve(self, pending_effects=self.pending_effects + effects)

    def _move(self, sub: Sub, event: SubEvent, note: str | None = None, **changes: object) -> BatchRun:
        state = next_state(sub.state, event)
        run = self._put(sub, state=state, **changes)
        if state in TERMINAL and state is not SubState.HARVESTED:  # no batch, or none that can bill: free
            run = attrs.evolve(run, budget=run.budget.release(sub.bound))._put(
                run.subs[sub.sub_id], bound=0.0
            )
        new = run.subs[sub.sub_id]
        return run._emit(Record(sub.sub_id, event, state, note, new.snap, new.n, new.group))

    def _halt(self, reason: str, *, say: bool = True) -> BatchRun:
        if self.stop is not None and self.halted:
            return self
        run = attrs.evolve(self, stop=self.stop or reason, halted=True)
        return run._emit(Say("warning", reason)) if self.stop is None and say else run

    def _fatal(self, outcome: Outcome, where: str) -> BatchRun:
        """Stop at once. An account state is said once, by the caller's last line (`stop_line`): its
        items stay pending, nothing was quarantined."""
        if outcome.account_state:
            return self._halt(stop_line(outcome), say=False)
        return self._halt(stop_line(outcome, where))

    def _first_contact(self, error: RawResult, where: str) -> BatchRun | None:
        """The run's first contact could not connect at all: stop (exit 4), naming the endpoint."""
        if self.answered or error.error_type != CONNECT_FAILED:
            return None
        return self._halt(
            f"FATAL_CONFIG: cannot reach the API ({where}): {error.message or 'connection failed'}"
        )

    def _bound(self, custom_id: str) -> float:
        return _bounder(self.price, self.cached_bytes, self.requests)(custom_id)

    def _delay(self, attempt: int, u: float, retry_after: float | None = None) -> float:
        return backoff(attempt, retry_after, self.settings.backoff, u)

    # -- advance: what to do now ---------------------------------------------------------------------

    def advance(self, now: float) -> tuple[BatchRun, tuple[Action, ...]]:
        """The effects to perform now, then the operations to start (marked busy in the value returned),
        then `Sleep` or `Done` when nothing more can start now."""
        run = self
        if not run.halted:
            run = run._plan_round()
        ops: list[Operation] = []
        run = run._start_ops(now, ops)
        effects = run.pending_effects
        run = attrs.evolve(run, pending_effects=())
        busy = any(s.busy for s in run.subs.values())
        tail: list[Action] = []
        if not ops and not busy:
            wake = run._next_wake(now)
            if wake is None:
                run, final = run._finish()
                effects += final
                tail.append(Done(run._exit_status(), run.stop))
            else:
                tail.append(Sleep(wake))
        elif not ops:
            wake = run._next_wake(now)
            if wake is not None:
                tail.append(Sleep(wake))
        return run, (*effects, *ops, *tail)

    def _active(self) -> list[Sub]:
        return [s for s in self.subs.values() if s.state in IN_FLIGHT and not s.parked]

    def _plan_round(self) -> BatchRun:
        """Begin the next round once everything of the run is settled or parked."""
        if self.stop is not None or self.stop_creating or self.queue or self._active():
            return self
        if self.rounds >= self.settings.max_attempts:
            return self
        held = frozenset(h.custom_id for h in self.held)  # awaiting the breaker: not resent meanwhile
        state = JobState(final=self.final, in_flight=self.in_flight | held, attempts=self.offers)
        submit = diff_resume(self.ids, state, max_attempts=self.settings.max_attempts).submit
        if not submit:
            return self
        planned = chunk(
            self.requests.select(submit),
            max_requests=self.settings.max_batch_requests,
            max_bytes=self.settings.max_batch_bytes,
        )
        offers = dict(self.offers)
        for c in submit:
            offers[c] = offers.get(c, 0) + 1
        number = self.last_round + 1
        run = attrs.evolve(
            self,
            queue=tuple(sb.requests for sb in planned),
            rounds=self.rounds + 1,
            last_round=number,
            offers=offers,
        )
        return run._emit(Begin(number, len(submit), len(planned)))

    def _start_ops(self, now: float, ops: list[Operation]) -> BatchRun:
        if self.halted:
            return self
        run = self
        subs = sorted(run.subs.values(), key=lambda s: s.sub_id)
        intents = [s for s in subs if s.state is SubState.INTENT and not s.parked]
        creating = sum(1 for s in intents if s.busy and not s.unsure)
        listing = any(s.busy and s.unsure for s in intents)
        harvesting = any(s.busy and s.ended for s in subs)
        # reconcile every intent whose create may have made a batch, once no create is in flight; while
        # one is due, no new create starts
        waiting = [s for s in intents if (s.unsure or s.recovered) and not s.busy]
        due = any(s.due <= now for s in waiting)
        if due and not creating and not listing:
            # every intent that may own a listed batch takes part, those parked unconfirmed too: a batch
            # that fits two of them is never handed to one alone (see `batching.orphan_groups`)
            unsure = [
                s
                for s in subs
                if s.state is SubState.INTENT and (s.unsure or s.recovered) and s.group is None and not s.busy
            ]
            window = run.settings.orphan_window
            found = tuple(Intent(sub_id=s.sub_id, n=s.n, intent_at=s.intent_at) for s in unsure)
            ops.append(Reconcile(found, window.oldest(found), run.settings.list_scan_limit, window))
            for s in unsure:
                run = run._put(s, busy=True, unsure=True)
            listing = True
        if not listing and not due:
            run = run._start_creates(now, ops, creating)
        for s in subs:
            s = run.subs[s.sub_id]
            if s.busy or s.parked or s.snap is None or s.state not in IN_FLIGHT or s.due > now:
                continue
            if s.ended:
                if harvesting:
                    continue
                ops.append(run._harvest_op(s))
                harvesting = True
            else:
                ops.append(Poll(s.sub_id, s.snap.id))
            run = run._put(s, busy=True)
        return run

    def _start_creates(self, now: float, ops: list[Operation], creating: int) -> BatchRun:
        run = self
        room = run.settings.concurrency - creating
        if room <= 0 or run.stop is not None or run.stop_creating:
            return run
        for s in sorted(run.subs.values(), key=lambda s: s.sub_id):
            if room <= 0:
                return run
            retry = s.state is SubState.INTENT and s.requests and not (s.busy or s.parked or s.unsure)
            if retry and s.due <= now:
                # a reconciliation proved no batch was made: send it again, its intent stamped anew
                ops.append(Create(s.sub_id, s.round, s.requests, now, written=True))
                run = run._put(s, busy=True, tries=s.tries + 1, intent_at=now)
                room -= 1
        queue = list(run.queue)
        while room > 0 and queue:
            reqs = queue.pop(0)
            bounds = tuple(map(run._bound, custom_ids_of(reqs))) if run.price is not None else ()
            cut: tuple[Sequence[Request], ...] = ()
            if bounds:
                fit = run.budget.fit(bounds)
                if fit == 0:  # nothing more fits: stop creating; what is live is harvested
                    return run._out_of_budget((reqs, *queue))
                if fit < len(reqs):  # cut to what fits; the budget stops the run's creates after it
                    cut, queue = (reqs[fit:], *queue), []
                reqs, bounds = reqs[:fit], bounds[:fit]
                run = attrs.evolve(run, budget=run.budget.reserve(sum(bounds)))
            sub = Sub(
                sub_id=run.next_sub,
                round=run.last_round,
                n=len(reqs),
                intent_at=now,
                state=SubState.INTENT,
                ids=custom_ids_of(reqs),
                requests=reqs,
                busy=True,
                tries=1,
                bound=sum(bounds),
            )
            ops.append(Create(sub.sub_id, sub.round, reqs, now))
            run = attrs.evolve(run, subs={**run.subs, sub.sub_id: sub}, next_sub=run.next_sub + 1)
            room -= 1
            if cut:
                return run._out_of_budget(cut)
        return attrs.evolve(run, queue=tuple(queue))

    def _out_of_budget(self, unsent: tuple[Sequence[Request], ...]) -> BatchRun:
        need = sum(self._bound(c) for reqs in unsent for c in custom_ids_of(reqs))
        n = sum(len(reqs) for reqs in unsent)
        assert self.budget.cap is not None
        more = need - max(0.0, self.budget.left)
        text = (
            f"budget: ${self.budget.cap:,.2f} cannot cover the {n:,} {'request' if n == 1 else 'requests'} not sent (up to ${need:,.2f} "
            f"at most; ${self.budget.spent:,.2f} spent, ${self.budget.reserved:,.2f} in flight); they stay "
            f"pending: rerun with a --budget at least ${more:,.2f} larger to send them"
        )
        return attrs.evolve(self, queue=(), stop_creating=True)._emit(Say("warning", text))

    def _harvest_op(self, s: Sub) -> Harvest:
        assert s.snap is not None
        group: tuple[int, ...] = ()
        settle: tuple[int, ...] = (s.sub_id,)
        if s.group is not None:
            members = [m for m in self.subs.values() if m.group == s.group]
            group = tuple(sorted(m.sub_id for m in members))
            others_done = all(
                m.state is SubState.GROUP_HARVESTED
                for m in members
                if m.sub_id != s.sub_id and m.snap is not None
            )
            settle = group if others_done else ()
        return Harvest(s.sub_id, s.snap.id, group, settle, self.breaker, self.held)

    def _next_wake(self, now: float) -> float | None:
        """The earliest time something not busy may start (what is due now waits on a busy one)."""
        if self.halted:
            return None
        dues = [s.due for s in self._active() if not s.busy and s.due > now]
        return min(dues) if dues else None

    def _finish(self) -> tuple[BatchRun, tuple[Effect, ...]]:
        """The run ends: intents never sent are refused; held quarantines are recorded unless tripped."""
        run = self
        for s in list(run.subs.values()):
            if s.state is SubState.INTENT and not s.recovered and not s.unsure and not s.parked:
                run = run._move(s, SubEvent.REFUSED, "not sent: the run stopped", parked=True)
        if run.held and not run.breaker.tripped:
            run = run._emit(Release(run.held))
            run = attrs.evolve(run, final=run.final | {h.custom_id for h in run.held}, held=())
        effects = run.pending_effects
        return attrs.evolve(run, pending_effects=()), effects

    def _exit_status(self) -> int:
        if self.stop is not None:
            return EXIT_FATAL
        return EXIT_PENDING if self.pending() else EXIT_OK

    # -- on: taking an event --------------------------------------------------------------------------

    def on(self, event: Event) -> BatchRun:
        """The run after `event` (see the module docstring)."""
        match event:
            case Created(sub_id, batch, at):
                sub = self.subs[sub_id]
                run = attrs.evolve(
                    self, answered=True, claimed=self.claimed | {batch.id}, sent=self.sent + sub.n
                )
                return run._created(sub, batch, at, adopted=False)
            case CreateFailed(sub_id, error, at, u):
                return self._create_failed(self.subs[sub_id], error, at, u)
            case Listed(batches, conclusive, at, first_ids):
                return attrs.evolve(self, answered=True)._listed(batches, conclusive, at, first_ids)
            case ListFailed(error, at, u):
                return self._list_failed(error, at, u)
            case Snapshot(sub_id, batch, at):
                return attrs.evolve(self, answered=True)._snapshot(self.subs[sub_id], batch, at)
            case PollFailed(sub_id, error, at):
                return self._poll_failed(self.subs[sub_id], error, at)
            case Harvested():
                return attrs.evolve(self, answered=True)._harvested(event)
        raise TypeError(f"not a batch run event: {event!r}")  # pragma: no cover

    def _created(
        self, sub: Sub, batch: BatchSnapshot, at: float, *, adopted: bool, group: int | None = None
    ) -> BatchRun:
        event = SubEvent.ADOPTED if adopted else SubEvent.CREATED
        note = None
        if adopted:
            note = "adopted orphan" if group is None else f"adopted orphan of group {group}"
        action = next_poll_action(at, batch, self.settings.poll)
        due = at + action.seconds if isinstance(action, Wait) else at
        run = self._move(
            sub,
            event,
            note,
            snap=batch,
            busy=False,
            parked=False,
            unsure=False,
            recovered=False,
            due=due,
            group=group,
            tries=0,
        )
        if adopted:
            extra = (
                " (as one of a group: lines go to the sub-batch owning their id)" if group is not None else ""
            )
            run = attrs.evolve(run, adopted=(*run.adopted, batch.id))._emit(
                Say(
                    "warning",
                    f"sub-batch {sub.sub_id}: adopted orphan batch {batch.id}, created before its id was recorded{extra}",
                )
            )
        return run

    def _create_failed(self, sub: Sub, error: RawResult, at: float, u: float) -> BatchRun:
        if (halted := self._first_contact(error, f"creating sub-batch {sub.sub_id}")) is not None:
            return halted._move(
                sub, SubEvent.REFUSED, "not sent: the endpoint cannot be reached", busy=False, parked=True
            )
        decision = after_create_error(
            error,
            attempt=sub.tries - 1,
            n=sub.n,
            max_attempts=self.settings.create_attempts,
            policy=self.settings.backoff,
            u=u,
        )
        run = self if error.kind == "connection_error" else attrs.evolve(self, answered=True)
        match decision:
            case Split(reason):
                first, second = sub.requests[: sub.n // 2], sub.requests[sub.n // 2 :]
                run = run._move(sub, SubEvent.TOO_LARGE, reason, busy=False)
                run = attrs.evolve(run, queue=(first, second, *run.queue))
                limit = f"--max-batch-bytes {self.settings.max_batch_bytes:,}"
                tail = f" ({limit}); the size estimate was wrong" if error.status == 413 else f" ({limit})"
                return run._emit(Say("warning", f"sub-batch {sub.sub_id}: {reason}{tail}"))
            case RejectDecision(outcome):
                cid, item_id = custom_ids_of(sub.requests)[0], item_ids_of(sub.requests)[0]
                run = run._emit(Release((Held(cid, outcome, sub.sub_id, None),)))
                run = run._move(sub, SubEvent.REJECTED, outcome.reason, busy=False)
                run = attrs.evolve(run, final=run.final | {cid})
                return run._emit(Say("warning", f"item {item_id!r}: too large for any batch: quarantined"))
            case Fatal(outcome):
                run = run._fatal(outcome, f"creating sub-batch {sub.sub_id}")
                if sub.unsure:
                    return run._put(sub, busy=False, parked=True)
                return run._move(sub, SubEvent.REFUSED, outcome.reason, busy=False, parked=True)
            case RetryCreate(delay, reason):
                run = run._put(sub, busy=False, unsure=True, due=at + delay)
                return run._emit(
                    Say(
                        "info",
                        f"sub-batch {sub.sub_id}: create failed ({reason}); checking for it, then retrying",
                    )
                )
            case GiveUp(reason, maybe_created):
                if maybe_created or sub.unsure:  # settle it by one last reconciliation
                    return run._put(sub, busy=False, unsure=True, due=at, tries=self.settings.create_attempts)
                run = run._move(sub, SubEvent.REFUSED, "create refused", busy=False, parked=True)
                return run._emit(
                    Say("warning", f"sub-batch {sub.sub_id}: {reason}; its {sub.n:,} ids stay pending")
                )
        raise AssertionError(decision)  # pragma: no cover

    def _listed(
        self,
        batches: tuple[BatchSnapshot, ...],
        conclusive: bool,
        at: float,
        first_ids: tuple[tuple[str, str], ...] = (),
    ) -> BatchRun:
        listing = [s for s in self.subs.values() if s.busy and s.state is SubState.INTENT and s.unsure]
        intents = [Intent(sub_id=s.sub_id, n=s.n, intent_at=s.intent_at) for s in listing]
        window = self.settings.orphan_window
        foreign = _foreign(listing, first_ids)
        adoptions = match_orphans(intents, batches, claimed=self.claimed, window=window, foreign=foreign)
        groups = orphan_groups(intents, batches, claimed=self.claimed, window=window, foreign=foreign)
        run = self
        for bid in sorted({b for ids in foreign.values() for b in ids} - self.claimed):
            if all(bid in ids for ids in foreign.values()):
                run = run._emit(Say("info", f"batch {bid} holds another job's requests: not adopted"))
        for a in adoptions:
            run = attrs.evolve(run, claimed=run.claimed | {a.batch.id})
            run = run._created(run.subs[a.sub_id], a.batch, at, adopted=True, group=a.group)
        adopted = {a.sub_id for a in adoptions}
        for s in listing:
            if s.sub_id in adopted:
                continue
            s = run.subs[s.sub_id]
            if s.sub_id in groups:  # one of its group's batches may hold its ids: settled with them
                group = groups[s.sub_id]
                note = f"no batch of its own; settled with orphan group {group}"
                run = run._move(
                    s, SubEvent.GROUPED, note, busy=False, parked=True, group=group, recovered=False
                )
            elif conclusive and s.recovered:
                run = run._move(s, SubEvent.ABSENT, "no batch matched its intent", busy=False, parked=True)
                run = run._emit(
                    Say(
                        "info",
                        f"sub-batch {s.sub_id}: no batch was created for it; its {s.n:,} ids are resent",
                    )
                )
            elif conclusive and s.tries >= self.settings.create_attempts:
                run = run._move(
                    s, SubEvent.REFUSED, "create failed; no batch was made", busy=False, parked=True
                )
                run = run._emit(
                    Say(
                        "warning",
                        f"sub-batch {s.sub_id}: create failed {s.tries} times; ids left for a retry",
                    )
                )
            elif conclusive:  # proven absent: send the same intent again
                run = run._put(s, busy=False, unsure=False)
            else:
                run = run._unconfirmed(s, at, 0.0, "could not list every batch that may be its own")
        return run

    def _list_failed(self, error: RawResult, at: float, u: float) -> BatchRun:
        run = self._first_contact(error, "listing batches") or self
        if error.kind != "connection_error":
            run = attrs.evolve(run, answered=True)
        listing = [s for s in run.subs.values() if s.busy and s.state is SubState.INTENT and s.unsure]
        run = run._emit(Say("warning", f"listing batches to find orphans failed: {classify(error).reason}"))
        for s in listing:
            run = run._unconfirmed(run.subs[s.sub_id], at, u, "listing batches failed")
        return run

    def _unconfirmed(self, s: Sub, at: float, u: float, why: str) -> BatchRun:
        """A listing could not settle intent `s`: try again later, or leave it for a rerun."""
        if s.parked:  # already left for a rerun (and said so)
            return self._put(s, busy=False)
        tries = s.tries + 1
        if s.recovered or tries >= self.settings.create_attempts or self.halted:
            run = self._put(s, busy=False, parked=True, tries=tries)
            return run._emit(
                Say(
                    "warning",
                    f"sub-batch {s.sub_id}: create not confirmed ({why}); its {s.n:,} ids stay pending "
                    "(rerun to reconcile)",
                )
            )
        return self._put(s, busy=False, tries=tries, due=at + self._delay(tries, u))

    def _snapshot(self, sub: Sub, batch: BatchSnapshot, at: float) -> BatchRun:
        return self._put(sub, snap=batch)._polled(sub.sub_id, at)

    def _polled(self, sub_id: int, at: float) -> BatchRun:
        run, s = self, self.subs[sub_id]
        assert s.snap is not None
        match next_poll_action(at, s.snap, self.settings.poll):
            case HarvestNow():
                return run._put(s, busy=False, ended=True, due=at)
            case Overdue():
                run = run._move(
                    s,
                    SubEvent.OVERDUE,
                    "still not ended past its deadline (expires_at + grace)",
                    busy=False,
                    parked=True,
                )
                return attrs.evolve(run, stuck=(*run.stuck, s.snap.id))
            case Wait(seconds):
                return run._put(s, busy=False, due=at + seconds)
        raise AssertionError("unreachable")  # pragma: no cover

    def _poll_failed(self, sub: Sub, error: RawResult, at: float) -> BatchRun:
        assert sub.snap is not None
        if (halted := self._first_contact(error, f"retrieving batch {sub.snap.id}")) is not None:
            return halted._put(sub, busy=False, parked=True)
        if error.status == 404:
            run = attrs.evolve(self, answered=True)._move(
                sub, SubEvent.LOST, "the API no longer knows this batch (404)", busy=False
            )
            return run._emit(
                Say(
                    "warning",
                    f"batch {sub.snap.id}: the API no longer knows it (404); its {sub.n:,} ids are resent",
                )
            )
        outcome = classify(error)
        run = self if error.kind == "connection_error" else attrs.evolve(self, answered=True)
        if outcome.status is Status.FATAL:
            return run._fatal(outcome, f"retrieving batch {sub.snap.id}")._put(sub, busy=False, parked=True)
        run = run._emit(
            Say("info", f"batch {sub.snap.id}: retrieve failed ({outcome.reason}); will poll again")
        )
        return run._polled(sub.sub_id, at)

    def _harvested(self, h: Harvested) -> BatchRun:
        sub = self.subs[h.sub_id]
        assert sub.snap is not None
        still_held = {x.custom_id for x in h.held}
        # held lines the gate let through during this stream were recorded (final), whatever becomes of
        # the sub-batch itself: a part of an orphan group, a cut stream (a tripped gate drops them)
        released = set() if h.breaker.tripped else {x.custom_id for x in self.held} - still_held
        run = attrs.evolve(self, breaker=h.breaker, held=h.held, final=self.final | released)
        if h.breaker.tripped and self.stop is None:
            run = attrs.evolve(run, stop=h.breaker.reason(), held=())._emit(
                Say("warning", h.breaker.reason())
            )
        if h.fatal is not None:
            run = run._fatal(h.fatal, h.fatal_where)
        if h.error is not None:
            outcome = classify(h.error)
            if outcome.status is Status.FATAL and h.error.status != 404:
                return run._fatal(outcome, f"fetching results of batch {sub.snap.id}")._put(
                    sub, busy=False, parked=True
                )
            tries = sub.tries + 1
            if tries < self.settings.harvest_attempts:
                run = run._put(
                    sub, busy=False, tries=tries, due=h.at + self._delay(tries - 1, h.u, h.error.retry_after)
                )
                return run._emit(
                    Say(
                        "warning",
                        f"batch {sub.snap.id}: results stream cut ({outcome.reason}); resuming it by id",
                    )
                )
            run = run._move(
                sub,
                SubEvent.HARVEST_CUT,
                "results not fully fetched; a rerun resumes the harvest",
                busy=False,
                parked=True,
                ended=False,
            )
            return run._emit(
                Say(
                    "warning",
                    f"batch {sub.snap.id}: results could not be fetched in full; its remaining ids stay pending",
                )
            )
        opened = sub.open | h.open
        cost = sub.cost + (0.0 if self.price is None else answer_cost(h.usage, self.price, "batch"))
        settle = self._harvest_op(sub).settle
        if sub.group is not None and sub.sub_id not in settle:
            return run._move(
                sub,
                SubEvent.GROUP_PART_HARVESTED,
                None,
                busy=False,
                ended=False,
                parked=True,
                open=opened,
                cost=cost,
            )
        not_final = opened | still_held
        final: set[str] = set()
        members = [run.subs[i] for i in settle]
        not_final |= frozenset().union(*(m.open for m in members))
        cost += sum(m.cost for m in members if m.sub_id != sub.sub_id)
        run = attrs.evolve(run, budget=run.budget.settle(sum(m.bound for m in members), cost))
        for m in members:
            final.update(c for c in m.ids if c not in not_final)
            run = run._move(
                m, SubEvent.HARVESTED, None, busy=False, ended=False, parked=False, open=frozenset()
            )
        return attrs.evolve(run, final=run.final | final)


def _bounder(price: ModelPrice | None, cached_bytes: int, requests: RequestIndex) -> Callable[[str], float]:
    """The upper bound of one request's cost on the batch route, by custom_id (0 without a price)."""

    def bound(custom_id: str) -> float:
        if price is None:
            return 0.0
        size, max_tokens = requests.bound_inputs(custom_id)
        return request_bound(
            request_bytes=size,
            cached_bytes=cached_bytes,
            max_tokens=max_tokens,
            price=price,
            route="batch",
        )

    return bound


def _foreign(subs: Sequence[Sub], first_ids: tuple[tuple[str, str], ...]) -> dict[int, frozenset[str]]:
    """`{sub_id: batches}`: the listed batches whose results' first custom_id is none of the sub-batch's
    (they hold another job's requests, or another sub-batch's: never this one's)."""
    if not first_ids:
        return {}
    out: dict[int, frozenset[str]] = {}
    for s in subs:
        ours = set(s.ids) | set(custom_ids_of(s.requests))  # an earlier run's intent: its ids only
        out[s.sub_id] = frozenset(bid for bid, cid in first_ids if cid not in ours)
    return out
