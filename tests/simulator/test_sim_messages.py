"""POST /v1/messages through the real SDK over the in-process transport: answers, usage, prompt
caching, rate-limit headers, errors and retries."""

from __future__ import annotations

import asyncio

import anthropic
import pytest

from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client

from .support import MODEL, RUBRIC, cached_system, params


def create(client: anthropic.Anthropic, **kw):
    return client.messages.create(**{**params(), **kw})


def test_happy_path_returns_a_scored_message(make_sim):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    message = create(client)
    assert message.type == "message"
    assert message.model == MODEL
    assert message.stop_reason == "end_turn"
    assert message.content[0].text.startswith("Score: ")
    assert message.id.startswith("msg_")
    assert message._request_id.startswith("req_")
    assert 0 < message.usage.output_tokens <= 256
    assert message.usage.cache_read_input_tokens == 0
    assert message.usage.service_tier == "standard"


def test_async_client_gets_the_same_answer(make_sim):
    sim = make_sim()
    sync_text = create(sim_client(sim, async_=False)).content[0].text
    message = asyncio.run(sim_client(sim).messages.create(**params()))
    assert sync_text == message.content[0].text


def test_same_seed_same_answers_and_different_seed_differs(clock):
    def texts(seed: int) -> list[str]:
        client = sim_client(Simulator(Scenario(seed=seed), clock=clock), async_=False)
        return [
            create(client, messages=[{"role": "user", "content": f"q{i}"}]).content[0].text for i in range(8)
        ]

    assert texts(3) == texts(3)
    assert texts(3) != texts(4)


def test_cache_is_written_then_read(make_sim):
    client = sim_client(make_sim(), async_=False)
    first = create(client, system=cached_system())
    second = create(client, system=cached_system(), messages=[{"role": "user", "content": "other"}])
    rubric_tokens = -(-len(RUBRIC.encode()) // 4)
    assert rubric_tokens == first.usage.cache_creation_input_tokens
    assert rubric_tokens == first.usage.cache_creation.ephemeral_5m_input_tokens
    assert first.usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert first.usage.cache_read_input_tokens == 0
    assert rubric_tokens == second.usage.cache_read_input_tokens
    assert second.usage.cache_creation_input_tokens == 0
    assert first.usage.input_tokens < 20


def test_one_hour_ttl_is_reported_and_outlives_five_minutes(make_sim, clock):
    client = sim_client(make_sim(), async_=False)
    first = create(client, system=cached_system("1h"))
    assert first.usage.cache_creation.ephemeral_1h_input_tokens > 0
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 0
    clock.advance(1800)
    assert create(client, system=cached_system("1h")).usage.cache_read_input_tokens > 0


def test_cache_entry_expires_by_the_clock_and_is_refreshed_by_hits(make_sim, clock):
    client = sim_client(make_sim(), async_=False)
    create(client, system=cached_system())
    clock.advance(299)
    assert create(client, system=cached_system()).usage.cache_read_input_tokens > 0  # refreshes
    clock.advance(299)
    assert create(client, system=cached_system()).usage.cache_read_input_tokens > 0
    clock.advance(301)
    expired = create(client, system=cached_system())
    assert expired.usage.cache_read_input_tokens == 0
    assert expired.usage.cache_creation_input_tokens > 0


def test_prefix_below_the_minimum_is_not_cached(make_sim):
    client = sim_client(make_sim(), async_=False)
    short = [{"type": "text", "text": "short rubric", "cache_control": {"type": "ephemeral"}}]
    for _ in range(2):
        usage = create(client, system=short).usage
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)


def test_cache_is_keyed_by_model(make_sim):
    client = sim_client(make_sim(), async_=False)
    create(client, system=cached_system())
    other = create(client, system=cached_system(), model="claude-sonnet-4-6")
    assert other.usage.cache_read_input_tokens == 0


