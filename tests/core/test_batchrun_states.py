"""The sub-batch state table (`judgecore.subbatch`): one table of legal moves, illegal ones raise."""

from __future__ import annotations

import pytest

from judgecore.subbatch import (
    IN_FLIGHT,
    TERMINAL,
    TRANSITIONS,
    IllegalMove,
    SubEvent,
    SubState,
    next_state,
)

S, E = SubState, SubEvent

LEGAL = [
    # (from, event, to)
    (S.INTENT, E.CREATED, S.LIVE),
    (S.INTENT, E.ADOPTED, S.LIVE),
    (S.INTENT, E.ABSENT, S.ORPHAN_RESUBMITTED),
    (S.INTENT, E.GROUPED, S.INTENT),
    (S.INTENT, E.HARVESTED, S.HARVESTED),
    (S.INTENT, E.REFUSED, S.FAILED),
    (S.INTENT, E.TOO_LARGE, S.SPLIT),
    (S.INTENT, E.REJECTED, S.REJECTED),
    (S.LIVE, E.CANCEL_REQUESTED, S.CANCELED),
    (S.STUCK, E.CANCEL_REQUESTED, S.CANCELED),
    (S.LIVE, E.ALREADY_ENDED, S.ENDED),
    (S.STUCK, E.ALREADY_ENDED, S.ENDED),
    (S.CANCELED, E.ALREADY_ENDED, S.ENDED),
    (S.ENDED, E.ALREADY_ENDED, S.ENDED),
    (S.LIVE, E.HARVESTED, S.HARVESTED),
    (S.CANCELED, E.HARVESTED, S.HARVESTED),
    (S.ENDED, E.HARVESTED, S.HARVESTED),
    (S.STUCK, E.HARVESTED, S.HARVESTED),
    (S.GROUP_HARVESTED, E.HARVESTED, S.HARVESTED),
    (S.LIVE, E.GROUP_PART_HARVESTED, S.GROUP_HARVESTED),
    (S.ENDED, E.GROUP_PART_HARVESTED, S.GROUP_HARVESTED),
    (S.CANCELED, E.GROUP_PART_HARVESTED, S.GROUP_HARVESTED),
    (S.STUCK, E.GROUP_PART_HARVESTED, S.GROUP_HARVESTED),
    (S.LIVE, E.HARVEST_CUT, S.ENDED),
    (S.ENDED, E.HARVEST_CUT, S.ENDED),
    (S.CANCELED, E.HARVEST_CUT, S.ENDED),
    (S.STUCK, E.HARVEST_CUT, S.ENDED),
    (S.LIVE, E.OVERDUE, S.STUCK),
    (S.CANCELED, E.OVERDUE, S.STUCK),
    (S.STUCK, E.OVERDUE, S.STUCK),
    (S.LIVE, E.LOST, S.GONE),
    (S.CANCELED, E.LOST, S.GONE),
    (S.ENDED, E.LOST, S.GONE),
    (S.STUCK, E.LOST, S.GONE),
]


@pytest.mark.parametrize(("state", "event", "expected"), LEGAL)
def test_each_legal_move_lands_where_the_table_says(
    state: SubState, event: SubEvent, expected: SubState
) -> None:
    assert expected == next_state(state, event)


def test_the_table_is_exactly_the_legal_moves() -> None:
    assert {(s, e): t for s, e, t in LEGAL} == TRANSITIONS


@pytest.mark.parametrize(
    ("state", "event"), [(s, e) for s in SubState for e in SubEvent if (s, e) not in TRANSITIONS]
)
def test_every_other_move_is_an_illegal_move_naming_state_and_event(state: SubState, event: SubEvent) -> None:
    with pytest.raises(IllegalMove) as info:
        next_state(state, event)
    assert (state, event) == (info.value.state, info.value.event)
    assert state.value in str(info.value) and event.value in str(info.value)


def test_in_flight_states_are_those_with_a_move_out() -> None:
    """The ids of these states are never resent: their batch may still exist and answer for them."""
    expected = {S.INTENT, S.LIVE, S.CANCELED, S.ENDED, S.STUCK, S.GROUP_HARVESTED}
    assert expected == IN_FLIGHT
    assert set(SubState) - expected == TERMINAL


def test_a_terminal_state_names_itself_terminal_in_the_error() -> None:
    with pytest.raises(IllegalMove, match="harvested is terminal"):
        next_state(S.HARVESTED, E.CREATED)


def test_only_grouping_leads_back_to_intent() -> None:
    """An intent is written once; every later state comes from a create, a listing or the batch itself."""
    assert [(S.INTENT, E.GROUPED)] == [k for k, v in TRANSITIONS.items() if v is S.INTENT]
