"""What OpenAI's wire says, in the core's words: pure functions of plain JSON and headers, no SDK.

The OpenAI port (`adapters.providers.openai.sync`, `.batch`) reads every answer as plain JSON (orjson)
and hands it here; the result is the core's `RawResult`, so the one `judgecore.classify` gives the
contract's taxonomy on either wire:

| OpenAI says | `RawResult` | `classify` |
| --- | --- | --- |
| `finish_reason: "stop"` (or `tool_calls`) | succeeded, `stop_reason` `end_turn` (`tool_use`) | succeeded |
| `finish_reason: "length"` | succeeded, `stop_reason` `max_tokens`, text kept | miss, MODEL_TRUNCATION |
| a non-empty `message.refusal` | succeeded, `stop_reason` `refusal`, text = the refusal | miss, MODEL_REFUSAL (`refusal`) |
| `finish_reason: "content_filter"` | the same, `stop_details.category` `content_filter` | miss, MODEL_REFUSAL (`content_filter`) |
| 400 `context_length_exceeded`, or a served model's context words | http_error, error_code `context_length_exceeded` | miss, MODEL_CONTEXT |
| 429 `insufficient_quota` | http_error, error_code `insufficient_quota` | fatal, ACCOUNT_STATE |
| 429 | http_error 429, retry_after from the headers | retry, RATE_LIMIT |
| 5xx (a served model's full queue: 503) | http_error | retry, INFRA_TRANSIENT |
| 401, 403, 404 (`model_not_found`) | http_error | fatal, FATAL_CONFIG |
| any other 400 | http_error 400 | quarantined, INVALID_REQUEST |
| a batch line `batch_expired` / `batch_cancelled` | expired / canceled | retry, NOT_RUN |

Usage: OpenAI's `prompt_tokens` include the cached ones; the core's `input_tokens` do not (as Anthropic
counts them), so `input_tokens = prompt_tokens - cached_tokens` and `cache_read_input_tokens =
cached_tokens`; `completion_tokens` (reasoning tokens included) are `output_tokens`.

Rate limits: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets given as Go durations
(`"6m0s"`, `"1s"`, `"12ms"`, `"1h2m3.5s"`: `parse_duration`), read against `now` into the core's
`RateLimitReading` (`requests` and `tokens`: OpenAI's TPM counts input and output together). A 429's wait:
`retry-after-ms`, then `retry-after` (`judgecore.decide.ratelimit.retry_after`, the SDK's order), then the reset
of the bucket the headers say is empty (`retry_delay`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from judgecore.decide.polling import BatchSnapshot, RequestCounts
from judgecore.decide.ratelimit import LimitGroup, RateLimitReading
from judgecore.decide.retry_after import retry_after
from judgecore.results.outcomes import RawResult, StopDetails, Usage

#: The error_code an overflow of the context window is given, whichever words said it.
CONTEXT_EXCEEDED: Final = "context_length_exceeded"

# A served model's (vLLM, SGLang) words for a context overflow: a 400 with no such code.
_SERVED_CONTEXT = re.compile(
    r"maximum context length|longer than the model's context length"
    r"|'max_tokens' or 'max_completion_tokens' is too large",
    re.IGNORECASE,
)

_STOP_REASONS: Final = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "content_filter": "refusal",
}

# -- durations and rate limits ------------------------------------------------------------------

_UNIT_SECONDS: Final = {
    "h": 3600.0,
    "m": 60.0,
    "s": 1.0,
    "ms": 1e-3,
    "us": 1e-6,
    "µs": 1e-6,
    "μs": 1e-6,
    "ns": 1e-9,
}
_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ms|us|µs|μs|ns|h|m|s)")
_NUMBER = re.compile(r"\d+(?:\.\d*)?|\.\d+")


def parse_duration(text: str) -> float | None:
    """Seconds of a Go duration as OpenAI's `x-ratelimit-reset-*` headers write it (`"6m0s"`, `"1s"`,
    `"12ms"`, `"1h2m3.5s"`; a bare number is seconds), or None for anything else, never an error."""
    s = text.strip()
    if not s:
        return None
    if _NUMBER.fullmatch(s):
        return float(s)
    total, at = 0.0, 0
    for m in _PART.finditer(s):
        if m.start() != at:
            return None
        total += float(m[1]) * _UNIT_SECONDS[m[2]]
        at = m.end()
    if at != len(s) or at == 0 or not math.isfinite(total):
        return None
    return total


def _lower(headers: Mapping[str, str]) -> dict[str, str]:
    return {str(k).lower(): str(v).strip() for k, v in headers.items()}


def _count(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(float(value))
    except (ValueError, OverflowError):
        return None
    return n if n >= 0 else None


def _group(lower: Mapping[str, str], bucket: str, now: float) -> LimitGroup:
    reset = lower.get(f"x-ratelimit-reset-{bucket}")
    seconds = parse_duration(reset) if reset is not None else None
    return LimitGroup(
        limit=_count(lower.get(f"x-ratelimit-limit-{bucket}")),
        remaining=_count(lower.get(f"x-ratelimit-remaining-{bucket}")),
        reset=None if seconds is None else now + seconds,
    )


def openai_reading(headers: Mapping[str, str], now: float) -> RateLimitReading:
    """OpenAI's `x-ratelimit-*` headers as the core's reading: `requests` and `tokens` (TPM), each reset
    an instant (`now` plus the header's duration). Absent or bad values are None."""
    lower = _lower(headers)
    return RateLimitReading(requests=_group(lower, "requests", now), tokens=_group(lower, "tokens", now))


def retry_delay(headers: Mapping[str, str], now: float) -> float | None:
    """Seconds a 429 (or 503) asks to wait: `retry-after-ms`, then `retry-after`, then the reset of each
    bucket the headers say is empty (the longest), else the shortest reset given; None when none says."""
    said = retry_after(headers, now)
    if said is not None:
        return said
    lower = _lower(headers)
    empty: list[float] = []
    given: list[float] = []
    for bucket in ("requests", "tokens"):
        raw = lower.get(f"x-ratelimit-reset-{bucket}")
        seconds = parse_duration(raw) if raw is not None else None
        if seconds is None or seconds <= 0:
            continue
        given.append(seconds)
        if _count(lower.get(f"x-ratelimit-remaining-{bucket}")) == 0:
            empty.append(seconds)
    if empty:
        return max(empty)
    return min(given) if given else None


# -- answers ------------------------------------------------------------------------------------


def _int(value: Any) -> int:
    return value if type(value) is int and value >= 0 else 0


def usage_of(usage: Any) -> Usage | None:
    """A Chat Completion's `usage` as the core's four counts (see the module docstring), None if absent."""
    if not isinstance(usage, Mapping):
        return None
    prompt = _int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = _int(details.get("cached_tokens")) if isinstance(details, Mapping) else 0
    cached = min(cached, prompt)
    return Usage.of(prompt - cached, _int(usage.get("completion_tokens")), 0, cached)


def _text(content: Any) -> str | None:
    """A message's `content`: a string, or (some servers) a list of text parts, joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [p.get("text") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str)]
        return "".join(parts) if parts else None
    return None


def completion_result(body: Any) -> RawResult:
    """A `RawResult` from a Chat Completion's JSON (a sync 200's body, or a batch output line's
    `response.body`). Its first choice is the answer; a body with none is a transient `errored`."""
    if not isinstance(body, Mapping):
        return RawResult(
            kind="errored", error_type="api_error", message=f"not a chat completion: {body!r}"[:200]
        )
    choices = body.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices and isinstance(choices[0], Mapping) else None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    usage = usage_of(body.get("usage"))
    if choice is None:
        return RawResult(kind="errored", error_type="api_error", message="a chat completion without choices")
    message = choice.get("message")
    message = message if isinstance(message, Mapping) else {}
    finish = choice.get("finish_reason")
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal:
        return RawResult(
            kind="succeeded",
            text=refusal,
            stop_reason="refusal",
            model=model,
            usage=usage,
            stop_details=StopDetails(type="refusal"),
        )
    text = _text(message.get("content"))
    if finish == "content_filter":
        return RawResult(
            kind="succeeded",
            text=text,
            stop_reason="refusal",
            model=model,
            usage=usage,
            stop_details=StopDetails(type="refusal", category="content_filter"),
        )
    stop = _STOP_REASONS.get(finish, finish) if isinstance(finish, str) else None
    return RawResult(kind="succeeded", text=text, stop_reason=stop, model=model, usage=usage)


def _error_object(body: Any) -> Mapping[str, Any]:
    """The `{"message", "type", "param", "code"}` of an error body: OpenAI's and vLLM's `{"error": {...}}`,
    vLLM's older flat `{"object": "error", ...}`, or the inner object itself (the SDK's `exc.body`)."""
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            return inner
        return body
    return {}


def error_result(status: int, body: Any, headers: Mapping[str, str], now: float) -> RawResult:
    """A `RawResult` from an HTTP error: its status, its JSON body (or None) and headers (`now`, epoch
    seconds, reads a wait given as a date). A context overflow in any provider's words gets the code
    `context_length_exceeded`; OpenAI's string `code` is the error_code (a served model's integer code
    is only its status again, and is dropped)."""
    err = _error_object(body)
    message = err.get("message") if isinstance(err.get("message"), str) else None
    if message is None and isinstance(body, str | bytes):
        message = (body.decode("utf-8", "replace") if isinstance(body, bytes) else body)[:500] or None
    kind = err.get("type")
    code = err.get("code")
    error_code = code if isinstance(code, str) and code else None
    if status == 400 and error_code is None and message and _SERVED_CONTEXT.search(message):
        error_code = CONTEXT_EXCEEDED
    return RawResult(
        kind="http_error",
        status=status,
        error_type=kind if isinstance(kind, str) and kind else None,
        message=message,
        error_code=error_code,
        retry_after=retry_delay(headers, now) if status == 429 or status >= 500 else None,
    )


#: A batch line's top-level `error.code` for a request that never ran.
_NOT_RUN: Final = {"batch_expired": "expired", "batch_cancelled": "canceled", "batch_canceled": "canceled"}


def line_result(line: Any) -> tuple[str, RawResult]:
    """`(custom_id, RawResult)` of one line of a batch's output or error file (parsed JSON). `ValueError`
    for a line that is not one (no string custom_id)."""
    if not isinstance(line, Mapping) or type(line.get("custom_id")) is not str:
        raise ValueError(f"not a batch output line: {line!r}"[:200])
    custom_id: str = line["custom_id"]
    response = line.get("response")
    if isinstance(response, Mapping) and type(response.get("status_code")) is int:
        status: int = response["status_code"]
        if status == 200:
            return custom_id, completion_result(response.get("body"))
        return custom_id, error_result(status, response.get("body"), {}, 0.0)
    err = line.get("error")
    err = err if isinstance(err, Mapping) else {}
    code = err.get("code") if isinstance(err.get("code"), str) else None
    message = err.get("message") if isinstance(err.get("message"), str) else None
    not_run = _NOT_RUN.get(code or "")
    if not_run == "expired":
        return custom_id, RawResult(kind="expired", message=message)
    if not_run == "canceled":
        return custom_id, RawResult(kind="canceled", message=message)
    return custom_id, RawResult(kind="errored", error_type=code or "unknown_error", message=message)


# -- batches ------------------------------------------------------------------------------------

#: OpenAI's batch statuses as the core's three (`judgecore.decide.polling.BatchStatus`).
CORE_STATUS: Final = {
    "validating": "in_progress",
    "in_progress": "in_progress",
    "finalizing": "in_progress",
    "cancelling": "canceling",
    "completed": "ended",
    "expired": "ended",
    "cancelled": "ended",
    "failed": "ended",
}


@attrs.frozen(kw_only=True)
class BatchError:
    """One entry of a failed batch's `errors.data`: why its validation failed."""

    code: str | None
    message: str | None
    line: int | None = None


