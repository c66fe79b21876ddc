"""Classification: what one result means, and so what happens to its item next.

Every answer the API can give for one request (a batch result line, a sync response, a sync error)
is first normalised by the shell into a `RawResult`, then `classify` maps it through the tables below
to an `Outcome`: `succeeded`; `miss` (the model ran out of room: scored as a miss, never retried);
`quarantined` (the request itself is invalid: never retried, kept for inspection); `retry` (it never
ran, or failed for reasons unrelated to it; with a delay hint); `fatal` (the run's configuration is
wrong: stop everything).
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

import attrs

ResultKind = Literal["succeeded", "errored", "canceled", "expired", "http_error", "connection_error"]


class Status(StrEnum):
    """Where an item stands after one outcome. The first three are final."""

    SUCCEEDED = "succeeded"
    MISS = "miss"
    QUARANTINED = "quarantined"
    RETRY = "retry"
    FATAL = "fatal"


FINAL_STATUSES = frozenset({Status.SUCCEEDED, Status.MISS, Status.QUARANTINED})


class FailureClass(StrEnum):
    """Why a request did not simply succeed; decides what is done about it."""

    MODEL_TRUNCATION = "MODEL_TRUNCATION"
    MODEL_CONTEXT = "MODEL_CONTEXT"
    INVALID_REQUEST = "INVALID_REQUEST"
    INFRA_TRANSIENT = "INFRA_TRANSIENT"
    RATE_LIMIT = "RATE_LIMIT"
    NOT_RUN = "NOT_RUN"
    FATAL_CONFIG = "FATAL_CONFIG"


@attrs.frozen(kw_only=True)
class Usage:
    """Token counts of one answer (the four the cost and cache reports need)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0


@attrs.frozen(kw_only=True)
class RawResult:
    """One answer for one request, with SDK objects already translated away by the shell."""

    kind: ResultKind
    text: str | None = None
    stop_reason: str | None = None
    model: str | None = None
    usage: Usage | None = None
    status: int | None = None
    error_type: str | None = None
    message: str | None = None
    retry_after: float | None = None


@attrs.frozen(kw_only=True)
class Outcome:
    """The meaning of one result: status, failure class, a human reason, and what the answer held."""

    status: Status
    failure: FailureClass | None
    reason: str
    text: str | None = None
    stop_reason: str | None = None
    model: str | None = None
    usage: Usage | None = None
    error_type: str | None = None
    error_message: str | None = None
    retry_after: float | None = None

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES


_CONTEXT = re.compile(
    r"prompt is too long|context (length|window)|maximum context|too many (input )?tokens",
    re.IGNORECASE,
)
_CUT_IN_TRANSIT = re.compile(
    r"unexpected end of (json|input|data|file)|unterminated string|eof while parsing"
    r"|(body|json)\b.{0,40}\b(truncated|cut off|incomplete)",
    re.IGNORECASE,
)

_Verdict = tuple[Status, FailureClass, str]

_INVALID: _Verdict = (Status.QUARANTINED, FailureClass.INVALID_REQUEST, "invalid request")
_CONTEXT_MISS: _Verdict = (
    Status.MISS,
    FailureClass.MODEL_CONTEXT,
    "prompt over the context window",
)
_TRANSIT: _Verdict = (
    Status.RETRY,
    FailureClass.INFRA_TRANSIENT,
    "request body was cut off in transit",
)
_TRANSIENT: _Verdict = (Status.RETRY, FailureClass.INFRA_TRANSIENT, "transient server error")
_RATE: _Verdict = (Status.RETRY, FailureClass.RATE_LIMIT, "rate limited")
_FATAL: _Verdict = (Status.FATAL, FailureClass.FATAL_CONFIG, "API configuration error")

# Batch `errored` lines, by error.type. Unknown types are treated as transient (retried, bounded).
_BY_ERROR_TYPE: dict[str, _Verdict] = {
    "invalid_request_error": _INVALID,
    "request_too_large": _INVALID,
    "api_error": _TRANSIENT,
    "overloaded_error": _TRANSIENT,
    "timeout_error": _TRANSIENT,
    "rate_limit_error": _RATE,
    "authentication_error": _FATAL,
    "permission_error": _FATAL,
    "billing_error": _FATAL,
    "not_found_error": _FATAL,
}

# Sync HTTP errors, by status. Other 4xx: invalid; other 5xx: transient.
_BY_STATUS: dict[int, _Verdict] = {
    400: _INVALID,
    401: _FATAL,
    402: _FATAL,
    403: _FATAL,
    404: _FATAL,
    408: _TRANSIENT,
    409: _TRANSIENT,
    413: _INVALID,
    429: _RATE,
}

# Succeeded answers that ran out of room, by stop_reason.
_MISS_STOPS: dict[str, _Verdict] = {
    "max_tokens": (Status.MISS, FailureClass.MODEL_TRUNCATION, "answer truncated at max_tokens"),
    "model_context_window_exceeded": (
        Status.MISS,
        FailureClass.MODEL_CONTEXT,
        "answer stopped at the context window",
    ),
}

_NOT_RUN: dict[str, str] = {
    "canceled": "batch was canceled before this request ran (not billed)",
    "expired": "batch expired before this request ran (not billed)",
}


def _refine_invalid(verdict: _Verdict, message: str | None) -> _Verdict:
    """An invalid request about context length is a miss; one cut off in transit is transient."""
    if verdict is _INVALID and message:
        if _CONTEXT.search(message):
            return _CONTEXT_MISS
        if _CUT_IN_TRANSIT.search(message):
            return _TRANSIT
    return verdict


def _verdict(result: RawResult) -> _Verdict:
    match result.kind:
        case "errored":
            base = _BY_ERROR_TYPE.get(result.error_type or "", _TRANSIENT)
            return _refine_invalid(base, result.message)
        case "http_error":
            status = result.status or 0
            default = _TRANSIENT if status >= 500 or status == 0 else _INVALID
            return _refine_invalid(_BY_STATUS.get(status, default), result.message)
        case "connection_error":
            return (Status.RETRY, FailureClass.INFRA_TRANSIENT, "connection failed")
        case "canceled" | "expired":
            return (Status.RETRY, FailureClass.NOT_RUN, _NOT_RUN[result.kind])
        case "succeeded":  # pragma: no cover - handled in classify
            raise AssertionError("succeeded results have no failure verdict")


def classify(result: RawResult) -> Outcome:
    """The `Outcome` of one normalised result (see the module docstring for the taxonomy)."""
    if result.kind == "succeeded":
        miss = _MISS_STOPS.get(result.stop_reason or "")
        status, failure, reason = miss if miss else (Status.SUCCEEDED, None, "succeeded")
        return Outcome(
            status=status,
            failure=failure,
            reason=reason,
            text=result.text,
            stop_reason=result.stop_reason,
            model=result.model,
            usage=result.usage,
        )
    status, failure, reason = _verdict(result)
    detail = result.error_type or (f"HTTP {result.status}" if result.status else None)
    if detail:
        reason = f"{reason} ({detail})"
    return Outcome(
        status=status,
        failure=failure,
        reason=reason,
        error_type=result.error_type or result.kind,
        error_message=result.message,
        retry_after=result.retry_after if status is Status.RETRY else None,
    )
