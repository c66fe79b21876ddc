"""What one line of a batch's results file means: its `result` object, as the JSON the API sends, to
the `Outcome` of its request, in one pure function (`line_outcome`).

The shell parses each line (`{"custom_id": ..., "result": {...}}`) with orjson and hands the `result`
object here. Its shapes are the SDK's `MessageBatchResult` types: `succeeded` with the `message` (a
`Message`: content blocks, `stop_reason`, `stop_details` on a refusal, `usage`); `errored` with an
error envelope `{"type": "error", "error": {"type", "message", "details": {"error_code"}?},
"request_id"}`; `canceled`; `expired`.

`line_raw` reads it into a `RawResult` (exactly what `adapters.providers.anthropic.sdk_results.line_result` makes of the
SDK's model of the same line: text blocks only, never thinking or tool blocks; usage's four counts;
`error.details.error_code` as the SDK's `extract_error_code` reads it), and `classify` decides what it
means. `line_outcome` is that, with a fast path for the line almost every harvest is made of, an
answer that is not a refusal and carries no `stop_details`: its `Outcome` is built straight from the
message (by the same `MISS_STOPS` table `classify` reads), with no `RawResult` and no `classify`.
`tests/batch/test_result_lines.py` checks that the two paths agree on any line.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from judgecore.results.outcomes import ANSWERED, MISS_STOPS, Outcome, RawResult, StopDetails, Usage, classify
from judgecore.results.status import _setters

__all__ = ["ResultLine", "line_outcome", "line_raw", "message_raw"]

#: One line of a batch's results as the harvest takes it: its custom_id and its `Outcome` (the port
#: translates each line with `line_outcome`; a fake port classifies the `RawResult` it draws).
ResultLine: TypeAlias = tuple[str, Outcome]

_usage_of = Usage.of


def _text(content: Any) -> str | None:
    """The text blocks of a message's content, joined (None when it has none)."""
    if not content:
        return None
    texts = [b["text"] for b in content if b.get("type") == "text"]
    if not texts:
        return None
    return texts[0] if len(texts) == 1 else "".join(texts)


def _usage(u: Any) -> Usage | None:
    """Usage's four counts (a count absent or null is 0); None when the message has no usage object."""
    if type(u) is not dict:  # orjson's objects are plain dicts: no ABC check per line
        return None
    get = u.get
    return _usage_of(
        get("input_tokens") or 0,
        get("output_tokens") or 0,
        get("cache_creation_input_tokens") or 0,
        get("cache_read_input_tokens") or 0,
    )


def message_raw(message: Mapping[str, Any]) -> RawResult:
    """A `succeeded` RawResult from a `Message` given as its JSON object."""
    get = message.get
    details = get("stop_details")
    return RawResult(
        kind="succeeded",
        text=_text(get("content")),
        stop_reason=get("stop_reason"),
        model=get("model"),
        usage=_usage(get("usage")),
        stop_details=None if details is None else StopDetails.from_json(details),
    )


def _error_code(envelope: Any) -> str | None:
    """`error.details.error_code` of an error envelope (the SDK's `extract_error_code`, on JSON)."""
    for key in ("error", "details", "error_code"):
        if not isinstance(envelope, Mapping):
            return None
        envelope = envelope.get(key)
    return envelope if isinstance(envelope, str) else None


def line_raw(result: Mapping[str, Any]) -> RawResult:
    """A `RawResult` from a results line's `result` object (succeeded / errored / canceled / expired)."""
    kind = result.get("type")
    if kind == "succeeded":
        return message_raw(result["message"])
    if kind == "errored":
        envelope = result.get("error")
        inner = envelope.get("error") if isinstance(envelope, Mapping) else None
        inner = inner if isinstance(inner, Mapping) else {}
        return RawResult(
            kind="errored",
            error_type=inner.get("type"),
            message=inner.get("message"),
            error_code=_error_code(envelope),
        )
    if kind in ("canceled", "expired"):
        return RawResult(kind=kind)
    return RawResult(kind="errored", error_type=f"unknown_result_type:{kind}", message=repr(result)[:200])


def line_outcome(result: Mapping[str, Any]) -> Outcome:
    """The `Outcome` of a results line's `result` object: `classify(line_raw(result))`, built directly
    for an answer that is not a refusal and has no `stop_details`.

    That fast path is one frame: its text, its `Usage` and its `Outcome` are made inline (each slot
    set by its descriptor, as `Outcome.answer` and `Usage.of` do), not by a call for each."""
    if result.get("type") == "succeeded":
        get = result["message"].get
        stop = get("stop_reason")
        if stop != "refusal" and get("stop_details") is None:
            status, failure, reason = _MISS_STOPS_GET(stop or "", ANSWERED)
            content = get("content")
            text = None
            if content:
                if len(content) == 1:  # the usual answer: one block
                    (block,) = content
                    if block.get("type") == "text":
                        text = block["text"]
                else:
                    text = _text(content)
            u = get("usage")
            usage = None
            if type(u) is dict:  # orjson's objects are plain dicts: no ABC check per line
                uget = u.get
                usage = _new(Usage)
                _u_in(usage, uget("input_tokens") or 0)
                _u_out(usage, uget("output_tokens") or 0)
                _u_write(usage, uget("cache_creation_input_tokens") or 0)
                _u_read(usage, uget("cache_read_input_tokens") or 0)
            o = _new(Outcome)
            _o_status(o, status)
            _o_failure(o, failure)
            _o_reason(o, reason)
            _o_text(o, text)
            _o_stop(o, stop)
            _o_model(o, get("model"))
            _o_usage(o, usage)
            _o_error_type(o, None)
            _o_error_message(o, None)
            _o_retry_after(o, None)
            _o_error_code(o, None)
            _o_details(o, None)
            return o
    return classify(line_raw(result))


_new = object.__new__
_MISS_STOPS_GET = MISS_STOPS.get
_u_in, _u_out, _u_write, _u_read = _setters(Usage)
(
    _o_status,
    _o_failure,
    _o_reason,
    _o_text,
    _o_stop,
    _o_model,
    _o_usage,
    _o_error_type,
    _o_error_message,
    _o_retry_after,
    _o_error_code,
    _o_details,
) = _setters(Outcome)