def test_raw_response_exposes_rate_limit_headers(make_sim):
    client = sim_client(make_sim(rpm_limit=50, itpm_limit=30_000, otpm_limit=8_000), async_=False)
    raw = client.messages.with_raw_response.create(**params())
    h = raw.headers
    assert h["anthropic-ratelimit-requests-limit"] == "50"
    assert h["anthropic-ratelimit-requests-remaining"] == "49"
    assert h["anthropic-ratelimit-input-tokens-limit"] == "30000"
    assert h["anthropic-ratelimit-input-tokens-remaining"] == "30000"  # rounded to thousands
    assert h["anthropic-ratelimit-output-tokens-limit"] == "8000"
    assert h["anthropic-ratelimit-requests-reset"].endswith("Z")
    assert "anthropic-ratelimit-tokens-limit" in h
    assert raw.request_id.startswith("req_")
    assert raw.parse().content


def test_default_scenario_advertises_an_output_tier(make_sim):
    raw = sim_client(make_sim(), async_=False).messages.with_raw_response.create(**params())
    assert raw.headers["anthropic-ratelimit-output-tokens-limit"] == "400000"


@pytest.mark.parametrize(
    ("kw", "knobs", "exc", "status", "error_type"),
    [
        ({"max_tokens": 0}, {}, anthropic.BadRequestError, 400, "invalid_request_error"),
        ({"messages": []}, {}, anthropic.BadRequestError, 400, "invalid_request_error"),
        ({"model": "claude-nope-1"}, {}, anthropic.NotFoundError, 404, "not_found_error"),
        ({}, {"reject_all_keys": True}, anthropic.AuthenticationError, 401, "authentication_error"),
        ({}, {"valid_keys": {"sk-other"}}, anthropic.AuthenticationError, 401, "authentication_error"),
        ({}, {"sync_faults": {1: "429"}}, anthropic.RateLimitError, 429, "rate_limit_error"),
        ({}, {"sync_faults": {1: "500"}}, anthropic.InternalServerError, 500, "api_error"),
        ({}, {"sync_faults": {1: "529"}}, anthropic.OverloadedError, 529, "overloaded_error"),
        (
            {"messages": [{"role": "user", "content": "x [[sim:context]]"}]},
            {},
            anthropic.BadRequestError,
            400,
            "invalid_request_error",
        ),
    ],
)
def test_each_error_maps_to_its_sdk_exception(make_sim, kw, knobs, exc, status, error_type):
    client = sim_client(make_sim(**knobs), async_=False, max_retries=0)
    with pytest.raises(exc) as info:
        create(client, **kw)
    err = info.value
    assert status == err.status_code
    assert error_type == err.type
    assert err.request_id.startswith("req_")
    assert err.request_id == err.body["request_id"]


def test_bad_key_is_always_rejected(make_sim):
    client = sim_client(make_sim(), api_key="sk-bad", async_=False)
    with pytest.raises(anthropic.AuthenticationError):
        create(client)


def test_context_marker_says_prompt_is_too_long(make_sim):
    client = sim_client(make_sim(), async_=False)
    with pytest.raises(anthropic.BadRequestError) as info:
        create(client, messages=[{"role": "user", "content": "[[sim:context]]"}])
    assert "prompt is too long:" in info.value.api_message
    assert "> 200000 maximum" in info.value.api_message


def test_scheduled_429_is_retried_by_the_sdk_after_retry_after(make_sim):
    sim = make_sim(sync_faults={1: "drop", 2: "429", 3: "529", 4: "500"}, error_retry_after_ms=1)
    client = sim_client(sim, async_=False, max_retries=4)
    message = create(client)
    assert message.content
    statuses = [e.status for e in sim.message_requests()]
    assert statuses == [0, 429, 529, 500, 200]
    assert sim.message_requests()[0].fault == "drop"


def test_429_carries_retry_after_headers(make_sim):
    client = sim_client(make_sim(sync_faults={1: "429"}, retry_after=2.5), async_=False, max_retries=0)
    with pytest.raises(anthropic.RateLimitError) as info:
        create(client)
    headers = info.value.response.headers
    assert headers["retry-after"] == "3"
    assert float(headers["retry-after-ms"]) <= 50


