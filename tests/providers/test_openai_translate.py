"""OpenAI's wire in the core's words: every taxonomy row through the real `classify`, usage, durations,
rate-limit readings, retry waits, batch lines and batch objects."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import adapters.providers.openai as openai_port
from adapters.providers.openai.translate import (
    CONTEXT_EXCEEDED,
    batch_of,
    completion_result,
    error_result,
    line_result,
    openai_reading,
    parse_duration,
    retry_delay,
    usage_of,
)
from judgecore.decide.polling import RequestCounts
from judgecore.decide.ratelimit import LimitGroup
from judgecore.results.outcomes import FailureClass, Status, Usage, classify

NOW = 1_800_000_000.0


def completion(content="The score is 4.", finish="stop", refusal=None, usage=None):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "gpt-5-mini-2025-08-07",
        "choices": [
            {
                "index": 0,
                "finish_reason": finish,
                "message": {"role": "assistant", "content": content, "refusal": refusal},
            }
        ],
        "usage": usage
        or {"prompt_tokens": 1500, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 1024}},
    }


def error(message, type_="invalid_request_error", code=None, param=None):
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


# -- the taxonomy, row by row, through the real classify -----------------------------------------

ANSWERS = {
    "finish stop": (completion(), Status.SUCCEEDED, None),
    "finish length": (completion(finish="length"), Status.MISS, FailureClass.MODEL_TRUNCATION),
    "a refusal": (
        completion(content=None, refusal="I can't help with that."),
        Status.MISS,
        FailureClass.MODEL_REFUSAL,
    ),
    "content filter": (
        completion(content="Partial", finish="content_filter"),
        Status.MISS,
        FailureClass.MODEL_REFUSAL,
    ),
}


@pytest.mark.parametrize("row", ANSWERS, ids=list(ANSWERS))
def test_an_answer_classifies_as_the_contract_says(row):
    body, status, failure = ANSWERS[row]
    outcome = classify(completion_result(body))
    assert (status, failure) == (outcome.status, outcome.failure)


def test_a_truncated_answer_keeps_its_text():
    outcome = classify(completion_result(completion(content='{"score": ', finish="length")))
    assert ('{"score": ', "max_tokens") == (outcome.text, outcome.stop_reason)


def test_a_refusal_keeps_the_refusal_as_text_with_error_type_refusal():
    outcome = classify(completion_result(completion(content=None, refusal="I can't help with that.")))
    assert ("I can't help with that.", "refusal") == (outcome.text, outcome.error_type)
    assert outcome.final


def test_a_content_filter_stop_is_a_refusal_of_type_content_filter_its_text_kept():
    outcome = classify(completion_result(completion(content="Partial", finish="content_filter")))
    assert ("Partial", "content_filter") == (outcome.text, outcome.error_type)


ERRORS = {
    "400 context_length_exceeded": (
        400,
        error("This model's maximum context length is 128000 tokens.", code="context_length_exceeded"),
        Status.MISS,
        FailureClass.MODEL_CONTEXT,
    ),
    "400 served: maximum context length": (
        400,
        {
            "error": {
                "message": "This model's maximum context length is 32768 tokens. However, your request has 40000 input tokens.",
                "type": "BadRequestError",
                "param": None,
                "code": 400,
            }
        },
        Status.MISS,
        FailureClass.MODEL_CONTEXT,
    ),
    "400 served: longer than the context": (
        400,
        error(
            "The input (40000 tokens) is longer than the model's context length (32768 tokens).",
            "BadRequestError",
        ),
        Status.MISS,
        FailureClass.MODEL_CONTEXT,
    ),
    "400 served: max_completion_tokens too large": (
        400,
        {
            "object": "error",
            "message": "'max_tokens' or 'max_completion_tokens' is too large: 50000. This model's context is 32768.",
            "type": "BadRequestError",
            "code": 400,
        },
        Status.MISS,
        FailureClass.MODEL_CONTEXT,
    ),
    "429 rate limit": (
        429,
        error("Rate limit reached for gpt-5-mini on tokens per min (TPM)", "tokens", "rate_limit_exceeded"),
        Status.RETRY,
        FailureClass.RATE_LIMIT,
    ),
    "429 insufficient_quota": (
        429,
        error("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
        Status.FATAL,
        FailureClass.ACCOUNT_STATE,
    ),
    "401": (
        401,
        error("Incorrect API key provided", code="invalid_api_key"),
        Status.FATAL,
        FailureClass.FATAL_CONFIG,
    ),
    "403": (
        403,
        error("Project does not have access", "permission_error"),
        Status.FATAL,
        FailureClass.FATAL_CONFIG,
    ),
    "404 model_not_found": (
        404,
        error("The model `gpt-9` does not exist or you do not have access to it.", code="model_not_found"),
        Status.FATAL,
        FailureClass.FATAL_CONFIG,
    ),
    "500": (
        500,
        error("The server had an error", "server_error"),
        Status.RETRY,
        FailureClass.INFRA_TRANSIENT,
    ),
    "503 served queue full": (
        503,
        error("queue full", "ServiceUnavailableError"),
        Status.RETRY,
        FailureClass.INFRA_TRANSIENT,
    ),
    "other 400": (
        400,
        error("Invalid value for 'messages[1].role'", param="messages[1].role", code="invalid_value"),
        Status.QUARANTINED,
        FailureClass.INVALID_REQUEST,
    ),
}


@pytest.mark.parametrize("row", ERRORS, ids=list(ERRORS))
def test_an_error_classifies_as_the_contract_says(row):
    status_code, body, status, failure = ERRORS[row]
    outcome = classify(error_result(status_code, body, {}, NOW))
    assert (status, failure) == (outcome.status, outcome.failure)


@pytest.mark.parametrize("row", ERRORS, ids=list(ERRORS))
def test_an_error_in_a_batch_line_classifies_as_on_the_sync_route(row):
    status_code, body, status, failure = ERRORS[row]
    line = {
        "id": "batch_req_1",
        "custom_id": "c1",
        "response": {"status_code": status_code, "body": body},
        "error": None,
    }
    custom_id, raw = line_result(line)
    assert ("c1", status, failure) == (custom_id, classify(raw).status, classify(raw).failure)


def test_the_quota_stop_names_its_cause_and_quarantines_nothing():
    outcome = classify(
        error_result(
            429,
            error("You exceeded your current quota.", "insufficient_quota", "insufficient_quota"),
            {},
            NOW,
        )
    )
    assert outcome.account_state
    assert "insufficient_quota" == outcome.error_code


def test_a_served_models_integer_code_is_not_an_error_code():
    raw = error_result(400, {"error": {"message": "bad", "type": "BadRequestError", "code": 400}}, {}, NOW)
    assert (None, "BadRequestError") == (raw.error_code, raw.error_type)
    served = error_result(400, error("maximum context length is 4096", "BadRequestError"), {}, NOW)
    assert CONTEXT_EXCEEDED == served.error_code


def test_a_non_json_error_body_keeps_its_words():
    raw = error_result(502, "<html>Bad gateway</html>", {}, NOW)
    assert ("<html>Bad gateway</html>", Status.RETRY) == (raw.message, classify(raw).status)


# -- batch lines -------------------------------------------------------------------------------


def test_a_succeeded_batch_line_is_its_completion():
    line = {
        "id": "b1",
        "custom_id": "c9",
        "response": {"status_code": 200, "request_id": "r", "body": completion()},
        "error": None,
    }
    custom_id, raw = line_result(line)
    assert ("c9", "The score is 4.", Status.SUCCEEDED) == (custom_id, raw.text, classify(raw).status)


@pytest.mark.parametrize(("code", "kind"), [("batch_expired", "expired"), ("batch_cancelled", "canceled")])
def test_an_expired_or_cancelled_line_never_ran_and_is_resent(code, kind):
    line = {"id": "b1", "custom_id": "c2", "response": None, "error": {"code": code, "message": "not run"}}
    _, raw = line_result(line)
    outcome = classify(raw)
    assert (kind, Status.RETRY, FailureClass.NOT_RUN) == (raw.kind, outcome.status, outcome.failure)


def test_a_line_without_a_custom_id_is_refused():
    with pytest.raises(ValueError, match="not a batch output line"):
        line_result({"response": {"status_code": 200, "body": completion()}})


# -- usage -------------------------------------------------------------------------------------


@given(prompt=st.integers(0, 10**7), cached=st.integers(0, 10**7), out=st.integers(0, 10**6))
def test_usage_counts_cached_tokens_apart_from_the_rest_of_the_prompt(prompt, cached, out):
    usage = usage_of(
        {
            "prompt_tokens": prompt,
            "completion_tokens": out,
            "prompt_tokens_details": {"cached_tokens": cached},
        }
    )
    assert usage is not None
    assert prompt == usage.input_tokens + usage.cache_read_input_tokens
    assert (min(cached, prompt), out, 0) == (
        usage.cache_read_input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
    )


def test_usage_without_details_has_no_cache_reads():
    assert Usage(input_tokens=12, output_tokens=3) == usage_of({"prompt_tokens": 12, "completion_tokens": 3})
    assert None is usage_of(None)


# -- durations and rate limits -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("6m0s", 360.0),
        ("1s", 1.0),
        ("12ms", 0.012),
        ("1h2m3.5s", 3723.5),
        ("0s", 0.0),
        ("2.5", 2.5),
        ("500us", 0.0005),
    ],
)
def test_openai_durations_read_as_seconds(text, seconds):
    assert seconds == pytest.approx(parse_duration(text))


def _go_duration(hours: int, minutes: int, millis: int) -> str:
    """A duration the way Go's `time.Duration.String` writes one (what OpenAI's headers carry)."""
    if hours == minutes == 0 and millis < 1000:
        return f"{millis}ms"
    seconds = f"{millis // 1000}" + (f".{millis % 1000:03d}".rstrip("0") if millis % 1000 else "") + "s"
    if hours:
        return f"{hours}h{minutes}m{seconds}"
    return f"{minutes}m{seconds}" if minutes else seconds


@given(st.integers(0, 48), st.integers(0, 59), st.integers(0, 59_999))
def test_a_go_duration_reads_as_its_seconds(hours, minutes, millis):
    text = _go_duration(hours, minutes, millis)
    assert hours * 3600 + minutes * 60 + millis / 1000 == pytest.approx(parse_duration(text))


@given(st.text(max_size=12))
def test_anything_else_is_none_or_a_finite_non_negative_duration_never_an_error(text):
    seconds = parse_duration(text)
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0)


@pytest.mark.parametrize("text", ["", "6 m", "m", "1x", "-1s", "1s2", "s1", "1.2.3s"])
def test_malformed_durations_are_none(text):
    assert None is parse_duration(text)


HEADERS = {
    "x-ratelimit-limit-requests": "5000",
    "x-ratelimit-remaining-requests": "4999",
    "x-ratelimit-reset-requests": "12ms",
    "x-ratelimit-limit-tokens": "4000000",
    "x-ratelimit-remaining-tokens": "3999000",
    "x-ratelimit-reset-tokens": "6m0s",
}


def test_a_reading_holds_requests_and_tokens_with_resets_as_instants():
    reading = openai_reading(HEADERS, NOW)
    assert LimitGroup(limit=5000, remaining=4999, reset=pytest.approx(NOW + 0.012)) == reading.requests
    assert LimitGroup(limit=4_000_000, remaining=3_999_000, reset=NOW + 360.0) == reading.tokens
    assert reading.output_tokens.empty and reading.input_tokens.empty


def test_a_response_without_limits_reads_empty():
    assert openai_reading({"content-type": "application/json"}, NOW).empty


@pytest.mark.parametrize(
    ("headers", "wait"),
    [
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "9"}, 9.0),
        ({**HEADERS, "x-ratelimit-remaining-tokens": "0"}, 360.0),
        ({**HEADERS, "x-ratelimit-remaining-requests": "0"}, 0.012),
        (HEADERS, 0.012),
        ({}, None),
    ],
)
def test_a_429_waits_for_what_the_headers_say_in_the_sdks_order(headers, wait):
    actual = retry_delay(headers, NOW)
    assert (None if wait is None else pytest.approx(wait)) == actual


def test_a_429s_wait_is_carried_to_its_outcome():
    outcome = classify(
        error_result(429, error("slow down", "tokens", "rate_limit_exceeded"), {"retry-after-ms": "250"}, NOW)
    )
    assert 0.25 == outcome.retry_after


# -- batch objects -----------------------------------------------------------------------------


def batch_json(status, completed=0, failed=0, total=10, **extra):
    return {
        "id": "batch_1",
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "input_file_id": "file-in",
        "status": status,
        "created_at": 1000,
        "expires_at": 1000 + 86400,
        "request_counts": {"completed": completed, "failed": failed, "total": total},
        "metadata": {"judgecore_job": "j1", "judgecore_sub_batch": "0"},
        **extra,
    }


@pytest.mark.parametrize(
    ("status", "core", "counts"),
    [
        ("validating", "in_progress", RequestCounts(processing=10)),
        ("in_progress", "in_progress", RequestCounts(processing=6, succeeded=3, errored=1)),
        ("finalizing", "in_progress", RequestCounts(processing=6, succeeded=3, errored=1)),
        ("cancelling", "canceling", RequestCounts(processing=6, succeeded=3, errored=1)),
        ("completed", "ended", RequestCounts(succeeded=3, errored=1)),
        ("expired", "ended", RequestCounts(succeeded=3, errored=1, expired=6)),
        ("cancelled", "ended", RequestCounts(succeeded=3, errored=1, canceled=6)),
        ("failed", "ended", RequestCounts()),
    ],
)
def test_a_batch_reads_as_the_cores_snapshot(status, core, counts):
    done = (0, 0) if status in ("validating", "failed") else (3, 1)
    snap = batch_of(batch_json(status, *done)).snapshot()
    assert (core, counts, 1000.0, 87400.0) == (snap.status, snap.counts, snap.created_at, snap.expires_at)


def test_a_failed_batch_sent_nothing_and_says_why():
    errors = {
        "object": "list",
        "data": [
            {
                "code": "token_limit_exceeded",
                "message": "Enqueued token limit reached",
                "param": None,
                "line": None,
            }
        ],
    }
    batch = batch_of(batch_json("failed", errors=errors, failed_at=1010))
    assert batch.sent_nothing and batch.ended
    assert ("token_limit_exceeded", 1010.0) == (batch.errors[0].code, batch.ended_at)


def test_an_ended_batch_names_both_its_result_files_output_first():
    batch = batch_of(batch_json("expired", 3, 1, output_file_id="file-out", error_file_id="file-err"))
    assert ("file-out", "file-err") == batch.result_files
    assert ("file-err",) == batch_of(batch_json("completed", 0, 10, error_file_id="file-err")).result_files


# -- purity ------------------------------------------------------------------------------------

PURE = ("translate.py", "body.py", "schema.py", "__init__.py")


@pytest.mark.parametrize("name", PURE)
def test_the_translation_the_body_and_the_schema_import_no_sdk_and_no_http(name):
    source = (Path(openai_port.__file__).parent / name).read_text(encoding="utf-8")
    roots = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            roots |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    assert set() == roots & {"openai", "anthropic", "httpx", "httpx2", "time", "os"}
