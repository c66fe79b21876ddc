"""`BatchRun`: the machine's value, how it is built from the checkpoint, what it does next (`advance`)
and how it takes an answer (`on`, a table of handlers by event type)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Any, TypeVar

import attrs

from judgecore.decide.backoff import backoff
from judgecore.decide.breaker import Breaker
from judgecore.decide.planning import ModelPrice
from judgecore.decide.polling import BatchSnapshot
from judgecore.decide.spend import Budget, Expect
from judgecore.job.idsets import Marked, marked
from judgecore.job.ints import positions_of
from judgecore.results.outcomes import CONNECT_FAILED, Outcome, RawResult, stop_line
from judgecore.run.batch import _creating, _harvesting
from judgecore.run.batch._sub import Sub, bounder, first_sub
from judgecore.run.batch._vocab import (
    Action,
    BatchSettings,
    Begin,
    Created,
    CreateFailed,
    Done,
    Effect,
    Event,
    Harvested,
    Listed,
    ListFailed,
    Operation,
    Poll,
    PollFailed,
    Reconcile,
    Record,
    Release,
    Say,
    Snapshot,
    Wait,
)
from judgecore.run.batch.batching import Intent
from judgecore.run.batch.gate import Held
from judgecore.run.subbatch import (
    BUSY,
    IN_FLIGHT,
    TERMINAL,
    Checkpoint,
    Phase,
    SubEvent,
    SubState,
    Trigger,
    next_phase,
    next_state,
)
from judgecore.run.vocab import ExitStatus
from judgecore.values import frozen
from judgecore.wire.chunking import chunk
from judgecore.wire.requests import Request, RequestIndex, Requests

_K = TypeVar("_K")
_V = TypeVar("_V")


def _frozen(m: Mapping[_K, _V]) -> Mapping[_K, _V]:
    """A read-only copy of `m`; one already read-only is kept as it is (every `attrs.evolve` passes the
    field through this again: wrapping a proxy in a proxy nested one level per evolve, so a long run
    paid for the depth on each read and at about a thousand hit RecursionError)."""
    return m if isinstance(m, MappingProxyType) else MappingProxyType(dict(m))


@frozen(kw_only=True)
class BatchRun:
    """The batch run of one job (see the package docstring); build it with `BatchRun.start`."""

    settings: BatchSettings
    #: the run's custom_ids, in the job's order: its requests' column (or a lazy view of it), no copy
    ids: Sequence[str]
    requests: RequestIndex = attrs.field(converter=RequestIndex.of, eq=False, repr=False)
    subs: Mapping[int, Sub] = attrs.field(converter=_frozen, repr=False)
    #: each id's position in the job's columns (`requests.requests.positions`), aligned with `ids`:
    #: the per-id state below is a byte (or a count) at that position, not a str-keyed container
    at: Sequence[int] = attrs.field(repr=False, eq=False)
    #: 1 at the position of each final id (see `final`); `done_extra`: final ids outside the columns
    done: bytes = attrs.field(repr=False)
    done_extra: frozenset[str] = attrs.field(repr=False, default=frozenset())
    #: how many rounds of this run offered each id, by position (`_tally` wide; see `offered`)
    offers: bytes = attrs.field(repr=False, default=b"")
    breaker: Breaker
    held: tuple[Held, ...] = ()
    queue: tuple[Sequence[Request], ...] = ()  # planned sub-batches, not yet intents
    rounds: int = 0  # rounds begun by this run
    last_round: int = 0  # the job's highest round number
    next_sub: int = 1
    sub_step: int = 1  # new sub_ids: `next_sub`, then every `sub_step`-th (`start`'s `sub_slot`)
    claimed: frozenset[str] = frozenset()  # every batch id the job knows
    answered: bool = False  # the API has answered this run at least once
    stop: str | None = None  # why the run ends with exit 4
    halted: bool = False  # stop everything at once (stop is set)
    pending_effects: tuple[Effect, ...] = ()
    stuck: tuple[str, ...] = ()
    adopted: tuple[str, ...] = ()
    sent: int = 0
    budget: Budget = attrs.field(factory=lambda: Budget(cap=None))
    stop_creating: bool = False  # the budget cannot cover the next sub-batch (or the run switched)
    switched: bool = False  # the deadline's switch: live batches canceled, the rest for the sync route
    rerun_budget: float | None = None  # then: the `--budget` a rerun needs to send the rest
    cut_said: bool = False  # the run has said how many rounds its budget will take (`cut_line`)
    price: ModelPrice | None = None
    cached_bytes: int = 0  # the part of each request billed at the cache-write rate at most (the rubric)
    expect: Expect = attrs.field(
        factory=Expect
    )  # what one more request is expected to cost (the mean of real answers)

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
        expect: Expect | None = None,
        sub_slot: tuple[int, int] = (0, 1),
    ) -> BatchRun:
        """The run of `requests` (the job's, in input order) from what `checkpoint` holds. `total`: the
        job's number of ids, for the breaker (default: `len(requests)`). `budget` (with the model's
        `price` and each request's `cached_bytes`): the hard cap, its `spent` the job's spend so far; the
        bounds of the sub-batches in flight are reserved in it. `expect`: what one request is expected
        to cost, as the checkpoint's answers (or the plan) say; each harvest teaches it. `sub_slot`:
        `(k, m)`, new sub_ids are `k` modulo `m` (`_sub.first_sub`: a panel's batch lanes never share one)."""
        by_id = RequestIndex.of(requests)
        if price is not None:  # each request's bound is looked up by id
            by_id = by_id.indexed()
        if budget is not None and budget.cap is not None and price is None:
            raise ValueError("a budget needs the model's price")
        bound = bounder(price, cached_bytes, by_id)
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
                phase=Phase.born(v.state, grouped=v.group is not None),
                ids=v.ids,
                group=v.group,
                snap=snap,
                due=now,
                bound=sum(bound(c) for c in v.ids),
            )
        at = by_id.requests.positions
        ids = by_id.requests.custom_ids  # the column itself, or a view of it by position: no copy
        width = max(at) + 1 if len(at) else 0
        done, extra, where = _from_checkpoint(checkpoint, ids, at, width)
        subs = {k: attrs.evolve(s, at=tuple(where.get(c, -1) for c in s.ids)) for k, s in subs.items()}
        claimed = frozenset(v.batch_id for v in checkpoint.subs if v.batch_id is not None)
        breaker = Breaker.start(
            len(by_id) if total is None else total, checkpoint.first_final, settings.breaker
        )
        budget = budget or Budget(cap=None)
        budget = budget.reserve(sum(s.bound for s in subs.values()))
        return cls(
            settings=settings,
            ids=ids,
            requests=by_id,
            subs=subs,
            at=at,
            done=done,
            done_extra=extra,
            offers=bytes(width * array(_tally(settings)).itemsize),
            breaker=breaker,
            last_round=max((v.round for v in checkpoint.subs), default=0),
            next_sub=first_sub(
                max((v.sub_id for v in checkpoint.subs), default=0), checkpoint.top_sub, sub_slot
            ),
            sub_step=sub_slot[1],
            claimed=claimed,
            stop=breaker.reason() if breaker.tripped else None,
            budget=budget,
            price=price,
            cached_bytes=cached_bytes,
            expect=expect or Expect(),
        )

    # -- queries -------------------------------------------------------------------------------------

    @property
    def in_flight(self) -> frozenset[str]:
        """Ids in sub-batches that may still answer for them: never offered again while there."""
        return frozenset(c for s in self.subs.values() if s.state in IN_FLIGHT for c in s.ids)

    @property
    def phases(self) -> tuple[Phase, ...]:
        """The phase of every sub-batch of the run, by sub_id."""
        return tuple(self.subs[i].phase for i in sorted(self.subs))

    @property
    def final(self) -> Marked:
        """The ids with a final outcome (the checkpoint's, and those this run made final), as a set."""
        return Marked(self.ids, self.at, self.done, self.done_extra)

    def offered(self, custom_id: str) -> int:
        """How many rounds of this run offered `custom_id` (a lookup by id: O(n), for tests)."""
        p = self.at[self.ids.index(custom_id)]
        return int(memoryview(self.offers).cast(_tally(self.settings))[p])

    def pending(self) -> int:
        return len(self.ids) - self.done.count(1)

    def finalized(self, pairs: Iterable[tuple[str, int]]) -> BatchRun:
        """The run with these `(custom_id, position)` final (position -1: outside the columns)."""
        pairs = list(pairs)
        extra = {c for c, p in pairs if p < 0}
        return attrs.evolve(
            self,
            done=marked(self.done, (p for _, p in pairs)),
            done_extra=self.done_extra | extra if extra else self.done_extra,
        )

    def position(self, custom_id: str, sub_id: int | None = None) -> int:
        """The column position of `custom_id`, found in sub-batch `sub_id`'s ids when it is one of
        them (else a scan of the run's ids); -1 outside the columns."""
        sub = self.subs.get(sub_id) if sub_id is not None else None
        if sub is not None:
            try:
                return sub.at[sub.ids.index(custom_id)]
            except ValueError:
                pass  # not one of its ids: the run's
        try:
            return self.at[self.ids.index(custom_id)]
        except ValueError:
            return -1

    # -- small helpers (shared by the handlers) ------------------------------------------------------

    def _put(self, sub: Sub, **changes: object) -> BatchRun:
        return attrs.evolve(self, subs={**self.subs, sub.sub_id: attrs.evolve(sub, **changes)})  # type: ignore[arg-type]

    def _step(self, sub: Sub, trigger: Trigger, **changes: object) -> BatchRun:
        """Move `sub` to its next phase (`IllegalMove` if the phase table has no such move)."""
        return self._put(sub, phase=next_phase(sub.phase, trigger), **changes)

    def _emit(self, *effects: Effect) -> BatchRun:
        return attrs.evolve(self, pending_effects=self.pending_effects + effects)

    def _move(
        self, sub: Sub, event: SubEvent, trigger: Trigger, note: str | None = None, **changes: object
    ) -> BatchRun:
        """Move `sub`'s state by `event` and its phase by `trigger`, and record the move."""
        state = next_state(sub.state, event)
        if (state in TERMINAL) != (trigger is Trigger.SETTLED):
            raise AssertionError(f"{state.value} with trigger {trigger.value}")  # a bug in the caller
        run = self._step(sub, trigger, state=state, **changes)
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
        return bounder(self.price, self.cached_bytes, self.requests)(custom_id)

    def _delay(self, attempt: int, u: float, retry_after: float | None = None) -> float:
        return backoff(attempt, retry_after, self.settings.backoff, u)

    # -- advance: what to do now ---------------------------------------------------------------------

    def advance(self, now: float) -> tuple[BatchRun, tuple[Action, ...]]:
        """The effects to perform now, then the operations to start (marked busy in the value returned),
        then `Done` when the run is over, else `Wait`: until the earliest time something may start
        (None: only until an operation in flight answers)."""
        run = self
        if not run.halted:
            run = run._plan_round()
        ops: list[Operation] = []
        run = run._start_ops(now, ops)
        effects = run.pending_effects
        run = attrs.evolve(run, pending_effects=())
        if ops:
            return run, (*effects, *ops, Wait(None))
        wake = run._next_wake(now)
        if wake is None and not any(s.phase in BUSY for s in run.subs.values()):
            run, final = run._finish()
            return run, (*effects, *final, Done(run._exit_status(), run.stop))
        return run, (*effects, Wait(wake))

    def _active(self) -> list[Sub]:
        return [s for s in self.subs.values() if s.state in IN_FLIGHT and s.phase is not Phase.PARKED]

    def _plan_round(self) -> BatchRun:
        """Begin the next round once everything of the run is settled or parked."""
        if self.stop is not None or self.stop_creating or self.queue or self._active():
            return self
        if self.rounds >= self.settings.max_attempts:
            return self
        # what `diff_resume` would submit, by position: neither final, nor in flight, nor held (awaiting
        # the breaker: not resent meanwhile), nor offered `max_attempts` times; in input order
        blocked = bytearray(self.done)
        for s in self.subs.values():
            if s.state in IN_FLIGHT:
                for p in s.at:
                    if p >= 0:
                        blocked[p] = 1
        for h in self.held:
            if (p := self.position(h.custom_id, h.sub_id)) >= 0:
                blocked[p] = 1
        limit, code = self.settings.max_attempts, _tally(self.settings)
        tally = memoryview(self.offers).cast(code)
        # 4 bytes a position (a job's positions fit), and a range when they count up by one (all but
        # the probed id): no 8-byte copy of a round's positions, nor one held per sub-batch
        picked = array("i", (p for p in self.at if not blocked[p] and tally[p] < limit))
        if not picked:
            return self
        submit: Sequence[int] = self.at if len(picked) == len(self.at) else positions_of(picked)
        del picked
        planned = chunk(
            _view(self.requests.requests, submit),
            max_requests=self.settings.max_batch_requests,
            max_bytes=self.settings.max_batch_bytes,
        )
        counts = array(code, self.offers)
        for p in submit:
            counts[p] += 1
        offers = counts.tobytes()
        del counts, blocked, tally
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
        creating = sum(1 for s in subs if s.phase is Phase.CREATING)
        listing = any(s.phase is Phase.LISTING for s in subs)
        harvesting = any(s.phase is Phase.HARVESTING for s in subs)
        # reconcile every intent whose create may have made a batch, once no create is in flight; while
        # one is due, no new create starts
        due = any(s.phase is Phase.UNSURE and s.due <= now for s in subs)
        if due and not creating and not listing:
            # every intent that may own a listed batch takes part, those parked unconfirmed too: a batch
            # that fits two of them is never handed to one alone (see `batching.orphan_groups`)
            unsure = [
                s
                for s in subs
                if s.state is SubState.INTENT and s.group is None and s.phase in (Phase.UNSURE, Phase.PARKED)
            ]
            window = run.settings.orphan_window
            found = tuple(Intent(sub_id=s.sub_id, n=s.n, intent_at=s.intent_at) for s in unsure)
            ops.append(Reconcile(found, window.oldest(found), run.settings.list_scan_limit, window))
            for s in unsure:
                run = run._step(s, Trigger.LIST_SENT)
            listing = True
        if not listing and not due:
            run = _creating.start_creates(run, now, ops, creating)
        for s in subs:
            s = run.subs[s.sub_id]
            if s.phase not in (Phase.WAITING, Phase.HARVEST_DUE) or s.due > now:
                continue
            assert s.snap is not None
            if s.phase is Phase.HARVEST_DUE:
                if harvesting:
                    continue
                ops.append(_harvesting.harvest_op(run, s))
                run = run._step(s, Trigger.HARVEST_SENT)
                harvesting = True
            else:
                ops.append(Poll(s.sub_id, s.snap.id))
                run = run._step(s, Trigger.POLL_SENT)
        return run

    def _next_wake(self, now: float) -> float | None:
        """The earliest time something not busy may start (what is due now waits on a busy one)."""
        if self.halted:
            return None
        dues = [s.due for s in self._active() if s.phase not in BUSY and s.due > now]
        return min(dues) if dues else None

    def _finish(self) -> tuple[BatchRun, tuple[Effect, ...]]:
        """The run ends: intents never sent are refused; held quarantines are recorded unless tripped."""
        run = self
        for s in list(run.subs.values()):
            if s.phase is Phase.RESEND:
                run = run._move(s, SubEvent.REFUSED, Trigger.SETTLED, "not sent: the run stopped")
        if run.held and not run.breaker.tripped:
            run = run._emit(Release(run.held))
            run = run.finalized((h.custom_id, run.position(h.custom_id, h.sub_id)) for h in run.held)
            run = attrs.evolve(run, held=())
        effects = run.pending_effects
        return attrs.evolve(run, pending_effects=()), effects

    def _exit_status(self) -> int:
        if self.stop is not None:
            return ExitStatus.FATAL
        return ExitStatus.PENDING if self.pending() else ExitStatus.OK

    # -- on: taking an event --------------------------------------------------------------------------

    def on(self, event: Event) -> BatchRun:
        """The run after `event` (see the package docstring); an event of no known type is a KeyError."""
        return _HANDLERS[type(event)](self, event)


def _tally(settings: BatchSettings) -> str:
    """The typecode of `BatchRun.offers`: a count per id, at most `max_attempts` (one per round)."""
    return "B" if settings.max_attempts < 256 else "I"


def _view(requests: Requests, positions: Sequence[int]) -> Requests:
    """The requests at these positions of the columns of `requests`, as a view (in this order)."""
    return attrs.evolve(requests, positions=positions)


def _from_checkpoint(
    checkpoint: Checkpoint, ids: Sequence[str], at: Sequence[int], width: int
) -> tuple[bytes, frozenset[str], dict[str, int]]:
    """The final ids of `checkpoint` among `ids` as a byte per position (`width` of them); those of
    its in-flight sub-batches outside `ids`, by id; and the position of each of those sub-batches' ids
    (one walk of the columns, a dict the size of what is in flight)."""
    final = checkpoint.final
    live = {c for v in checkpoint.subs if v.state in IN_FLIGHT for c in v.ids}
    done = bytearray(width)
    where: dict[str, int] = {}
    for c, p in zip(ids, at, strict=True) if final or live else ():  # a new job's ids are not walked
        if c in final:
            done[p] = 1
        if c in live:
            where[c] = p
    extra = frozenset(c for c in live if c in final and c not in where)
    return bytes(done), extra, where


_HANDLERS: Mapping[type, Callable[[BatchRun, Any], BatchRun]] = MappingProxyType(
    {
        Created: _creating.on_created,
        CreateFailed: _creating.on_create_failed,
        Listed: _creating.on_listed,
        ListFailed: _creating.on_list_failed,
        Snapshot: _harvesting.on_snapshot,
        PollFailed: _harvesting.on_poll_failed,
        Harvested: _harvesting.on_harvested,
    }
)
