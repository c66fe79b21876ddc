"""A batch results line read as raw JSON (`result_line`, the harvest's path) means exactly what the SDK's
own model of the same line means (`classify(line_result(...))`), for every result type and error the SDK
defines; and the core's fast path for a plain answer (`line_outcome`) agrees with its general path
(`classify(line_raw(...))`) on any line, SDK-valid or not."""

from __future__ import annotations

import typing

import orjson
import pytest
from anthropic._models import construct_type_unchecked
from anthropic.types import RefusalStopDetails, StopReason
from anthropic.types.messages import MessageBatchIndividualResponse
from anthropic.types.shared.error_details import ErrorDetails
from anthropic.types.shared.error_object import ErrorObject
from hypothesis import given
from hypothesis import strategies as st

from adapters.providers.anthropic.sdk_results import line_result, result_line
from judgecore.results.outcomes import classify
from judgecore.results.resultlines import line_outcome, line_raw


def _members(alias: object) -> tuple[type, ...]:
    """The models of an SDK `Annotated[Union[...], ...]` alias."""
    return typing.get_args(typing.get_args(alias)[0])


def _literal(model: type, field: str) -> str:
    (value,) = typing.get_args(model.model_fields[field].annotation)  # type: ignore[attr-defined]
    return value


# Read off the SDK's own types, so a type or code the SDK adds is generated too.
ERROR_TYPES = sorted(_literal(m, "type") for m in _members(ErrorObject))
ERROR_CODES = sorted(_literal(m, "error_code") for m in _members(ErrorDetails))
STOP_REASONS = list(typing.get_args(StopReason))
REFUSAL_CATEGORIES = [
    c for c in typing.get_args(typing.get_args(RefusalStopDetails.model_fields["category"].annotation)[0])
]

_text = st.text(max_size=40)
_count = st.integers(0, 2**31)

_blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": _text}, optional={"citations": st.none()}),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": _text, "signature": _text}),
    st.fixed_dictionaries({"type": st.just("redacted_thinking"), "data": _text}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_use"),
            "id": st.just("toolu_01"),
            "name": _text,
            "input": st.dictionaries(_text, _text, max_size=2),
        }
    ),
)
_usage = st.fixed_dictionaries(
    {"input_tokens": _count, "output_tokens": _count},
    optional={
        "cache_creation_input_tokens": st.one_of(st.none(), _count),
        "cache_read_input_tokens": st.one_of(st.none(), _count),
        "service_tier": st.sampled_from(["standard", "batch"]),
    },
)
_stop_details = st.fixed_dictionaries(
    {"type": st.just("refusal")},
    optional={
        "category": st.one_of(st.none(), st.sampled_from(REFUSAL_CATEGORIES)),
        "explanation": st.one_of(st.none(), _text),
    },
)
_message = st.fixed_dictionaries(
    {
        "id": st.just("msg_01"),
        "type": st.just("message"),
        "role": st.just("assistant"),
        "model": st.sampled_from(["claude-sonnet-4-6", "claude-opus-4-8", "claude-haiku-4-5"]),
        "content": st.lists(_blocks, max_size=4),
        "stop_reason": st.one_of(st.none(), st.sampled_from(STOP_REASONS)),
        "stop_sequence": st.none(),
        "usage": _usage,
    },
    optional={"stop_details": st.one_of(st.none(), _stop_details)},
)
_details = st.one_of(
    st.fixed_dictionaries({"error_code": st.sampled_from(ERROR_CODES)}, optional={"appeal_url": _text}),
    st.fixed_dictionaries({}, optional={"reason": _text}),
)
_error_object = st.fixed_dictionaries(
    {"type": st.sampled_from(ERROR_TYPES), "message": _text}, optional={"details": _details}
)
_envelope = st.fixed_dictionaries(
    {"type": st.just("error"), "error": _error_object},
    optional={"request_id": st.one_of(st.none(), st.just("req_01"))},
)
_results = st.one_of(
    st.fixed_dictionaries({"type": st.just("succeeded"), "message": _message}),
    st.fixed_dictionaries({"type": st.just("errored"), "error": _envelope}),
    st.fixed_dictionaries({"type": st.sampled_from(["canceled", "expired"])}),
)
lines = st.fixed_dictionaries({"custom_id": st.text(min_size=1, max_size=64), "result": _results})


