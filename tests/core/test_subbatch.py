"""The sub-batch's two machines (`judgecore.run.subbatch`), driven through sequences of events in the manner
of h11's `test_state.py`: the persistent lifecycle (`TRANSITIONS`) and the in-run phase (`PHASES`),
each walk asserting the states reached and that an event out of turn raises `IllegalMove`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import orjson
import pytest

from judgecore.decide.polling import BatchSnapshot
from judgecore.job.items import Item
from judgecore.results.outcomes import RawResult
from judgecore.run.batch import (
    BatchRun,
    BatchSettings,
    Checkpoint,
    Create,
    CreateFailed,
    Listed,
    Reconcile,
    Snapshot,
)
from judgecore.run.subbatch import (
    BUSY,
    IN_FLIGHT,
    TERMINAL,
    TRANSITIONS,
    IllegalMove,
    Phase,
    SubEvent,
    SubState,
    Trigger,
    next_phase,
    next_state,
    no_create_while_listing,
)
from judgecore.wire.requests import RequestTemplate, build_requests

S, E, P, T = SubState, SubEvent, Phase, Trigger
T0 = 1_800_000_000.0
_X = TypeVar("_X")
_Y = TypeVar("_Y")


def walk(step: Callable[[_X, _Y], _X], start: _X, moves: Sequence[_Y]) -> list[_X]:
    """Every state reached from `start` by `moves`, in order (the start first)."""
    reached = [start]
    for move in moves:
        reached.append(step(reached[-1], move))
    return reached


# -- the persistent lifecycle ----------------------------------------------------------------------


def test_a_batch_created_then_stuck_then_ended_is_harvested_and_then_terminal() -> None:
    moves = [E.CREATED, E.OVERDUE, E.OVERDUE, E.ALREADY_ENDED, E.HARVESTED]
    assert [S.INTENT, S.LIVE, S.STUCK, S.STUCK, S.ENDED, S.HARVESTED] == walk(next_state, S.INTENT, moves)
    with pytest.raises(IllegalMove, match="harvested is terminal"):
        next_state(S.HARVESTED, E.CREATED)


def test_a_cut_harvest_stays_ended_until_a_whole_one() -> None:
    moves = [E.CREATED, E.HARVEST_CUT, E.HARVEST_CUT, E.HARVESTED]
    assert [S.INTENT, S.LIVE, S.ENDED, S.ENDED, S.HARVESTED] == walk(next_state, S.INTENT, moves)


def test_an_orphan_group_settles_its_batchless_member_with_the_harvested_ones() -> None:
    assert [S.INTENT, S.INTENT, S.HARVESTED] == walk(next_state, S.INTENT, [E.GROUPED, E.HARVESTED])
    member = walk(next_state, S.INTENT, [E.ADOPTED, E.GROUP_PART_HARVESTED, E.HARVESTED])
    assert [S.INTENT, S.LIVE, S.GROUP_HARVESTED, S.HARVESTED] == member
    with pytest.raises(IllegalMove):  # a harvested batch is never polled again, nor lost
        next_state(S.GROUP_HARVESTED, E.LOST)


def test_a_cancel_reaches_a_live_or_stuck_batch_once() -> None:
    moves = [E.CREATED, E.OVERDUE, E.CANCEL_REQUESTED, E.OVERDUE, E.CANCEL_REQUESTED, E.ALREADY_ENDED]
    expected = [S.INTENT, S.LIVE, S.STUCK, S.CANCELED, S.STUCK, S.CANCELED, S.ENDED]
    assert expected == walk(next_state, S.INTENT, moves)
    with pytest.raises(IllegalMove, match="'canceled' cannot take event 'cancel_requested'"):
        next_state(S.CANCELED, E.CANCEL_REQUESTED)


def test_an_intent_with_no_batch_cannot_end_be_lost_or_be_canceled() -> None:
    for event in (E.OVERDUE, E.LOST, E.CANCEL_REQUESTED, E.ALREADY_ENDED, E.HARVEST_CUT):
        with pytest.raises(IllegalMove, match="from intent only: "):
            next_state(S.INTENT, event)


def test_an_intent_settled_without_a_batch_is_never_created_afterwards() -> None:
    """Refused, split, rejected, proven absent: its ids are free, and it is never a batch again."""
    for event in (E.REFUSED, E.TOO_LARGE, E.REJECTED, E.ABSENT):
        settled = next_state(S.INTENT, event)
        assert settled in TERMINAL
        with pytest.raises(IllegalMove):
            next_state(settled, E.CREATED)


def test_a_lost_batch_is_gone_and_its_results_are_never_harvested() -> None:
    assert [S.INTENT, S.LIVE, S.GONE] == walk(next_state, S.INTENT, [E.CREATED, E.LOST])
    with pytest.raises(IllegalMove, match="gone is terminal"):
        next_state(S.GONE, E.HARVESTED)


def _takes(step: Callable[[_X, _Y], _X], state: _X, move: _Y) -> bool:
    try:
        step(state, move)
    except IllegalMove:
        return False
    return True


def test_what_a_harvest_a_loss_or_a_settled_intent_leaves_takes_no_event_and_the_rest_are_in_flight() -> None:
    """The ids of an in-flight sub-batch are never resent (its batch may still exist and answer for
    them): the states a harvest, a loss or an intent settled without a batch leave are the terminal
    ones and take no event; every state that takes one is in flight."""
    settled = {
        walk(next_state, S.INTENT, [E.CREATED, E.ALREADY_ENDED, E.HARVESTED])[-1],
        walk(next_state, S.INTENT, [E.CREATED, E.LOST])[-1],
        *(next_state(S.INTENT, event) for event in (E.REFUSED, E.TOO_LARGE, E.REJECTED, E.ABSENT)),
    }
    assert settled == TERMINAL
    for state in SubState:
        moves = [event for event in SubEvent if _takes(next_state, state, event)]
        assert (state in IN_FLIGHT) == bool(moves) == (state not in settled), (state, moves)


def test_only_grouping_leads_back_to_intent() -> None:
    """An intent is written once; every later state comes from a create, a listing or the batch itself."""
    assert [(S.INTENT, E.GROUPED)] == [k for k, v in TRANSITIONS.items() if v is S.INTENT]


# -- the in-run phase --------------------------------------------------------------------------------


def test_a_created_batch_is_polled_until_it_ends_then_harvested() -> None:
    moves = [T.CREATED, T.POLL_SENT, T.STILL_LIVE, T.POLL_SENT, T.ENDED, T.HARVEST_SENT, T.SETTLED]
    expected = [P.CREATING, P.WAITING, P.POLLING, P.WAITING, P.POLLING, P.HARVEST_DUE, P.HARVESTING]
    assert [*expected, P.SETTLED] == walk(next_phase, P.CREATING, moves)
    with pytest.raises(IllegalMove, match="settled is terminal"):
        next_phase(P.SETTLED, T.POLL_SENT)


def test_a_create_that_may_have_made_a_batch_is_resent_only_after_a_listing_proves_it_absent() -> None:
    moves = [T.MAYBE_MADE, T.LIST_SENT, T.UNCONFIRMED, T.LIST_SENT, T.ABSENT, T.CREATE_SENT]
    expected = [P.CREATING, P.UNSURE, P.LISTING, P.UNSURE, P.LISTING, P.RESEND, P.CREATING]
    assert expected == walk(next_phase, P.CREATING, moves)
    with pytest.raises(IllegalMove, match="'unsure' cannot take trigger 'create_sent'; from unsure only: "):
        next_phase(P.UNSURE, T.CREATE_SENT)


def test_an_intent_left_for_a_rerun_is_listed_with_the_others_but_stays_parked() -> None:
    moves = [T.LIST_SENT, T.GAVE_UP, T.LIST_SENT, T.UNCONFIRMED, T.LIST_SENT, T.ADOPTED]
    expected = [P.UNSURE, P.LISTING, P.PARKED, P.LISTING_PARKED, P.PARKED, P.LISTING_PARKED, P.WAITING]
    assert expected == walk(next_phase, P.UNSURE, moves)
    with pytest.raises(IllegalMove):  # out of tries: never resent by this run
        next_phase(P.LISTING_PARKED, T.ABSENT)


def test_a_cut_stream_is_streamed_again_then_left_for_a_rerun() -> None:
    moves = [T.CUT, T.HARVEST_SENT, T.GAVE_UP]
    assert [P.HARVESTING, P.HARVEST_DUE, P.HARVESTING, P.PARKED] == walk(next_phase, P.HARVESTING, moves)
    with pytest.raises(IllegalMove):  # parked: this run never hands it out again
        next_phase(P.PARKED, T.HARVEST_SENT)


def test_an_answer_to_nothing_handed_out_is_an_illegal_move() -> None:
    for phase, trigger in (
        (P.WAITING, T.ENDED),
        (P.HARVEST_DUE, T.CUT),
        (P.UNSURE, T.ADOPTED),
        (P.RESEND, T.CREATED),
    ):
        with pytest.raises(IllegalMove) as info:
            next_phase(phase, trigger)
        assert (phase, trigger) == (info.value.state, info.value.event)


def test_a_phase_a_send_enters_is_busy_and_takes_no_second_send() -> None:
    """One request out per sub-batch at a time: whatever a send leads to is busy, and a busy phase
    takes no send until that request's answer has moved it on."""
    sends = [T.CREATE_SENT, T.LIST_SENT, T.POLL_SENT, T.HARVEST_SENT]
    entered = {next_phase(p, t) for p in Phase for t in sends if _takes(next_phase, p, t)}
    assert entered == BUSY
    assert [] == [(p, t) for p in BUSY for t in sends if _takes(next_phase, p, t)]


