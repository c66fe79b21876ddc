"""One SDK translation for both ports (`adapters.providers.anthropic.sdk_results`): the same answer reads the same on either
route, through the real SDK over the simulator's in-process transport."""

from __future__ import annotations

import asyncio

import anthropic
import httpx2
import pytest

from adapters.providers.anthropic.batch_api import raw_error_from_sdk, raw_result_from_sdk
from adapters.providers.anthropic.sdk_results import error_result, line_result, message_result
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from judgecore.results.outcomes import CONNECT_FAILED, FailureClass, StopDetails, classify

PARAMS = {"model": "claude-opus-4-8", "max_tokens": 256, "messages": [{"role": "user", "content": "grade"}]}


def _sync_error(sim: Simulator) -> anthropic.APIStatusError:
    try:
        sim_client(sim, async_=False, max_retries=0).messages.create(**PARAMS)  # type: ignore[call-overload]
    except anthropic.APIStatusError as exc:
        return exc
    raise AssertionError("the call succeeded")


@pytest.mark.parametrize(
    ("state", "status"),
    [
        ("organization_on_hold", 400),
        ("enforced_spend_limit_reached", 429),
        ("linked_organization_spend_limit_reached", 402),
    ],
)
def test_a_status_error_carries_its_error_code_and_both_ports_read_it_alike(state, status):
    sim = Simulator(Scenario(account_state=state))
    raw = error_result(_sync_error(sim), now=0.0)
    assert ("http_error", status, state) == (raw.kind, raw.status, raw.error_code)
    assert raw == raw_error_from_sdk(_sync_error(sim), now=0.0)
    assert FailureClass.ACCOUNT_STATE == classify(raw).failure


def test_the_sync_port_returns_the_account_state_as_a_value():
    sim = Simulator(Scenario(account_state="contract_spend_limit_reached"))
    raw, _reading, request_id = asyncio.run(AnthropicMessagesApi(sim_client(sim)).create(dict(PARAMS)))
    assert ("contract_spend_limit_reached", 429) == (raw.error_code, raw.status)
    assert request_id is not None and request_id.startswith("req_")


def test_a_batch_line_errored_with_a_code_reads_as_the_http_error_would():
    clock = FakeClock()
    sim = Simulator(
        Scenario(account_state="organization_on_hold", account_state_where={"lines"}), clock=clock
    )
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=[{"custom_id": "a", "params": PARAMS}])
    clock.advance(5)
    (line,) = list(client.messages.batches.results(batch.id))
    raw = line_result(line.result)
    assert ("errored", "invalid_request_error", "organization_on_hold") == (
        raw.kind,
        raw.error_type,
        raw.error_code,
    )
    assert raw == raw_result_from_sdk(line.result)
    assert FailureClass.ACCOUNT_STATE == classify(raw).failure


def test_a_refusal_keeps_its_stop_details_and_only_text_blocks():
    sim = Simulator(Scenario(refusal_partial=True, refusal_category="frontier_llm"))
    message = sim_client(sim, async_=False).messages.create(
        **{**PARAMS, "messages": [{"role": "user", "content": "grade [[sim:refusal]]"}]}  # type: ignore[arg-type]
    )
    raw = message_result(message)
    assert ("refusal", message.content[0].text) == (raw.stop_reason, raw.text)
    assert StopDetails(category="frontier_llm", explanation="This request was declined (frontier_llm).") == (
        raw.stop_details
    )
    assert FailureClass.MODEL_REFUSAL == classify(raw).failure


@pytest.mark.parametrize(
    "exc",
    [
        httpx2.ConnectError("[Errno 111] Connection refused"),
        httpx2.ConnectTimeout("timed out connecting"),
        httpx2.UnsupportedProtocol("no scheme"),
        httpx2.InvalidURL("bad url"),
    ],
)
def test_a_connection_never_made_is_connect_failed_naming_the_base_url_on_both_ports(exc):
    raw = error_result(exc, base_url="http://127.0.0.1:9")
    assert ("connection_error", CONNECT_FAILED) == (raw.kind, raw.error_type)
    assert "http://127.0.0.1:9" in (raw.message or "")
    assert raw == raw_error_from_sdk(exc, "http://127.0.0.1:9")


def test_a_read_timeout_is_a_plain_connection_error():
    raw = error_result(httpx2.ReadTimeout("read timed out"), base_url="http://x")
    assert ("connection_error", None) == (raw.kind, raw.error_type)
    assert "ReadTimeout" in (raw.message or "")
