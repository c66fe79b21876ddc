"""route: sync below the tier-scaled threshold, batch at or above it; force overrides and says so."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import otpms, route_policies

from judgecore.decide.routing import DecideRoute, KeepRoute, RoutePolicy, keep_or_redecide, route

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
    assert r.reason.startswith(f"--force-{force};"), "the reason does not repeat the route it explains"
    # it says what the size alone would do: the other route, or that forcing changed nothing
    assert (f"by size it would go {natural}" in r.reason) == (natural != force)
    assert ("so it would by size too" in r.reason) == (natural == force)


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
    noun = "request" if n == 1 else "requests"
    assert r.reason.startswith(f"{n:,} {noun} {cmp} threshold {r.threshold:,} at OTPM {r.otpm:,}")


@pytest.mark.parametrize(("n", "otpm"), [(-1, None), (5, 0), (5, -100)])
def test_negative_count_or_non_positive_otpm_is_refused(n, otpm):
    with pytest.raises(ValueError):
        route(n, policy=RoutePolicy(), otpm=otpm)


# --- keep_or_redecide: a route is kept only once known --------------------------------------------

forces = st.one_of(st.none(), st.sampled_from(["sync", "batch"]))


@st.composite
def stored_routes(draw: st.DrawFn):
    """A route as an earlier run recorded it: forced, from a tier read or given, or on the assumed tier."""
    n = draw(counts)
    how = draw(st.sampled_from(["forced", "read", "flag", "assumed"]))
    policy = draw(route_policies)
    if how == "forced":
        return route(n, policy=policy, force=draw(st.sampled_from(["sync", "batch"])), otpm=draw(otpms))
    if how == "assumed":
        return route(n, policy=policy)
    return route(n, policy=policy, otpm=draw(otpms), otpm_source=how)


@given(counts, forces, st.booleans())
def test_a_job_with_no_route_yet_decides_one(n, force, answered):
    assert isinstance(keep_or_redecide(None, n=n, force=force, answered=answered), DecideRoute)


def _grew_past(stored, n: int) -> bool:
    """A sync route decided for a job under its threshold, whose job has grown past it."""
    return not stored.forced and stored.path == "sync" and stored.n < stored.threshold <= n


@given(stored_routes(), counts, st.booleans())
def test_a_known_route_is_kept_for_every_rerun_without_a_force(stored, n, answered):
    """Forced, read or given: kept whatever was answered, its count brought up to date (unless a sync
    route's job grew past its threshold: see the test below)."""
    decision = keep_or_redecide(stored, n=n, force=None, answered=answered)
    if stored.known and not _grew_past(stored, n):
        assert KeepRoute(attrs.evolve(stored, n=n)) == decision


@given(stored_routes(), counts)
def test_a_provisional_route_is_decided_again_only_while_nothing_was_answered(stored, n):
    """Decided on the assumed tier: the next run that can read the tier decides again, unless
    something was answered (or a batch created) on it already."""
    if stored.known:
        return
    assert isinstance(keep_or_redecide(stored, n=n, force=None, answered=False), DecideRoute)
    if _grew_past(stored, n):
        return
    assert KeepRoute(attrs.evolve(stored, n=n)) == keep_or_redecide(stored, n=n, force=None, answered=True)


@given(stored_routes(), counts, st.sampled_from(["sync", "batch"]), st.booleans())
def test_a_force_keeps_only_a_route_forced_the_same_way(stored, n, force, answered):
    decision = keep_or_redecide(stored, n=n, force=force, answered=answered)
    if stored.forced and stored.path == force:
        assert KeepRoute(attrs.evolve(stored, n=n)) == decision
    else:
        assert isinstance(decision, DecideRoute)


@given(st.one_of(st.none(), stored_routes()), counts, forces, st.booleans())
def test_a_kept_route_is_the_stored_one_with_the_count_of_now(stored, n, force, answered):
    """Keeping never changes the path, the tier or the reason: only `n` follows the input."""
    decision = keep_or_redecide(stored, n=n, force=force, answered=answered)
    if isinstance(decision, KeepRoute):
        assert stored is not None
        assert attrs.evolve(stored, n=n) == decision.route
        assert decision.route.known or answered


@pytest.mark.parametrize(
    ("source", "forced", "known"),
    [("assumed", False, False), ("assumed", True, True), ("read", False, True), ("flag", False, True)],
)
def test_a_route_is_known_when_forced_read_or_given(source, forced, known):
    r = route(10, policy=RoutePolicy(), otpm=None if source == "assumed" else 4000, otpm_source="read")
    r = attrs.evolve(r, otpm_source=source, forced=forced)
    assert known == r.known


def test_the_bad_key_scenario_decides_again_on_the_tier_read_later():
    """Run 1: the probe got a 401, so a 50-item job went sync on the assumed 400,000 OTPM. Run 2
    reads 4,000 OTPM (threshold 20): the route is decided again, and it is batch."""
    policy = RoutePolicy()
    first = route(50, policy=policy)
    assert ("sync", False) == (first.path, first.known)
    decision = keep_or_redecide(first, n=50, force=None, answered=False)
    assert isinstance(decision, DecideRoute)
    assert "assumed tier" in decision.why
    second = route(50, policy=policy, otpm=4000)
    assert ("batch", 20, True) == (second.path, second.threshold, second.known)


@given(st.integers(1, 1999), st.integers(0, 5000), st.booleans())
def test_a_sync_route_of_a_smaller_job_is_decided_again_once_the_job_grows_past_the_threshold(
    small, more, answered
):
    """A 20-item job kept 'sync (20 requests < threshold)' after 3,000 items joined it: full price
    where batch would halve it. A route read from the tier is decided again once the job is past its
    threshold (whatever was answered on it: the answered items stay final); a forced one is kept."""
    policy = RoutePolicy()
    kept = route(small, policy=policy, otpm=400_000, otpm_source="flag")
    n = small + more
    decision = keep_or_redecide(kept, n=n, force=None, answered=answered)
    if n >= kept.threshold:
        assert isinstance(decision, DecideRoute)
        assert "grew" in decision.why
        assert "batch" == route(n, policy=policy, otpm=400_000, otpm_source="flag").path
    else:
        assert isinstance(decision, KeepRoute)
    forced = route(small, policy=policy, force="sync")
    assert isinstance(keep_or_redecide(forced, n=n, force="sync", answered=answered), KeepRoute)