@attrs.frozen(kw_only=True)
class OpenAIBatch:
    """What OpenAI said about one batch at one moment (times epoch seconds): what the batch shell
    keeps, and the core's `BatchSnapshot` of it (`snapshot()`)."""

    id: str
    status: str
    input_file_id: str | None = None
    output_file_id: str | None = None
    error_file_id: str | None = None
    created_at: float = 0.0
    expires_at: float | None = None
    ended_at: float | None = None
    completed: int = 0
    failed: int = 0
    total: int = 0
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=lambda m: dict(m or {}))
    errors: tuple[BatchError, ...] = ()

    @property
    def ended(self) -> bool:
        return CORE_STATUS.get(self.status) == "ended"

    @property
    def sent_nothing(self) -> bool:
        """A `failed` batch: validation refused it (e.g. `token_limit_exceeded`); none of it ran or was
        billed, so its requests wait for a later, smaller sub-batch (not a send)."""
        return self.status == "failed"

    @property
    def result_files(self) -> tuple[str, ...]:
        """The files its results are in (output first), those that exist."""
        return tuple(f for f in (self.output_file_id, self.error_file_id) if f)

    def snapshot(self) -> BatchSnapshot:
        """The core's view: status `in_progress` / `canceling` / `ended`; counts: completed lines are
        succeeded, failed ones errored, the rest processing while live, and once ended expired (an
        `expired` batch), canceled (a `cancelled` one) or none (a `failed` one sent nothing)."""
        rest = max(self.total - self.completed - self.failed, 0)
        live = not self.ended
        counts = RequestCounts(
            processing=rest if live else 0,
            succeeded=self.completed,
            errored=self.failed,
            canceled=rest if self.status == "cancelled" else 0,
            expired=rest if self.status == "expired" else 0,
        )
        return BatchSnapshot(
            id=self.id,
            status=CORE_STATUS.get(self.status, "in_progress"),  # type: ignore[arg-type]
            created_at=self.created_at,
            expires_at=self.expires_at if self.expires_at is not None else self.created_at + 86_400.0,
            counts=counts,
            ended_at=self.ended_at,
            refused=self.refusal if self.sent_nothing else None,
        )

    @property
    def refusal(self) -> str:
        """Why a `failed` batch failed (its first error's code and message)."""
        first = self.errors[0] if self.errors else None
        if first is None:
            return "failed"
        return ": ".join(x for x in (first.code, first.message) if x) or "failed"