@given(lines)
def test_a_raw_line_means_what_the_sdks_model_of_it_means(line: dict) -> None:
    """Valid by the SDK's own validation, then read both ways: the same custom_id and Outcome, and the
    same RawResult on the general path."""
    MessageBatchIndividualResponse.model_validate(line)  # the line is one the SDK's types allow
    sdk = construct_type_unchecked(value=line, type_=MessageBatchIndividualResponse)  # its JSONL decoder
    raw = line_result(sdk.result)
    assert raw == line_raw(orjson.loads(orjson.dumps(line))["result"])
    assert (sdk.custom_id, classify(raw)) == result_line(orjson.dumps(line))


# Answers as the fast path sees them, and lines the SDK would not validate: any stop_reason (and
# none), stop_details present, null or odd, usage missing or partial or not an object, content with
# no text or several texts.
_any_stop = st.one_of(st.none(), st.sampled_from(STOP_REASONS), _text)
_odd_usage = st.one_of(
    _usage,
    st.none(),
    st.just("n/a"),
    st.fixed_dictionaries(
        {}, optional={"input_tokens": st.one_of(st.none(), _count), "output_tokens": _count}
    ),
)
_odd_details = st.one_of(st.none(), _stop_details, st.just({}), st.just("refusal"), st.just([]))
_odd_message = st.fixed_dictionaries(
    {"content": st.one_of(st.none(), st.lists(_blocks, max_size=4))},
    optional={
        "model": st.one_of(st.none(), _text),
        "stop_reason": _any_stop,
        "stop_details": _odd_details,
        "usage": _odd_usage,
    },
)
_odd_results = st.one_of(
    st.fixed_dictionaries({"type": st.just("succeeded"), "message": _odd_message}),
    _results,
    st.fixed_dictionaries({"type": st.one_of(st.none(), _text)}),
    st.fixed_dictionaries({"type": st.just("errored")}, optional={"error": st.one_of(st.none(), _text)}),
)


@given(_odd_results)
def test_the_fast_path_for_a_plain_answer_gives_the_general_paths_outcome(result: dict) -> None:
    """`line_outcome` builds a plain answer's Outcome without a RawResult or `classify`: for any line
    it is the Outcome the general path gives, field for field (equal, same hash)."""
    expected = classify(line_raw(result))
    actual = line_outcome(result)
    assert expected == actual
    assert hash(expected) == hash(actual)
    assert repr(expected) == repr(actual)


def test_the_fast_path_covers_the_usual_answer_and_a_truncation() -> None:
    """The lines a harvest is made of: end_turn succeeded, max_tokens a miss (text kept), usage read."""
    message = {
        "model": "claude-sonnet-4-6",
        "content": [{"type": "thinking", "thinking": "hm", "signature": "s"}, {"type": "text", "text": "7"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2, "cache_read_input_tokens": None},
    }
    ok = line_outcome({"type": "succeeded", "message": message})
    cut = line_outcome({"type": "succeeded", "message": {**message, "stop_reason": "max_tokens"}})
    assert ("succeeded", None, "7", (3, 2, 0, 0)) == (
        ok.status,
        ok.failure,
        ok.text,
        (
            ok.usage.input_tokens,
            ok.usage.output_tokens,
            ok.usage.cache_creation_input_tokens,
            ok.usage.cache_read_input_tokens,
        ),
    )
    assert ("miss", "MODEL_TRUNCATION", "7") == (cut.status, cut.failure, cut.text)


def test_the_generated_lines_cover_every_error_type_and_code_the_sdk_defines() -> None:
    """The strategy reads its values off the SDK's types (none of them is a hand-made list)."""
    assert {"invalid_request_error", "overloaded_error", "rate_limit_error"} <= set(ERROR_TYPES)
    assert len(ERROR_CODES) > 100
    assert "refusal" in STOP_REASONS


def test_an_errored_line_keeps_its_type_message_and_error_code() -> None:
    line = {
        "custom_id": "a",
        "result": {
            "type": "errored",
            "error": {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "org on hold",
                    "details": {"error_code": "organization_on_hold"},
                },
            },
        },
    }
    cid, outcome = result_line(orjson.dumps(line))
    assert (
        "a",
        "fatal",
        "ACCOUNT_STATE",
        "invalid_request_error",
        "org on hold",
        "organization_on_hold",
    ) == (
        cid,
        outcome.status,
        outcome.failure,
        outcome.error_type,
        outcome.error_message,
        outcome.error_code,
    )


@pytest.mark.parametrize(
    "line",
    [b'{"custom_id": "a", "result": {"type": "succ', b"[1, 2]", b'{"result": {"type": "expired"}}', b"{}"],
    ids=["torn", "not an object", "no custom_id", "empty"],
)
def test_a_line_that_is_not_a_results_line_is_a_value_error(line: bytes) -> None:
    """What the harvest reports as a cut stream (the batch is harvested again), never a traceback."""
    with pytest.raises(ValueError):
        result_line(line)
