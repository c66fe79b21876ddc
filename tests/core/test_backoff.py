"""backoff: full jitter under an exponential cap, retry-after a floor, the draw passed in."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import backoff_policies, unit_draws

from judgecore.decide.backoff import BackoffPolicy, backoff

attempts = st.integers(-3, 10_000)


@given(attempts, backoff_policies, unit_draws)
def test_delay_without_retry_after_is_within_the_full_jitter_window(attempt, policy, u):
    window = min(policy.cap, policy.base * 2.0 ** min(max(0, attempt), 200))
    delay = backoff(attempt, None, policy, u)
    assert 0.0 <= delay < window


@given(attempts, backoff_policies, unit_draws, unit_draws)
def test_delay_grows_with_the_draw(attempt, policy, u1, u2):
    low, high = sorted((u1, u2))
    assert backoff(attempt, None, policy, low) <= backoff(attempt, None, policy, high)


@given(st.integers(0, 62), backoff_policies, unit_draws)
def test_window_doubles_until_the_cap(attempt, policy, u):
    """The same draw never waits less at a later attempt."""
    assert backoff(attempt, None, policy, u) <= backoff(attempt + 1, None, policy, u)


@given(attempts, st.floats(min_value=1e-6, max_value=86_400.0), backoff_policies, unit_draws)
def test_retry_after_is_a_floor_whatever_its_size(attempt, retry_after, policy, u):
    delay = backoff(attempt, retry_after, policy, u)
    assert retry_after <= delay <= retry_after + policy.base


def test_an_hour_of_retry_after_is_honoured():
    """Past the 60 s some clients cap at: one hour means one hour."""
    assert 3600.0 <= backoff(0, 3600.0, BackoffPolicy(), 0.5) < 3601.0


@pytest.mark.parametrize("u", [-0.1, 1.0, 1.5, math.nan, math.inf])
def test_draw_outside_unit_interval_is_refused(u):
    with pytest.raises(ValueError):
        backoff(0, None, BackoffPolicy(), u)


@pytest.mark.parametrize(("base", "cap"), [(0.0, 1.0), (-1.0, 1.0), (2.0, 1.0)])
def test_policy_needs_positive_base_not_above_cap(base, cap):
    with pytest.raises(ValueError):
        BackoffPolicy(base=base, cap=cap)
