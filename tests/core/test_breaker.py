"""The one invalid-request breaker both routes feed (judgecore.decide.breaker)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.breaker import Breaker, BreakerPolicy, BreakerState
from judgecore.results.outcomes import FailureClass, Outcome, Status

INVALID = Outcome(status=Status.QUARANTINED, failure=FailureClass.INVALID_REQUEST, reason="invalid")
OK = Outcome(status=Status.SUCCEEDED, failure=None, reason="ok")
RETRY = Outcome(status=Status.RETRY, failure=FailureClass.INFRA_TRANSIENT, reason="overloaded")


def test_a_one_item_job_whose_only_request_is_invalid_trips():
    """need is min(k, total): a 1-item job is judged on its one outcome."""
    b = Breaker.start(1).observe(INVALID)
    assert b.tripped


def test_five_all_invalid_items_trip_and_hold_every_one():
    b = Breaker.start(5)
    held = 0
    for _ in range(5):
        held += b.holds(INVALID)
        b = b.observe(INVALID)
    assert b.tripped
    assert 5 == held
    assert b.holds(INVALID), "once tripped, later invalid outcomes are not recorded either"
    assert not b.holds(OK), "answers already paid for are always recorded"


def test_retriable_outcomes_say_nothing_about_the_payload():
    b = Breaker.start(3).observe(RETRY).observe(RETRY)
    assert BreakerState.DECIDING == b.state
    assert 0 == b.seen


def test_prior_outcomes_from_the_checkpoint_count_first():
    b = Breaker.start(100, [FailureClass.INVALID_REQUEST] * 19, BreakerPolicy(k=20))
    assert b.deciding
    assert b.observe(INVALID).tripped


@given(
    st.lists(st.sampled_from([INVALID, OK, RETRY]), max_size=40),
    st.integers(1, 30),
    st.integers(1, 25),
)
def test_trips_exactly_when_the_first_need_final_outcomes_are_all_invalid(outcomes, total, k):
    b = Breaker.start(total, policy=BreakerPolicy(k=k))
    for o in outcomes:
        b = b.observe(o)
    finals = [o for o in outcomes if o.final]
    need = min(k, total)
    expected = len(finals) >= need and all(o is INVALID for o in finals[:need])
    assert expected == b.tripped
    closed = any(o is not INVALID for o in finals[:need])
    assert closed == (BreakerState.CLOSED == b.state)