def test_marker_api_error_fails_once_then_succeeds(make_sim):
    sim = make_sim()
    client = sim_client(sim, async_=False, max_retries=0)
    body = {"messages": [{"role": "user", "content": "q [[sim:api_error]]"}]}
    with pytest.raises(anthropic.InternalServerError):
        create(client, **body)
    assert create(client, **body).content


def test_starred_marker_fails_every_time(make_sim):
    sim = make_sim(error_retry_after_ms=1)
    client = sim_client(sim, async_=False, max_retries=1)
    for _ in range(2):
        with pytest.raises(anthropic.OverloadedError):
            create(client, messages=[{"role": "user", "content": "q [[sim:overloaded*]]"}])
    assert [e.status for e in sim.message_requests()] == [529] * 4


def test_max_tokens_marker_truncates(make_sim):
    message = create(
        sim_client(make_sim(), async_=False),
        max_tokens=40,
        messages=[{"role": "user", "content": "q [[sim:max_tokens]]"}],
    )
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 40


def test_tiny_max_tokens_truncates_naturally(make_sim):
    message = create(sim_client(make_sim(), async_=False), max_tokens=2)
    assert message.stop_reason == "max_tokens"
    assert message.usage.output_tokens == 2


def test_rpm_limit_rejects_then_refills_with_the_clock(make_sim, clock: FakeClock):
    sim = make_sim(rpm_limit=2)
    client = sim_client(sim, async_=False, max_retries=0)
    create(client)
    create(client)
    with pytest.raises(anthropic.RateLimitError) as info:
        create(client)
    assert info.value.response.headers["retry-after"] == "30"
    clock.advance(30)
    assert create(client).content


def test_sdk_retries_through_a_rate_limit_as_time_passes(clock):
    clock.step = 10.0  # every read of the clock moves it on, as if the SDK's sleep took that long
    sim = Simulator(Scenario(rpm_limit=6), clock=clock)
    client = sim_client(sim, async_=False, max_retries=3)
    for _ in range(8):
        create(client)
    assert sim.message_requests()[-1].status == 200


def test_output_tokens_limit_is_charged_by_actual_output(make_sim, clock):
    sim = make_sim(otpm_limit=10)
    client = sim_client(sim, async_=False, max_retries=0)
    first = create(client)  # admitted on a positive bucket, then charged past zero
    assert first.usage.output_tokens > 10
    with pytest.raises(anthropic.RateLimitError) as info:
        create(client)
    wait = int(info.value.response.headers["retry-after"])
    assert (first.usage.output_tokens - 10 + 1) * 6 <= wait
    clock.advance(wait)
    assert create(client).content


def test_count_tokens_matches_usage(make_sim):
    client = sim_client(make_sim(), async_=False)
    counted = client.messages.count_tokens(model=MODEL, messages=params()["messages"])
    assert create(client).usage.input_tokens == counted.input_tokens


def test_count_tokens_counts_the_system_and_refuses_what_the_sdk_params_do_not_hold(make_sim):
    """`messages.count_tokens` takes the SDK's `MessageCountTokensParams`: a system block counts; a
    `max_tokens` (a create parameter) is a 400, as the API answers."""
    client = sim_client(make_sim(), async_=False)
    messages = params()["messages"]
    bare = client.messages.count_tokens(model=MODEL, messages=messages).input_tokens
    with_rubric = client.messages.count_tokens(model=MODEL, messages=messages, system=cached_system())
    assert with_rubric.input_tokens > bare
    with pytest.raises(anthropic.BadRequestError, match="max_tokens: Extra inputs are not permitted"):
        client.messages.count_tokens(model=MODEL, messages=messages, extra_body={"max_tokens": 10})


def test_log_records_content_digest(make_sim):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    create(client)
    create(client)
    create(client, messages=[{"role": "user", "content": "other"}])
    digests = [e.digest for e in sim.message_requests()]
    assert digests[0] == digests[1] != digests[2]
