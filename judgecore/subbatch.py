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
"""

from __future__ import annotations

from enum import StrEnum


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
    SPLIT = "split"  # 413: replaced by its halves
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
    (S.LIVE, E.OVERDUE): S.STUCK,
    (S.CANCELED, E.OVERDUE): S.STUCK,
    (S.STUCK, E.OVERDUE): S.STUCK,
}

#: States whose unharvested ids are in flight: those with a move out of them (see the module docstring).
IN_FLIGHT: frozenset[SubState] = frozenset(state for state, _ in TRANSITIONS)
#: States with no move out: the sub-batch is settled for good.
TERMINAL: frozenset[SubState] = frozenset(SubState) - IN_FLIGHT


class IllegalMove(Exception):
    """A sub-batch was asked to make a move the table does not allow (a bug in the caller)."""

    def __init__(self, state: SubState, event: SubEvent) -> None:
        allowed = sorted(e.value for (s, e) in TRANSITIONS if s is state)
        hint = (
            f"; from {state.value} only: {', '.join(allowed)}" if allowed else f"; {state.value} is terminal"
        )
        super().__init__(f"a sub-batch in state {state.value!r} cannot take event {event.value!r}{hint}")
        self.state = state
        self.event = event


def next_state(state: SubState, event: SubEvent) -> SubState:
    """The state after `event`, or `IllegalMove`."""
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise IllegalMove(state, event) from None