def _num(value: Any) -> float | None:
    return float(value) if type(value) in (int, float) else None


def batch_of(obj: Any) -> OpenAIBatch:
    """An `OpenAIBatch` from a Batch object's JSON (`GET /v1/batches/{id}`); ValueError without an id."""
    if not isinstance(obj, Mapping) or type(obj.get("id")) is not str:
        raise ValueError(f"not a batch object: {obj!r}"[:200])
    counts = obj.get("request_counts")
    counts = counts if isinstance(counts, Mapping) else {}
    errors = obj.get("errors")
    data = errors.get("data") if isinstance(errors, Mapping) else None
    found = tuple(
        BatchError(
            code=e.get("code") if isinstance(e.get("code"), str) else None,
            message=e.get("message") if isinstance(e.get("message"), str) else None,
            line=e.get("line") if type(e.get("line")) is int else None,
        )
        for e in (data if isinstance(data, list) else ())
        if isinstance(e, Mapping)
    )
    ended = [
        t
        for t in (_num(obj.get(k)) for k in ("completed_at", "failed_at", "expired_at", "cancelled_at"))
        if t is not None
    ]
    meta = obj.get("metadata")

    def text(key: str) -> str | None:
        value = obj.get(key)
        return value if isinstance(value, str) and value else None

    return OpenAIBatch(
        id=obj["id"],
        status=str(obj.get("status") or "validating"),
        input_file_id=text("input_file_id"),
        output_file_id=text("output_file_id"),
        error_file_id=text("error_file_id"),
        created_at=_num(obj.get("created_at")) or 0.0,
        expires_at=_num(obj.get("expires_at")),
        ended_at=max(ended) if ended else None,
        completed=_int(counts.get("completed")),
        failed=_int(counts.get("failed")),
        total=_int(counts.get("total")),
        metadata={str(k): str(v) for k, v in meta.items()} if isinstance(meta, Mapping) else {},
        errors=found,
    )


__all__ = [
    "CONTEXT_EXCEEDED",
    "CORE_STATUS",
    "BatchError",
    "OpenAIBatch",
    "batch_of",
    "completion_result",
    "error_result",
    "line_result",
    "openai_reading",
    "parse_duration",
    "retry_delay",
    "usage_of",
]
