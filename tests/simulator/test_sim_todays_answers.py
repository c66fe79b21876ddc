"""The simulator answers as today's API does, read through the real SDK: refusals with `stop_details`,
account states with `error.details.error_code` (what the SDK's `extract_error_code` reads), a slow
body's `request_body_timeout`, a ramp limit."""

from __future__ import annotations

import anthropic
import attrs
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import ACCOUNT_STATES, Scenario
from adapters.simulator.transport import sim_client

from .support import batch_requests, params

# the status each account state answers with, by the SDK's own table (`anthropic/_error_classes.py`)
STATUS = {"invalid_request_error": 400, "rate_limit_error": 429, "billing_error": 402}


def test_a_marked_request_is_refused_with_stop_details_and_no_content(make_sim):
    client = sim_client(make_sim(), async_=False)
    message = client.messages.create(**params("grade me [[sim:refusal]]"))
    assert ("refusal", [], "cyber") == (message.stop_reason, message.content, message.stop_details.category)
    assert "refusal" == message.stop_details.type and message.usage.output_tokens >= 1
    with client.messages.stream(**params("grade me [[sim:refusal]]", max_tokens=20_000)) as stream:
        streamed = stream.get_final_message()  # an empty refusal streams no content block at all
    assert ("refusal", [], message.stop_details) == (
        streamed.stop_reason,
        streamed.content,
        streamed.stop_details,
    )


def test_a_partial_refusal_keeps_the_start_of_its_answer_and_streams_its_stop_details(make_sim):
    sim = make_sim(refusal_partial=True, refusal_category=None)
    client = sim_client(sim, async_=False)
    message = client.messages.create(**params("grade me [[sim:refusal]]"))
    with client.messages.stream(**params("grade me [[sim:refusal]]")) as stream:
        streamed = stream.get_final_message()
    assert "refusal" == message.stop_reason and message.content[0].text
    assert (None, None) == (message.stop_details.category, message.stop_details.explanation)
    assert (message.content[0].text, "refusal") == (streamed.content[0].text, streamed.stop_details.type)


def test_the_refusal_rate_is_a_share_of_answers_on_both_routes(make_sim, clock):
    sim = make_sim(refusal_rate=0.5, batch_seconds=1)
    client = sim_client(sim, async_=False)
    sync = [client.messages.create(**params(f"item {i}")).stop_reason for i in range(40)]
    batch = client.messages.batches.create(requests=batch_requests(40))
    clock.advance(2)
    lines = list(client.messages.batches.results(batch.id))
    by_id = {line.custom_id: line.result.message for line in lines}
    assert 8 <= sync.count("refusal") <= 32
    # the draw is by content: the same request is refused on either route
    assert sync == [by_id[f"r{i}"].stop_reason for i in range(40)]
    assert all(by_id[f"r{i}"].stop_details for i in range(40) if sync[i] == "refusal")


@pytest.mark.parametrize("state", sorted(ACCOUNT_STATES))
def test_an_account_state_answers_with_its_status_and_error_code(make_sim, state):
    sim = make_sim(account_state=state)
    error_type, code, _message = ACCOUNT_STATES[state]
    with pytest.raises(anthropic.APIStatusError) as caught:
        sim_client(sim, async_=False, max_retries=0).messages.create(**params())
    exc = caught.value
    assert (STATUS[error_type], error_type, code) == (exc.status_code, exc.type, exc.error_code)
    assert exc.body["request_id"].startswith("req_")  # type: ignore[index]
    with pytest.raises(anthropic.APIStatusError) as created:
        sim_client(sim, async_=False, max_retries=0).messages.batches.create(requests=batch_requests(2))
    assert code == created.value.error_code
    assert () == sim.billed


def test_a_spend_limit_429_carries_no_retry_after(make_sim):
    sim = make_sim(account_state="enforced_spend_limit_reached")
    with pytest.raises(anthropic.RateLimitError) as caught:
        sim_client(sim, async_=False, max_retries=0).messages.create(**params())
    assert None is caught.value.response.headers.get("retry-after")


def test_account_state_lines_are_errored_with_the_code_and_can_be_fixed_at_runtime(make_sim, clock):
    sim = make_sim(account_state="organization_on_hold", account_state_where={"lines"}, batch_seconds=1)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(3))
    clock.advance(2)
    lines = list(client.messages.batches.results(batch.id))
    assert {"errored"} == {line.result.type for line in lines}
    assert {"organization_on_hold"} == {line.result.error.error.details["error_code"] for line in lines}  # type: ignore[union-attr,index]
    sim.scenario = attrs.evolve(sim.scenario, account_state=None)  # the account is fixed
    assert "end_turn" == client.messages.create(**params()).stop_reason
    assert 1 == len(sim.billed)


def test_a_create_body_above_the_timeout_size_is_a_request_body_timeout(make_sim):
    sim = make_sim(body_timeout_above=2_000)
    client = sim_client(sim, async_=False, max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as caught:
        client.messages.batches.create(requests=batch_requests(40))
    assert "request_body_timeout" == caught.value.error_code
    assert client.messages.batches.create(requests=batch_requests(2)).id.startswith("msgbatch_")


def test_a_ramp_fault_is_a_429_ramp_limit_exceeded_with_retry_after():
    sim = Simulator(Scenario(sync_faults={1: "ramp"}))
    with pytest.raises(anthropic.RateLimitError) as caught:
        sim_client(sim, async_=False, max_retries=0).messages.create(**params())
    assert "ramp_limit_exceeded" == caught.value.error_code
    assert caught.value.response.headers.get("retry-after")
