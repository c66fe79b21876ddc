"""Recorded Anthropic payloads (tests/samples/anthropic/) replayed through the provider's translation:
each is first checked to be what the SDK's own types accept, then read as judgecore reads it."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import anthropic
import httpx
import orjson
import pytest
from anthropic.types import ErrorResponse
from anthropic.types.messages import MessageBatch, MessageBatchIndividualResponse

from adapters.providers.anthropic.batch_api import snapshot_from_sdk
from adapters.providers.anthropic.sdk_results import error_result, line_result, result_line
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import FailureClass, Status, Usage, classify

SAMPLES = Path(__file__).resolve().parents[1] / "samples" / "anthropic"
LINES = (SAMPLES / "results.jsonl").read_bytes().splitlines()


def _at(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


@pytest.mark.parametrize("line", LINES, ids=lambda line: orjson.loads(line)["custom_id"])
def test_every_recorded_line_is_a_line_the_sdk_accepts(line):
    MessageBatchIndividualResponse.model_validate(orjson.loads(line))


@pytest.mark.parametrize(
    ("custom_id", "status", "failure"),
    [
        ("ok-1", Status.SUCCEEDED, None),
        ("long-1", Status.MISS, FailureClass.MODEL_TRUNCATION),
        ("bad-1", Status.QUARANTINED, FailureClass.INVALID_REQUEST),
        ("busy-1", Status.RETRY, FailureClass.INFRA_TRANSIENT),
        ("gone-1", Status.RETRY, FailureClass.NOT_RUN),
        ("late-1", Status.RETRY, FailureClass.NOT_RUN),
    ],
)
def test_each_results_line_reads_as_its_outcome(custom_id, status, failure):
    (line,) = [line for line in LINES if orjson.loads(line)["custom_id"] == custom_id]
    got_id, outcome = result_line(line)
    assert (got_id, outcome.status, outcome.failure) == (custom_id, status, failure)
    # the SDK's parsed object, through the port's translation, means the same
    parsed = MessageBatchIndividualResponse.model_validate(orjson.loads(line))
    assert classify(line_result(parsed.result)) == outcome


def test_a_succeeded_line_keeps_its_text_model_and_four_token_counts():
    _, outcome = result_line(LINES[0])
    assert outcome.text == "Score: 4"
    assert outcome.model == "claude-sonnet-4-5-20250929"
    assert outcome.usage == Usage(
        input_tokens=1203, output_tokens=7, cache_creation_input_tokens=0, cache_read_input_tokens=1024
    )


def test_an_errored_line_keeps_the_api_s_words():
    _, outcome = result_line(LINES[2])
    assert outcome.error_type == "invalid_request_error"
    assert "max_tokens: 100000 > 64000" in (outcome.error_message or "")


def _rate_limited() -> tuple[anthropic.RateLimitError, dict]:
    sample = orjson.loads((SAMPLES / "rate_limit_429.json").read_bytes())
    ErrorResponse.model_validate(sample["body"])
    request = httpx.Request("POST", "https://api.anthropic.com/v1/messages")
    response = httpx.Response(
        sample["status"], headers=sample["headers"], json=sample["body"], request=request
    )
    message = sample["body"]["error"]["message"]
    return anthropic.RateLimitError(message, response=response, body=sample["body"]), sample


def test_a_429_is_a_rate_limit_retried_after_the_seconds_it_names():
    error, _ = _rate_limited()
    outcome = classify(error_result(error, now=0.0))
    assert (outcome.status, outcome.failure) == (Status.RETRY, FailureClass.RATE_LIMIT)
    assert outcome.retry_after == 17.0
    assert outcome.error_type == "rate_limit_error"


def test_the_429_s_rate_limit_headers_read_as_a_reading():
    _, sample = _rate_limited()
    reading = RateLimitReading.from_headers(sample["headers"])
    assert (reading.requests.limit, reading.requests.remaining) == (50, 0)
    assert (reading.output_tokens.limit, reading.output_tokens.remaining) == (8000, 0)
    assert reading.output_tokens.reset == _at("2026-12-03T21:00:17+00:00")
    assert reading.input_tokens.empty


def test_an_ended_batch_object_reads_as_a_snapshot():
    batch = MessageBatch.model_validate(orjson.loads((SAMPLES / "batch_ended.json").read_bytes()))
    snapshot = snapshot_from_sdk(batch)
    assert snapshot.id == "msgbatch_013Zva2CMHLNnXjNJJKqJ2EF"
    assert snapshot.status == "ended"
    assert not snapshot.live
    counts = snapshot.counts
    assert (counts.succeeded, counts.errored, counts.canceled, counts.expired) == (2, 2, 1, 1)
    assert snapshot.created_at == _at("2026-12-02T18:37:24.100435+00:00")
    assert snapshot.expires_at - snapshot.created_at == 24 * 3600
    assert snapshot.ended_at == _at("2026-12-02T18:57:24.100435+00:00")
