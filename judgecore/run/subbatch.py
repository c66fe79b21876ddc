"""The sub-batch lifecycle: its states, the events that move it, and which states hold ids in flight.

Theory of operation (in the manner of h11's `_state.py`). A sub-batch is born an `INTENT` (its
custom_ids are durable, its create call not known to be answered). Every later change is an event
looked up in one table, `TRANSITIONS[(state, event)] -> next state`; a move the table does not hold is
a bug and raises `IllegalMove`. Nothing else sets a state.

A state with a way out of it is one whose batch may still exist and may still answer for its ids: an
intent whose create may have made a batch, a live, canceling, ended, stuck or partly harvested batch.
Those states hold their (not yet harvested) ids *in flight*: never resent while they are there.
`IN_FLIGHT` is derived from the table, never listed: the states with an outgoing move. The states
with none are terminal: `HARVESTED` (every line recorded), and those whose batch never existed or can
no longer answer (`FAILED`, `ORPHAN_RESUBMITTED`, `SPLIT`, `REJECTED`, `GONE`); their ids without an
outcome are free to send again.

A second, smaller machine lives here too: the *phase*, what this run is doing with a sub-batch now
(creating it, listing batches to find it, polling it, harvesting it, or leaving it for a rerun). It is
never persisted: a run rebuilds it from the state (`Phase.born`). Every change is a trigger looked up in
`PHASES[(phase, trigger)] -> next phase`; a move it does not hold raises `IllegalMove` too. `BUSY`, the
phases with an operation handed out and not yet answered, is derived from the table: those a send
enters. The run's one law over phases, "no create is in flight while a listing runs" (a sibling's
fresh batch is never taken for an orphan), is `no_create_while_listing`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from enum import StrEnum

import attrs

from judgecore.results.outcomes import FailureClass


class SubState(StrEnum):
    INTENT = "intent"  # ids durable, create not (known to be) answered
    LIVE = "live"  # created (or adopted), not ended
    CANCELED = "canceled"  # cancel requested by `judgecore cancel`; ends soon
    ENDED = "ended"  # ended, results not (fully) harvested
    STUCK = "stuck"  # still not ended at its deadline; may still end
    GROUP_HARVESTED = "group_harvested"  # its batch harvested; another of its orphan group is not yet
    HARVESTED = "harvested"  # every line recorded
    FAILED = "failed"  # create refused (or never sent): no batch was made
    ORPHAN_RESUBMITTED = "orphan_resubmitted"  # reconciled: no batch matched the intent
    SPLIT = "split"  # 413, or a batch that failed validation: replaced by its halves
    REJECTED = "rejected"  # 413 on one request: quarantined
    GONE = "gone"  # the API no longer knows the batch (404): its results can never be fetched


class SubEvent(StrEnum):
    CREATED = "created"  # the create call returned the batch
    ADOPTED = "adopted"  # a reconciliation found the intent's batch
    ABSENT = "absent"  # a conclusive reconciliation found no batch for it
    GROUPED = "grouped"  # no batch of its own, but one of its orphan group's batches may hold its ids
    REFUSED = "refused"  # the create was refused, or never sent (nothing was made)
    TOO_LARGE = "too_large"  # HTTP 413 on more than one request
    REJECTED = "rejected"  # HTTP 413 on one request
    CANCEL_REQUESTED = "cancel_requested"
    ALREADY_ENDED = "already_ended"  # a cancel found the batch ended
    HARVEST_CUT = "harvest_cut"  # ended, but its results could not be fetched in full
    GROUP_PART_HARVESTED = "group_part_harvested"
    HARVESTED = "harvested"
    OVERDUE = "overdue"  # still not ended at its deadline
    LOST = "lost"  # 404 on the batch
    INVALIDATED = "invalidated"  # the batch failed validation after its create: none of it ran


S, E = SubState, SubEvent
_HAS_BATCH = (S.LIVE, S.CANCELED, S.ENDED, S.STUCK)

TRANSITIONS: dict[tuple[SubState, SubEvent], SubState] = {
    (S.INTENT, E.CREATED): S.LIVE,
    (S.INTENT, E.ADOPTED): S.LIVE,
    (S.INTENT, E.ABSENT): S.ORPHAN_RESUBMITTED,
    (S.INTENT, E.GROUPED): S.INTENT,  # waits for its group's batches; settled with them
    (S.INTENT, E.HARVESTED): S.HARVESTED,  # a batchless member of an orphan group, settled
    (S.INTENT, E.REFUSED): S.FAILED,
    (S.INTENT, E.TOO_LARGE): S.SPLIT,
    (S.INTENT, E.REJECTED): S.REJECTED,
    (S.LIVE, E.CANCEL_REQUESTED): S.CANCELED,
    (S.STUCK, E.CANCEL_REQUESTED): S.CANCELED,
    **{(s, E.ALREADY_ENDED): S.ENDED for s in _HAS_BATCH},
    **{(s, E.HARVEST_CUT): S.ENDED for s in _HAS_BATCH},
    **{(s, E.GROUP_PART_HARVESTED): S.GROUP_HARVESTED for s in _HAS_BATCH},
    **{(s, E.HARVESTED): S.HARVESTED for s in (*_HAS_BATCH, S.GROUP_HARVESTED)},
    **{(s, E.LOST): S.GONE for s in _HAS_BATCH},
    **{(s, E.INVALIDATED): S.SPLIT for s in _HAS_BATCH},
    (S.LIVE, E.OVERDUE): S.STUCK,
    (S.CANCELED, E.OVERDUE): S.STUCK,
    (S.STUCK, E.OVERDUE): S.STUCK,
}

#: States whose unharvested ids are in flight: those with a move out of them (see the module docstring).
IN_FLIGHT: frozenset[SubState] = frozenset(state for state, _ in TRANSITIONS)
#: States with no move out: the sub-batch is settled for good.
TERMINAL: frozenset[SubState] = frozenset(SubState) - IN_FLIGHT


class Phase(StrEnum):
    """What this run is doing with a sub-batch (not persisted; see the module docstring)."""

    CREATING = "creating"  # its create is handed out (a sub-batch planned by this run is born here)
    UNSURE = "unsure"  # a create may have made a batch (or an earlier run's intent): list batches at `due`
    LISTING = "listing"  # in a reconciliation's listing
    LISTING_PARKED = "listing_parked"  # parked unconfirmed, listed beside the others (a batch that fits
    # two intents is never handed to one alone)
    RESEND = "resend"  # a listing proved no batch was made: send the same intent again
    WAITING = "waiting"  # its batch is live: poll it at `due`
    POLLING = "polling"  # a retrieve is handed out
    HARVEST_DUE = "harvest_due"  # its batch ended: harvest it at `due`
    HARVESTING = "harvesting"  # a results stream is handed out
    PARKED = "parked"  # in flight, but this run does nothing more with it (stuck, unconfirmed, cut,
    # stopped, or waiting for the rest of its orphan group)
    SETTLED = "settled"  # its state is terminal

    @classmethod
    def born(cls, state: SubState, *, grouped: bool) -> Phase:
        """The phase of a sub-batch a run reads from the checkpoint in `state`."""
        if state in TERMINAL:
            return cls.SETTLED
        if state is S.GROUP_HARVESTED or (state is S.INTENT and grouped):
            return cls.PARKED  # waits for the rest of its orphan group
        if state is S.INTENT:
            return cls.UNSURE  # its create may have made a batch
        return cls.HARVEST_DUE if state is S.ENDED else cls.WAITING


class Trigger(StrEnum):
    CREATE_SENT = "create_sent"
    CREATED = "created"  # the create returned the batch
    MAYBE_MADE = "maybe_made"  # the create failed in a way that may have made a batch
    LIST_SENT = "list_sent"
    ADOPTED = "adopted"  # the listing found its batch
    GROUPED = "grouped"  # waits for its orphan group's batches (a batchless member, or one harvested)
    ABSENT = "absent"  # the listing proved no batch was made, and it may be sent again
    UNCONFIRMED = "unconfirmed"  # the listing could not settle it: list again later
    GAVE_UP = "gave_up"  # out of tries (creates and listings, or streams): left for a rerun
    POLL_SENT = "poll_sent"
    STILL_LIVE = "still_live"
    ENDED = "ended"
    OVERDUE = "overdue"  # still not ended at its deadline: stuck
    HARVEST_SENT = "harvest_sent"
    CUT = "cut"  # the results stream was cut: stream again later
    STOPPED = "stopped"  # a fatal answer stopped the run
    SETTLED = "settled"  # its state became terminal


P, T = Phase, Trigger

PHASES: dict[tuple[Phase, Trigger], Phase] = {
    (P.RESEND, T.CREATE_SENT): P.CREATING,
    (P.CREATING, T.CREATED): P.WAITING,
    (P.CREATING, T.MAYBE_MADE): P.UNSURE,
    (P.UNSURE, T.LIST_SENT): P.LISTING,
    (P.PARKED, T.LIST_SENT): P.LISTING_PARKED,
    (P.LISTING, T.ADOPTED): P.WAITING,
    (P.LISTING_PARKED, T.ADOPTED): P.WAITING,
    (P.LISTING, T.GROUPED): P.PARKED,
    (P.LISTING_PARKED, T.GROUPED): P.PARKED,
    (P.LISTING, T.ABSENT): P.RESEND,
    (P.LISTING, T.UNCONFIRMED): P.UNSURE,
    (P.LISTING_PARKED, T.UNCONFIRMED): P.PARKED,  # already left for a rerun (and said so)
    (P.LISTING, T.GAVE_UP): P.PARKED,
    (P.WAITING, T.POLL_SENT): P.POLLING,
    (P.POLLING, T.STILL_LIVE): P.WAITING,
    (P.POLLING, T.ENDED): P.HARVEST_DUE,
    (P.POLLING, T.OVERDUE): P.PARKED,
    (P.POLLING, T.STOPPED): P.PARKED,
    (P.HARVEST_DUE, T.HARVEST_SENT): P.HARVESTING,
    (P.HARVESTING, T.CUT): P.HARVEST_DUE,
    (P.HARVESTING, T.GAVE_UP): P.PARKED,
    (P.HARVESTING, T.GROUPED): P.PARKED,
    (P.HARVESTING, T.STOPPED): P.PARKED,
    **{
        (p, T.SETTLED): P.SETTLED
        for p in (P.CREATING, P.LISTING, P.LISTING_PARKED, P.RESEND, P.POLLING, P.HARVESTING, P.PARKED)
    },
}

_SENDS = frozenset({T.CREATE_SENT, T.LIST_SENT, T.POLL_SENT, T.HARVEST_SENT})
#: Phases with an operation handed out and not yet answered: those a send enters.
BUSY: frozenset[Phase] = frozenset(to for (_, trigger), to in PHASES.items() if trigger in _SENDS)


def no_create_while_listing(phases: Iterable[Phase]) -> bool:
    """The run's law: never a create in flight while a listing runs."""
    seen = frozenset(phases)
    return not (P.CREATING in seen and P.LISTING in seen)


