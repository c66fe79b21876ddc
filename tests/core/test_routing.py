"""route: sync below the tier-scaled threshold, batch at or above it; force overrides and says so."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import otpms, route_policies

from judgecore import RoutePolicy, route

counts = st.integers(0, 10**7)


@given(counts, st.one_of(st.none(), otpms), route_policies)
def test_sync_below_threshold_batch_at_or_above(n, otpm, policy):
    r = route(n, policy=policy, otpm=otpm)
    assert ("sync" if n < r.threshold else "batch") == r.path
    assert (n, False) == (r.n, r.forced)


@given(st.one_of(st.none(), otpms), route_policies)
def test_threshold_scales_with_otpm_and_is_never_below_one(otpm, policy):
    r = route(0, policy=policy, otpm=otpm)
    used = policy.assumed_otpm if otpm is None else otpm
    assert max(1, policy.base_threshold * used // policy.reference_otpm) == r.threshold
    assert 1 <= r.threshold


def test_default_policy_threshold_is_2000_at_400k_otpm():
    policy = RoutePolicy()
    assert 2000 == route(0, policy=policy, otpm=400_000).threshold
    assert 500 == route(0, policy=policy, otpm=100_000).threshold
    assert 1 == route(0, policy=policy, otpm=1).threshold
    assert ("sync", "batch") == (route(1999, policy=policy).path, route(2000, policy=policy).path)


@given(counts, counts, st.one_of(st.none(), otpms), route_policies)
def test_route_is_monotone_in_n(n1, n2, otpm, policy):
    """More requests never move a job from batch back to sync."""
    small, large = sorted((n1, n2))
    if route(small, policy=policy, otpm=otpm).path == "batch":
        assert "batch" == route(large, policy=policy, otpm=otpm).path


@given(counts, otpms, otpms, route_policies)
def test_route_is_monotone_in_otpm(n, o1, o2, policy):
    """A higher tier never moves a job from sync to batch (its threshold only grows)."""
    low, high = sorted((o1, o2))
    r_low, r_high = route(n, policy=policy, otpm=low), route(n, policy=policy, otpm=high)
    assert r_low.threshold <= r_high.threshold
    if r_low.path == "sync":
        assert "sync" == r_high.path


@given(counts, st.one_of(st.none(), otpms), st.sampled_from(["sync", "batch"]))
def test_force_overrides_and_the_reason_says_so(n, otpm, force):
    r = route(n, policy=RoutePolicy(), otpm=otpm, force=force)
    natural = route(n, policy=RoutePolicy(), otpm=otpm).path
    assert (force, True) == (r.path, r.forced)
    assert f"forced to {force}" in r.reason
    assert f"would go {natural}" in r.reason


@given(counts, otpms, st.sampled_from(["read", "flag"]))
def test_otpm_source_is_read_or_flag_when_given_and_assumed_otherwise(n, otpm, source):
    policy = RoutePolicy()
    given_ = route(n, policy=policy, otpm=otpm, otpm_source=source)
    assert (otpm, source) == (given_.otpm, given_.otpm_source)
    assert f"({source})" in given_.reason
    assumed = route(n, policy=policy, otpm=None, otpm_source=source)
    assert (policy.assumed_otpm, "assumed") == (assumed.otpm, assumed.otpm_source)
    assert "(assumed)" in assumed.reason


@given(counts, st.one_of(st.none(), otpms))
def test_reason_names_count_threshold_and_comparison(n, otpm):
    r = route(n, policy=RoutePolicy(), otpm=otpm)
    cmp = "<" if r.path == "sync" else ">="
    assert r.reason.startswith(f"{n:,} requests {cmp} threshold {r.threshold:,} at OTPM {r.otpm:,}")


@pytest.mark.parametrize(("n", "otpm"), [(-1, None), (5, 0), (5, -100)])
def test_negative_count_or_non_positive_otpm_is_refused(n, otpm):
    with pytest.raises(ValueError):
        route(n, policy=RoutePolicy(), otpm=otpm)