def test_a_run_reads_each_checkpointed_state_into_its_phase() -> None:
    born = {s: Phase.born(s, grouped=False) for s in SubState}
    assert P.UNSURE == born[S.INTENT]  # its create may have made a batch: listed first
    assert P.PARKED == Phase.born(S.INTENT, grouped=True)  # settled with its group
    assert (P.WAITING, P.WAITING, P.WAITING) == (born[S.LIVE], born[S.STUCK], born[S.CANCELED])
    assert (P.HARVEST_DUE, P.PARKED) == (born[S.ENDED], born[S.GROUP_HARVESTED])
    assert {P.SETTLED} == {born[s] for s in TERMINAL}


def test_no_create_while_listing_is_the_law_over_phases() -> None:
    assert no_create_while_listing([P.CREATING, P.CREATING, P.POLLING, P.HARVESTING])
    assert no_create_while_listing([P.LISTING, P.LISTING_PARKED, P.UNSURE, P.WAITING])
    assert not no_create_while_listing([P.WAITING, P.CREATING, P.LISTING])


# -- the phases the batch machine itself goes through --------------------------------------------


def _requests(n: int):  # type: ignore[no-untyped-def]
    template = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=64, rubric="Rate.", path="batch")
    items = [
        Item(id=f"i{k}", line=k + 1, messages_json=orjson.dumps([{"role": "user", "content": f"{k}"}]))
        for k in range(n)
    ]
    return build_requests(items, template)


