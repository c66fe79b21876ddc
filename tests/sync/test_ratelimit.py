"""The pure rate-limit core: reading headers, concurrency (AIMD), and the pacer's laws."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.ratelimit import (
    NOTHING,
    Concurrency,
    Cost,
    LimitGroup,
    Pacer,
    PacingPolicy,
    RateLimitReading,
    after_429,
    concurrency_for,
    parse_rfc3339,
)
from judgecore.results.outcomes import Usage

T0 = 1_795_946_400.0  # 2026-11-29T10:00:00Z


def test_parse_rfc3339_accepts_the_forms_the_api_sends():
    assert T0 == parse_rfc3339("2026-11-29T10:00:00Z")
    assert T0 + 0.25 == parse_rfc3339("2026-11-29T10:00:00.250000Z")
    assert T0 == parse_rfc3339("2026-11-29T11:00:00+01:00")
    assert T0 == parse_rfc3339("2026-11-29T10:00:00")  # no offset: UTC
    assert parse_rfc3339("soon") is None
    assert parse_rfc3339("") is None


def test_from_headers_is_case_insensitive_and_tolerates_junk():
    reading = RateLimitReading.from_headers(
        {
            "Anthropic-RateLimit-Output-Tokens-Limit": "80000",
            "anthropic-ratelimit-output-tokens-remaining": "79000",
            "anthropic-ratelimit-output-tokens-reset": "2026-11-29T10:00:00Z",
            "anthropic-ratelimit-requests-limit": "many",
            "anthropic-ratelimit-requests-remaining": "-3",
        }
    )
    assert LimitGroup(limit=80000, remaining=79000, reset=T0) == reading.output_tokens
    assert LimitGroup() == reading.requests
    assert 80000 == reading.otpm
    assert RateLimitReading.from_headers({}).empty


groups = st.builds(
    LimitGroup,
    limit=st.none() | st.integers(1, 10**8),
    remaining=st.none() | st.integers(0, 10**8),
    reset=st.none() | st.floats(0, 4e9, allow_nan=False),
)
readings = st.builds(
    RateLimitReading, requests=groups, input_tokens=groups, output_tokens=groups, tokens=groups
)


@given(readings)
def test_a_reading_survives_the_checkpoint(reading):
    assert reading == RateLimitReading.from_json(reading.to_json())


def test_to_json_names_the_key_the_job_reads():
    assert 8000 == RateLimitReading.for_otpm(8000).to_json()["output_tokens_limit"]


@given(readings)
def test_concurrency_for_any_tier_is_within_bounds(reading):
    assert 4 <= concurrency_for(reading) <= 256


def test_concurrency_scales_with_the_tier():
    assert 16 == concurrency_for(None)
    assert 8 == concurrency_for(RateLimitReading.for_otpm(8000))
    assert 4 == concurrency_for(RateLimitReading.for_otpm(2000))
    assert 40 == concurrency_for(RateLimitReading.for_otpm(40_000))
    assert 256 == concurrency_for(RateLimitReading.for_otpm(2_000_000))
    low_rpm = RateLimitReading(requests=LimitGroup(limit=50), output_tokens=LimitGroup(limit=400_000))
    assert 8 == concurrency_for(low_rpm)


@given(st.integers(1, 10_000))
def test_after_429_lowers_and_never_below_one(c):
    assert after_429(c) == max(1, c // 2)
    assert after_429(c) < c or c == 1


@given(st.lists(st.sampled_from(["429", "ok"]), max_size=200), st.integers(1, 64))
def test_concurrency_stays_between_one_and_its_ceiling(events, ceiling):
    c = Concurrency.start(ceiling)
    now = 0.0
    for e in events:
        now += 1.0
        c = c.on_429(now) if e == "429" else c.on_success()
        assert 1 <= c.limit <= ceiling


def test_a_burst_of_429s_cuts_once_and_successes_win_it_back():
    c = Concurrency.start(16, recover_every=2, cooldown=5.0)
    for _ in range(6):
        c = c.on_429(100.0)
    assert 8 == c.limit
    assert 4 == c.on_429(106.0).limit
    for _ in range(16):
        c = c.on_success()
    assert 16 == c.limit


# --- the pacer ---------------------------------------------------------------------------------------


@given(
    otpm=st.integers(1000, 2_000_000),
    outputs=st.lists(st.integers(1, 2000), min_size=1, max_size=300),
    headroom=st.floats(0.5, 1.0),
    burst=st.floats(0.1, 10.0),
)
def test_pacing_holds_the_output_token_limit(otpm, outputs, headroom, burst):
    """Sending whenever the pacer says so, output tokens over any span from the start stay within
    headroom x the limit, plus one burst and one request's worth of estimate error."""
    policy = PacingPolicy(headroom=headroom, burst_seconds=burst)
    pacer = Pacer.start(RateLimitReading.for_otpm(otpm), 0.0, policy)
    now, spent = 0.0, 0
    rate = headroom * otpm / 60
    for out in outputs:
        cost = pacer.estimate(2000)
        now += pacer.wait(now, cost)
        assert pacer.wait(now, cost) <= 1e-6
        pacer = pacer.admit(now, cost).settle(now, cost, Usage(output_tokens=out))
        spent += out
        allowance = rate * now + rate * burst + 2000
        assert spent <= allowance + 1e-6


