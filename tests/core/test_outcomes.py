"""classify: every row of the failure taxonomy, as one table, plus the laws that hold for any result."""

from __future__ import annotations

import pytest
from hypothesis import given
from strategies import raw_results, succeeded_results

from judgecore import FailureClass, RawResult, Status, Usage, classify

F = FailureClass
USAGE = Usage(input_tokens=10, output_tokens=5)


def ok(stop_reason="end_turn"):
    return RawResult(kind="succeeded", text="Score: 4", stop_reason=stop_reason, model="m", usage=USAGE)


def errored(error_type, message=None, retry_after=None):
    return RawResult(kind="errored", error_type=error_type, message=message, retry_after=retry_after)


def http(status, message=None, error_type=None, retry_after=None):
    return RawResult(
        kind="http_error", status=status, message=message, error_type=error_type, retry_after=retry_after
    )


CONTEXT_MSG = "prompt is too long: 212345 tokens > 200000 maximum"
CUT_MSG = "Unexpected end of JSON input"

# (case name, raw result, expected status, expected failure class)
TAXONOMY = [
    ("batch succeeded", ok(), Status.SUCCEEDED, None),
    ("sync succeeded, stop_sequence", ok("stop_sequence"), Status.SUCCEEDED, None),
    ("succeeded at max_tokens", ok("max_tokens"), Status.MISS, F.MODEL_TRUNCATION),
    (
        "errored: prompt is too long",
        errored("invalid_request_error", CONTEXT_MSG),
        Status.MISS,
        F.MODEL_CONTEXT,
    ),
    (
        "errored: context length",
        errored("invalid_request_error", "input exceeds the context window"),
        Status.MISS,
        F.MODEL_CONTEXT,
    ),
    ("sync 400: prompt is too long", http(400, CONTEXT_MSG), Status.MISS, F.MODEL_CONTEXT),
    (
        "sync 400: maximum context length",
        http(400, "This model's maximum context length is 200000"),
        Status.MISS,
        F.MODEL_CONTEXT,
    ),
    (
        "errored: other invalid request",
        errored("invalid_request_error", "messages: roles must alternate"),
        Status.QUARANTINED,
        F.INVALID_REQUEST,
    ),
    (
        "errored: invalid request, no message",
        errored("invalid_request_error"),
        Status.QUARANTINED,
        F.INVALID_REQUEST,
    ),
    (
        "sync 400: other",
        http(400, "max_tokens: must be at most 64000"),
        Status.QUARANTINED,
        F.INVALID_REQUEST,
    ),
    ("sync 413 for one request", http(413, "request_too_large"), Status.QUARANTINED, F.INVALID_REQUEST),
    ("sync 422", http(422, "unprocessable"), Status.QUARANTINED, F.INVALID_REQUEST),
    ("errored: api_error", errored("api_error"), Status.RETRY, F.INFRA_TRANSIENT),
    ("errored: overloaded_error", errored("overloaded_error"), Status.RETRY, F.INFRA_TRANSIENT),
    ("errored: timeout_error", errored("timeout_error"), Status.RETRY, F.INFRA_TRANSIENT),
    ("errored: unknown type", errored("brand_new_error"), Status.RETRY, F.INFRA_TRANSIENT),
    ("sync 500", http(500), Status.RETRY, F.INFRA_TRANSIENT),
    ("sync 502", http(502), Status.RETRY, F.INFRA_TRANSIENT),
    ("sync 503", http(503), Status.RETRY, F.INFRA_TRANSIENT),
    ("sync 504", http(504), Status.RETRY, F.INFRA_TRANSIENT),
    ("sync 529 overloaded", http(529, error_type="overloaded_error"), Status.RETRY, F.INFRA_TRANSIENT),
    (
        "connection reset",
        RawResult(kind="connection_error", message="connection reset by peer"),
        Status.RETRY,
        F.INFRA_TRANSIENT,
    ),
    (
        "connection timeout",
        RawResult(kind="connection_error", message="read timed out"),
        Status.RETRY,
        F.INFRA_TRANSIENT,
    ),
    ("sync 400: JSON cut off in transit", http(400, CUT_MSG), Status.RETRY, F.INFRA_TRANSIENT),
    (
        "sync 400: body truncated",
        http(400, "The request body was truncated"),
        Status.RETRY,
        F.INFRA_TRANSIENT,
    ),
    ("errored: rate_limit_error", errored("rate_limit_error", retry_after=30.0), Status.RETRY, F.RATE_LIMIT),
    ("sync 429", http(429, retry_after=3600.0), Status.RETRY, F.RATE_LIMIT),
    ("canceled", RawResult(kind="canceled"), Status.RETRY, F.NOT_RUN),
    ("expired", RawResult(kind="expired"), Status.RETRY, F.NOT_RUN),
    ("sync 401", http(401, error_type="authentication_error"), Status.FATAL, F.FATAL_CONFIG),
    ("sync 403", http(403, error_type="permission_error"), Status.FATAL, F.FATAL_CONFIG),
    (
        "sync 404 for the model",
        http(404, "model: claude-nope", error_type="not_found_error"),
        Status.FATAL,
        F.FATAL_CONFIG,
    ),
    ("errored: authentication_error", errored("authentication_error"), Status.FATAL, F.FATAL_CONFIG),
    ("errored: not_found_error", errored("not_found_error"), Status.FATAL, F.FATAL_CONFIG),
]


@pytest.mark.parametrize(
    ("raw", "status", "failure"), [row[1:] for row in TAXONOMY], ids=[row[0] for row in TAXONOMY]
)
def test_every_taxonomy_row_is_classified(raw, status, failure):
    outcome = classify(raw)
    assert (status, failure) == (outcome.status, outcome.failure)
    assert (status in {Status.SUCCEEDED, Status.MISS, Status.QUARANTINED}) == outcome.final


def test_truncated_answer_keeps_its_text():
    outcome = classify(ok("max_tokens"))
    assert ("Score: 4", "max_tokens", "m", USAGE) == (
        outcome.text,
        outcome.stop_reason,
        outcome.model,
        outcome.usage,
    )


@pytest.mark.parametrize(
    "raw", [errored("rate_limit_error", retry_after=3600.0), http(429, retry_after=3600.0)]
)
def test_rate_limit_keeps_retry_after_as_the_floor_hint(raw):
    assert 3600.0 == classify(raw).retry_after


@pytest.mark.parametrize("kind", ["canceled", "expired"])
def test_not_run_carries_no_delay(kind):
    """Canceled or expired requests never ran and were not billed: nothing to back off from."""
    outcome = classify(RawResult(kind=kind))
    assert None is outcome.retry_after
    assert "not billed" in outcome.reason


@given(raw_results)
def test_retry_after_is_kept_only_on_retries(raw):
    outcome = classify(raw)
    if outcome.status is not Status.RETRY:
        assert None is outcome.retry_after


@given(raw_results)
def test_failure_class_is_absent_exactly_when_succeeded(raw):
    outcome = classify(raw)
    assert (outcome.status is Status.SUCCEEDED) == (outcome.failure is None)


@given(succeeded_results)
def test_succeeded_results_keep_their_answer(raw):
    outcome = classify(raw)
    assert (raw.text, raw.stop_reason, raw.usage) == (outcome.text, outcome.stop_reason, outcome.usage)


@given(raw_results)
def test_errors_keep_type_and_message_for_inspection(raw):
    outcome = classify(raw)
    if raw.kind != "succeeded":
        assert (raw.error_type or raw.kind, raw.message) == (outcome.error_type, outcome.error_message)
