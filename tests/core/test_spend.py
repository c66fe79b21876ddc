"""Spend and the budget's admission rule (judgecore.decide.spend)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.spend import Budget, all_sync_cost, answer_cost, request_bound
from judgecore.results.outcomes import Usage
from judgecore.wire.models import price_for

SONNET = DEFAULT_PRICES["claude-sonnet-4-6"]


def test_batch_answers_cost_half_and_cache_tiers_are_priced():
    from judgecore.results.outcomes import Usage

    u = Usage(input_tokens=1_000_000, output_tokens=0)
    assert 3.0 == answer_cost(u, SONNET, "sync")
    assert 1.5 == answer_cost(u, SONNET, "batch")
    assert 3.0 == all_sync_cost(u, SONNET)
    assert math.isclose(3.0 * 1.25, answer_cost(Usage(cache_creation_input_tokens=1_000_000), SONNET, "sync"))
    assert math.isclose(0.3, answer_cost(Usage(cache_read_input_tokens=1_000_000), SONNET, "sync"))


def test_request_bound_covers_a_full_max_tokens_answer():
    bound = request_bound(request_bytes=3000, cached_bytes=0, max_tokens=1000, price=SONNET, route="sync")
    assert math.isclose((1000 * 3.0 + 1000 * 15.0) / 1e6, bound)


def test_without_a_cap_everything_is_admitted():
    assert Budget(cap=None).admits(1e12)


@given(
    cap=st.floats(0, 100),
    bounds=st.lists(st.floats(0, 10), max_size=30),
    shares=st.lists(st.floats(0, 1), max_size=30),
)
def test_admitted_sends_never_exceed_the_cap_whatever_they_cost_within_their_bound(cap, bounds, shares):
    """The admission rule: admit only what fits; each answer costs at most its bound."""
    b = Budget(cap=cap)
    in_flight: list[float] = []
    for bound in bounds:
        if b.admits(bound):
            b = b.reserve(bound)
            in_flight.append(bound)
        assert b.spent + b.reserved <= cap + 1e-9
    for bound, share in zip(in_flight, shares + [1.0] * len(in_flight), strict=False):
        b = b.settle(bound, bound * share)
    assert b.spent <= cap + 1e-9


@given(cap=st.floats(0, 50), bounds=st.lists(st.floats(0, 10), max_size=30))
def test_fit_is_the_longest_prefix_that_fits(cap, bounds):
    b = Budget(cap=cap)
    n = b.fit(tuple(bounds))
    assert sum(bounds[:n]) <= cap
    assert n == len(bounds) or sum(bounds[: n + 1]) > cap


usages = st.builds(
    lambda i, o, w, r: Usage(
        input_tokens=i, output_tokens=o, cache_creation_input_tokens=w, cache_read_input_tokens=r
    ),
    st.integers(0, 10**6),
    st.integers(0, 10**5),
    st.integers(0, 10**5),
    st.integers(0, 10**6),
)


@given(st.lists(st.tuples(st.sampled_from(["sync", "batch"]), usages), max_size=30))
def test_spend_sums_every_billed_answer_and_batch_never_costs_more_than_all_sync(answers):
    from judgecore.decide.spend import spend_of

    s = spend_of(answers, SONNET)
    assert math.isclose(sum(answer_cost(u, SONNET, r) for r, u in answers), s.spent, abs_tol=1e-12)
    assert len(answers) == s.answers
    assert s.spent <= s.all_sync + 1e-12


def test_a_fable_5_1_cache_read_costs_a_fortieth_of_input():

    fable = price_for("claude-fable-5-1")
    usage = Usage(input_tokens=0, output_tokens=0, cache_read_input_tokens=1_000_000)
    assert 0.25 == pytest.approx(answer_cost(usage, fable, "sync"))
    assert 1.0 == pytest.approx(answer_cost(usage, price_for("claude-fable-5"), "sync"))


def test_a_haiku_5_5_request_that_may_be_over_100k_tokens_is_bounded_at_the_upper_tier():

    haiku = price_for("claude-haiku-5-5")
    short = request_bound(request_bytes=3_000, cached_bytes=0, max_tokens=1000, price=haiku, route="sync")
    long = request_bound(request_bytes=300_003, cached_bytes=0, max_tokens=1000, price=haiku, route="sync")
    assert (1000 * 0.10 + 1000 * 0.50) / 1e6 == pytest.approx(short)
    assert (100_001 * 0.50 + 1000 * 2.50) / 1e6 == pytest.approx(long)


def test_the_rounds_a_budget_takes_grow_as_answers_cost_less_of_their_bound():
    """A cap of 58 bounds whose answers cost 8% of their bound takes about 50 rounds of batches (as a
    3,000-item job capped at $0.50 did); at 30% of the bound, far fewer; with no estimate, unknown."""
    from judgecore.decide.spend import Expect, cut_line, rounds_to_spend

    assert 45 <= (rounds_to_spend(0.5, 0.0086, 0.00066) or 0) <= 60
    assert (rounds_to_spend(0.5, 0.0086, 0.0026) or 0) < 15
    assert rounds_to_spend(0.5, 0.0086, 0.0) is None
    assert 0 == rounds_to_spend(0.005, 0.0086, 0.001), "not even one request fits"
    tight = cut_line(fit=58, of=3000, room=0.5, bound=0.0086, expect=Expect(per_request=0.00066, weight=12))
    assert tight is not None and "from 12 answers" in tight and "--max-tokens" in tight
    assert cut_line(fit=58, of=3000, room=0.5, bound=0.0086, expect=Expect(per_request=0.008)) is None, (
        "a budget spent in a round or three says nothing"
    )