def test_the_batch_run_moves_a_create_lost_in_transit_through_a_listing_to_its_resend() -> None:
    run = BatchRun.start(Checkpoint(), requests=_requests(3), settings=BatchSettings(), now=T0)
    run, _ = run.advance(T0)
    assert (P.CREATING,) == run.phases
    run = run.on(CreateFailed(1, RawResult(kind="connection_error", message="reset"), T0 + 1, 0.0))
    assert (P.UNSURE,) == run.phases
    run, actions = run.advance(T0 + 1)
    assert [Reconcile] == [type(a) for a in actions if isinstance(a, Create | Reconcile)]
    assert (P.LISTING,) == run.phases
    run = run.on(Listed((), True, T0 + 2))
    assert (P.RESEND,) == run.phases
    run, actions = run.advance(T0 + 2)
    assert [True] == [a.written for a in actions if isinstance(a, Create)]
    assert (P.CREATING,) == run.phases


def test_the_batch_run_refuses_an_answer_to_an_operation_it_never_handed_out() -> None:
    run = BatchRun.start(Checkpoint(), requests=_requests(2), settings=BatchSettings(), now=T0)
    run, _ = run.advance(T0)  # sub-batch 1's create is in flight: it was never polled
    snap = BatchSnapshot(id="b1", status="in_progress", created_at=T0, expires_at=T0 + 86_400)
    with pytest.raises(IllegalMove, match="'creating' cannot take trigger"):
        run.on(Snapshot(1, snap, T0 + 1))
