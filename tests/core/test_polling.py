"""next_poll_action: wait (never past the deadline), harvest once ended, overdue past expires_at + grace."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from strategies import batch_snapshots, epoch_times, poll_policies, request_counts

from judgecore.decide.polling import BatchSnapshot, Harvest, Overdue, PollIn, PollPolicy, next_poll_action

live = st.sampled_from(["in_progress", "canceling"])
# `now` anywhere from well before the batch was created to well after its deadline
offsets = st.floats(min_value=-86_400.0, max_value=5 * 86_400.0)


@given(batch_snapshots(status=live), offsets, poll_policies)
def test_a_wait_never_reaches_past_the_deadline_nor_the_interval(batch, offset, policy):
    now = batch.created_at + offset
    action = next_poll_action(now, batch, policy)
    if isinstance(action, PollIn):
        assert 0.0 <= action.seconds <= policy.interval
        assert now + action.seconds <= batch.expires_at + policy.grace


@given(batch_snapshots(status=live), epoch_times, poll_policies)
def test_a_wait_never_reaches_past_the_deadline_for_any_time(batch, now, policy):
    action = next_poll_action(now, batch, policy)
    if isinstance(action, PollIn):
        assert 0.0 <= action.seconds <= policy.interval
        assert now + action.seconds <= batch.expires_at + policy.grace


@given(batch_snapshots(status=live), offsets, poll_policies)
def test_live_batch_waits_until_the_deadline_then_is_overdue(batch, offset, policy):
    now = batch.created_at + offset
    deadline = batch.expires_at + policy.grace
    expected = Overdue(batch.id, deadline) if now >= deadline else None
    action = next_poll_action(now, batch, policy)
    if expected is None:
        assert isinstance(action, PollIn)
    else:
        assert expected == action


@example(expires=85_875_007.81202455, now=15_347_132.058405451, grace=0.0)  # d - now rounds up
@given(
    st.floats(min_value=1e-3, max_value=1e9),
    st.floats(min_value=0.0, max_value=1e9),
    st.floats(min_value=0.0, max_value=1e4),
)
def test_the_last_wait_lands_on_or_before_the_deadline_despite_float_rounding(expires, now, grace):
    """When the deadline is within one interval, `now + seconds` must not round past it."""
    batch = BatchSnapshot(id="b", status="in_progress", created_at=0.0, expires_at=expires)
    policy = PollPolicy(interval=2e9, grace=grace)
    action = next_poll_action(now, batch, policy)
    if now < expires + grace:
        assert isinstance(action, PollIn)
        assert now + action.seconds <= expires + grace


@given(batch_snapshots(status=st.just("ended")), offsets, poll_policies)
def test_ended_batch_is_harvested_whatever_the_time(batch, offset, policy):
    assert Harvest(batch.id) == next_poll_action(batch.created_at + offset, batch, policy)


@given(batch_snapshots(status=live), offsets, poll_policies, request_counts)
def test_counts_are_never_consulted(batch, offset, policy, counts):
    """processing=N until the end says nothing about a stall: only the clock bounds a wait."""
    now = batch.created_at + offset
    assert next_poll_action(now, batch, policy) == next_poll_action(
        now, attrs.evolve(batch, counts=counts), policy
    )


@given(offsets, poll_policies)
def test_canceling_is_treated_like_in_progress(offset, policy):
    base = BatchSnapshot(id="b", status="in_progress", created_at=0.0, expires_at=86_400.0)
    assert next_poll_action(offset, base, policy) == next_poll_action(
        offset, attrs.evolve(base, status="canceling"), policy
    )


@given(st.floats(min_value=0.0, max_value=1799.0))  # 86,400 + late must stay below the deadline in floats
def test_expires_at_in_the_past_still_gets_grace(late):
    """A batch found past expires_at (a resumed run) is waited on for the grace, not declared overdue."""
    batch = BatchSnapshot(id="b", status="in_progress", created_at=0.0, expires_at=86_400.0)
    action = next_poll_action(86_400.0 + late, batch, PollPolicy())
    assert isinstance(action, PollIn)
    assert pytest.approx(min(60.0, 1800.0 - late)) == action.seconds


def test_at_the_deadline_the_wait_is_over():
    """At exactly expires_at + grace the batch is overdue: a PollIn(0) there would spin a clock that
    does not move on its own (a fake one) forever."""
    batch = BatchSnapshot(id="b", status="in_progress", created_at=0.0, expires_at=100.0)
    policy = PollPolicy(interval=60.0, grace=10.0)
    assert Overdue("b", 110.0) == next_poll_action(110.0, batch, policy)
    assert Overdue("b", 110.0) == next_poll_action(110.001, batch, policy)
    assert PollIn(10.0) == next_poll_action(100.0, batch, policy)
    assert PollIn(60.0) == next_poll_action(0.0, batch, policy)


@pytest.mark.parametrize(("interval", "grace"), [(0.0, 1.0), (-1.0, 1.0), (1.0, -0.5)])
def test_poll_policy_needs_positive_interval_and_non_negative_grace(interval, grace):
    with pytest.raises(ValueError):
        PollPolicy(interval=interval, grace=grace)


def test_fractional_intervals_are_kept():
    batch = BatchSnapshot(id="b", status="in_progress", created_at=0.0, expires_at=100.0)
    assert PollIn(0.2) == next_poll_action(1.0, batch, PollPolicy(interval=0.2, grace=0.0))