class IllegalMove(Exception):
    """A sub-batch was asked to make a move its table does not allow (a bug in the caller): a state
    and an event not in `TRANSITIONS`, or a phase and a trigger not in `PHASES`."""

    def __init__(self, state: SubState | Phase, event: SubEvent | Trigger) -> None:
        table: Mapping[tuple[StrEnum, StrEnum], StrEnum] = PHASES if isinstance(state, Phase) else TRANSITIONS
        word, move = ("phase", "trigger") if isinstance(state, Phase) else ("state", "event")
        allowed = sorted(e.value for (s, e) in table if s is state)
        hint = (
            f"; from {state.value} only: {', '.join(allowed)}" if allowed else f"; {state.value} is terminal"
        )
        super().__init__(f"a sub-batch in {word} {state.value!r} cannot take {move} {event.value!r}{hint}")
        self.state = state
        self.event = event


def next_state(state: SubState, event: SubEvent) -> SubState:
    """The state after `event`, or `IllegalMove`."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalMove(state, event) from None


def next_phase(phase: Phase, trigger: Trigger) -> Phase:
    """The phase after `trigger`, or `IllegalMove`."""
    try:
        return PHASES[(phase, trigger)]
    except KeyError:
        raise IllegalMove(phase, trigger) from None


# -- what the checkpoint holds: the view a batch run starts from (a dry run reads it too) -----------


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
    """The pure view of a job's checkpoint that a run starts from (`adapters.checkpoint.store.Store.checkpoint`)."""

    subs: tuple[SubView, ...] = ()
    final: frozenset[str] = frozenset()
    #: failure classes (None: none) of the job's earliest final outcomes, in arrival order
    first_final: tuple[FailureClass | None, ...] = ()
    #: the highest sub_id the checkpoint holds, of any lane (`subs` may be one lane's)
    top_sub: int = 0