@given(otpm=st.integers(6000, 2_000_000), out=st.integers(1, 500), n=st.integers(50, 400))
def test_pacing_uses_at_least_the_headroom_of_the_limit_once_estimates_settle(otpm, out, n):
    """With steady answers, the paced rate converges to headroom x limit (no lost throughput)."""
    policy = PacingPolicy()
    pacer = Pacer.start(RateLimitReading.for_otpm(otpm), 0.0, policy)
    now, spent = 0.0, 0
    for _ in range(n):
        cost = pacer.estimate(2000)
        now += pacer.wait(now, cost)
        pacer = pacer.admit(now, cost).settle(now, cost, Usage(output_tokens=out))
        spent += out
    rate = policy.headroom * otpm / 60
    if now > 0:
        assert spent / now >= 0.99 * rate


def test_estimate_starts_at_max_tokens_then_follows_observed_output():
    pacer = Pacer.start(RateLimitReading.for_otpm(60_000), 0.0)
    assert 256 == pacer.estimate(256).output_tokens
    cost = pacer.estimate(256)
    pacer = pacer.admit(0.0, cost).settle(0.0, cost, Usage(input_tokens=10, output_tokens=40))
    assert 40 == pacer.estimate(256).output_tokens
    assert 10 == pacer.estimate(256).input_tokens


def test_a_reading_clamps_to_what_remains_less_what_is_in_flight():
    pacer = Pacer.start(RateLimitReading.for_otpm(600_000), 0.0)  # 9,500 tokens/s, 19,000 burst
    assert math.isclose(19_000, pacer.output_tokens.level)
    low = RateLimitReading(output_tokens=LimitGroup(limit=600_000, remaining=3000))
    clamped = pacer.observe(0.0, low, in_flight=Cost(output_tokens=1000))
    assert math.isclose(3000 - 500 - 1000, clamped.output_tokens.level)
    plenty = RateLimitReading(output_tokens=LimitGroup(limit=600_000, remaining=600_000))
    assert pacer == pacer.observe(0.0, plenty, in_flight=NOTHING)


def test_a_new_tier_in_the_headers_replaces_the_lane():
    pacer = Pacer.start(RateLimitReading.for_otpm(60_000), 0.0)
    bigger = pacer.observe(0.0, RateLimitReading.for_otpm(120_000), in_flight=NOTHING)
    assert 120_000 == bigger.output_tokens.limit
    assert bigger.output_tokens.level <= pacer.output_tokens.capacity


def test_a_429_blocks_every_send_until_retry_after():
    pacer = Pacer.start(RateLimitReading.for_otpm(60_000), 0.0).on_429(10.0, 3.0, None)
    assert math.isclose(3.0, pacer.wait(10.0, pacer.estimate(10)))
    assert 0.0 == pacer.wait(13.0, pacer.estimate(10))


def test_a_429_without_retry_after_waits_for_the_reset_at_most_a_minute():
    empty = RateLimitReading(output_tokens=LimitGroup(limit=60_000, remaining=0, reset=25.0))
    assert math.isclose(15.0, Pacer().on_429(10.0, None, empty).blocked_until - 10.0)
    far = RateLimitReading(output_tokens=LimitGroup(limit=60_000, remaining=0, reset=1e6))
    assert math.isclose(60.0, Pacer().on_429(10.0, None, far).blocked_until - 10.0)


def test_requests_per_minute_are_paced_too():
    pacer = Pacer.start(
        RateLimitReading(requests=LimitGroup(limit=60)), 0.0, PacingPolicy(headroom=1.0, burst_seconds=1.0)
    )
    now, sent = 0.0, 0
    while now < 60.0:
        cost = pacer.estimate(100)
        now += pacer.wait(now, cost)
        pacer = pacer.admit(now, cost).settle(now, cost, Usage(output_tokens=1))
        sent += 1
    assert sent <= 62


def test_an_unpaced_pacer_never_waits():
    assert 0.0 == Pacer().wait(0.0, Cost(output_tokens=10**9))
