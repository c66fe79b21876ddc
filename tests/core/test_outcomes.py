"""classify: every row of the failure taxonomy, as one table, plus the laws that hold for any result."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import raw_results, succeeded_results, usages

from judgecore.decide.backoff import BackoffPolicy
from judgecore.results.outcomes import (
    ACCOUNT_REFUSED,
    FailureClass,
    Outcome,
    RawResult,
    Status,
    StopDetails,
    Usage,
    classify,
    stop_line,
)
from judgecore.run.batch.batching import Fatal, RetryCreate, Split, after_create_error

F = FailureClass
USAGE = Usage(input_tokens=10, output_tokens=5)


def ok(stop_reason="end_turn"):
    return RawResult(kind="succeeded", text="Score: 4", stop_reason=stop_reason, model="m", usage=USAGE)


def errored(error_type, message=None, retry_after=None):
    return RawResult(kind="errored", error_type=error_type, message=message, retry_after=retry_after)


def http(status, message=None, error_type=None, retry_after=None, code=None):
    return RawResult(
        kind="http_error",
        status=status,
        message=message,
        error_type=error_type,
        retry_after=retry_after,
        error_code=code,
    )


def coded(error_type, code, message="m"):
    """A batch line errored with an error_code in `error.details`."""
    return RawResult(kind="errored", error_type=error_type, message=message, error_code=code)


def refusal(category="cyber", text=None):
    details = StopDetails(category=category, explanation="declined" if category else None)
    return RawResult(
        kind="succeeded", text=text, stop_reason="refusal", model="m", usage=USAGE, stop_details=details
    )


SPEND_400 = (
    "You have reached your specified API usage limits. You will regain access on 2027-01-01 at 00:00 UTC."
)
OVERFLOW = "input length and `max_tokens` exceed context limit: 198000 + 8192 > 200000, decrease input length"


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
    # today's API: stop_reason "refusal", and error.details.error_code before the status
    ("refusal with a category", refusal(), Status.MISS, F.MODEL_REFUSAL),
    ("refusal, no category, partial text", refusal(None, "Score"), Status.MISS, F.MODEL_REFUSAL),
    (
        "sync 400 organization_on_hold",
        http(400, "disabled", "invalid_request_error", code="organization_on_hold"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    ("sync 400 spend limit you set (words only)", http(400, SPEND_400), Status.FATAL, F.ACCOUNT_STATE),
    (
        "errored: spend limit you set (words only)",
        errored("invalid_request_error", SPEND_400),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 429 enforced_spend_limit_reached",
        http(429, "monthly cap", "rate_limit_error", code="enforced_spend_limit_reached"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 429 contract_spend_limit_reached",
        http(429, "contract", "rate_limit_error", code="contract_spend_limit_reached"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 402 linked_organization_spend_limit_reached",
        http(402, "linked", "billing_error", code="linked_organization_spend_limit_reached"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 402 linked_organization_billing_unavailable",
        http(402, "linked", "billing_error", code="linked_organization_billing_unavailable"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 402 billing_error, no code",
        http(402, "credit balance", "billing_error"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "errored: organization_on_hold",
        coded("invalid_request_error", "organization_on_hold"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "errored: enforced_spend_limit_reached",
        coded("rate_limit_error", "enforced_spend_limit_reached"),
        Status.FATAL,
        F.ACCOUNT_STATE,
    ),
    (
        "sync 400 request_body_timeout",
        http(400, "body not received in time", "invalid_request_error", code="request_body_timeout"),
        Status.RETRY,
        F.INFRA_TRANSIENT,
    ),
    (
        "sync 429 ramp_limit_exceeded",
        http(429, "ramp", "rate_limit_error", retry_after=2.0, code="ramp_limit_exceeded"),
        Status.RETRY,
        F.RATE_LIMIT,
    ),
    (
        "sync 400 input length and max_tokens exceed context limit",
        http(400, OVERFLOW),
        Status.MISS,
        F.MODEL_CONTEXT,
    ),
    (
        "errored: input length and max_tokens exceed context limit",
        errored("invalid_request_error", OVERFLOW.replace("`", "")),
        Status.MISS,
        F.MODEL_CONTEXT,
    ),
    (
        "an unknown error_code is read as its bare status",
        http(400, "whatever", "invalid_request_error", code="brand_new_code"),
        Status.QUARANTINED,
        F.INVALID_REQUEST,
    ),
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


def test_a_refusal_keeps_its_text_and_stop_details_and_names_its_category():
    outcome = classify(refusal("bio", "Score: 3 but"))
    assert ("Score: 3 but", "refusal", "bio", "declined") == (
        outcome.text,
        outcome.stop_reason,
        outcome.error_type,
        outcome.error_message,
    )
    assert StopDetails(category="bio", explanation="declined") == outcome.stop_details
    assert outcome.final and USAGE == outcome.usage  # an answer: billed and final, never resent


def test_a_refusal_without_a_category_is_of_type_refusal():
    assert "refusal" == classify(refusal(None)).error_type


def test_the_error_code_is_read_before_the_status():
    """The same 429 is a rate limit without a code and an account state with a spend-limit code."""
    plain = classify(http(429, "slow down", "rate_limit_error", retry_after=5.0))
    spend = classify(
        http(429, "slow down", "rate_limit_error", retry_after=5.0, code="contract_spend_limit_reached")
    )
    assert (F.RATE_LIMIT, F.ACCOUNT_STATE) == (plain.failure, spend.failure)
    assert "contract_spend_limit_reached" == spend.error_code and spend.account_state
    assert None is spend.retry_after  # not a wait: the run stops


def test_ramp_limit_keeps_its_retry_after_hint():
    assert (
        2.0
        == classify(
            http(429, "ramp", "rate_limit_error", retry_after=2.0, code="ramp_limit_exceeded")
        ).retry_after
    )


@pytest.mark.parametrize(
    ("raw", "cause"),
    [
        (http(400, "disabled", "invalid_request_error", code="organization_on_hold"), "organization_on_hold"),
        (http(400, SPEND_400), "spend_limit_reached"),
        (
            coded("billing_error", "linked_organization_billing_unavailable"),
            "linked_organization_billing_unavailable",
        ),
    ],
)
def test_an_account_state_stops_with_one_line_naming_its_cause(raw, cause):
    line = stop_line(classify(raw), "creating sub-batch 1")
    assert line.startswith(f"{ACCOUNT_REFUSED}: {cause}: ")
    assert line.endswith("; nothing was quarantined; rerun once the account is fixed") and "\n" not in line


POLICY = BackoffPolicy()


def test_request_body_timeout_splits_a_create_and_retries_a_lone_request():
    timeout = http(400, "not in time", "invalid_request_error", code="request_body_timeout")
    big = after_create_error(timeout, attempt=0, n=100, max_attempts=5, policy=POLICY, u=0.5)
    lone = after_create_error(timeout, attempt=0, n=1, max_attempts=5, policy=POLICY, u=0.5)
    assert isinstance(big, Split) and isinstance(lone, RetryCreate)


def test_a_create_refused_with_an_account_state_stops_the_run():
    hold = http(400, "disabled", "invalid_request_error", code="organization_on_hold")
    decision = after_create_error(hold, attempt=0, n=100, max_attempts=5, policy=POLICY, u=0.5)
    assert isinstance(decision, Fatal) and decision.outcome.account_state


@given(raw_results)
def test_an_account_state_stops_the_run_and_is_never_final(raw):
    """Whatever its status or type, an account-state code is fatal for the run and nothing for the item."""
    outcome = classify(raw)
    if outcome.account_state:
        assert (Status.FATAL, False, None) == (outcome.status, outcome.final, outcome.retry_after)


@given(succeeded_results)
def test_every_refusal_is_a_final_miss_keeping_its_answer(raw):
    outcome = classify(raw)
    if raw.stop_reason == "refusal":
        assert (Status.MISS, F.MODEL_REFUSAL) == (outcome.status, outcome.failure)
        assert (raw.text, raw.stop_details, raw.usage) == (outcome.text, outcome.stop_details, outcome.usage)
    else:
        assert F.MODEL_REFUSAL is not outcome.failure


_fields = st.one_of(st.none(), st.text(max_size=20))


@given(
    st.sampled_from(list(Status)),
    st.one_of(st.none(), st.sampled_from(list(FailureClass))),
    st.text(max_size=20),
    _fields,
    _fields,
    _fields,
    st.one_of(st.none(), usages),
    st.one_of(st.none(), st.builds(StopDetails, category=_fields, explanation=_fields)),
)
def test_the_positional_builders_make_the_keyword_built_value(
    status, failure, reason, text, stop_reason, model, usage, details
):
    """`Outcome.answer` and `Usage.of` (the per-line builders) make the very value the keyword
    constructor makes: equal, same hash and repr, frozen."""
    kw = Outcome(
        status=status,
        failure=failure,
        reason=reason,
        text=text,
        stop_reason=stop_reason,
        model=model,
        usage=usage,
        stop_details=details,
    )
    built = Outcome.answer(status, failure, reason, text, stop_reason, model, usage, details)
    assert (kw, hash(kw), repr(kw)) == (built, hash(built), repr(built))
    assert attrs.asdict(kw) == attrs.asdict(built)  # every field set
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        built.text = "changed"  # type: ignore[misc]
    if usage is not None:
        counts = attrs.astuple(usage)
        assert (usage, hash(usage)) == (Usage.of(*counts), hash(Usage.of(*counts)))
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            Usage.of(*counts).input_tokens = 0  # type: ignore[misc]
