"""Classification: what one result means, and so what happens to its item next.

Every answer the API can give for one request (a batch result line, a sync response, a sync error)
is first normalised by the shell into a `RawResult`, then `classify` maps it through the tables below
to an `Outcome`: `succeeded`; `miss` (the model ran out of room: scored as a miss, never retried);
`quarantined` (the request itself is invalid: never retried, kept for inspection); `retry` (it never
ran, or failed for reasons unrelated to it; with a delay hint); `fatal` (the run's configuration is
wrong, or the account cannot be served: stop everything, quarantine nothing).

One table decides an error, read in this order: the error's `error.details.error_code` (as the SDK
reads it, `anthropic._exceptions.extract_error_code`) first, since a code changes what a status means
(a 429 `enforced_spend_limit_reached` is a spend limit, not a rate); then the batch line's error type
or the HTTP status; then the message, for the causes the API names only in words (a context overflow,
a spend limit you set, a body cut in transit). An unknown code is read as its bare type and status.

An account state (`ACCOUNT_STATE`: an organization on hold, a spend limit reached, billing) is `fatal`
for the run and nothing for the item: the item stays pending, and a rerun once the account is fixed
sends it (a batch an earlier run sent answered for the account as it was then: its lines only warn,
`judgecore.run.batch`). A refusal (`stop_reason: "refusal"`) is an answer, so it is final: a `miss` of class
`MODEL_REFUSAL`, its partial text and `stop_details` kept, never resent and never scored.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any, Final, Literal

# the names the plan, the job machine and the settings read live in `judgecore.results.status` (a dry run
# imports no classification tables); they are this module's too, as they always were
from judgecore.results.status import ACCOUNT_REFUSED, FINAL_STATUSES, Status, Usage, _new, _setters
from judgecore.values import frozen

ResultKind = Literal["succeeded", "errored", "canceled", "expired", "http_error", "connection_error"]


class FailureClass(StrEnum):
    """Why a request did not simply succeed; decides what is done about it."""

    MODEL_TRUNCATION = "MODEL_TRUNCATION"
    MODEL_CONTEXT = "MODEL_CONTEXT"
    INVALID_REQUEST = "INVALID_REQUEST"
    INFRA_TRANSIENT = "INFRA_TRANSIENT"
    RATE_LIMIT = "RATE_LIMIT"
    NOT_RUN = "NOT_RUN"
    FATAL_CONFIG = "FATAL_CONFIG"
    #: The model declined to answer (`stop_reason: "refusal"`): final, never resent, never scored.
    MODEL_REFUSAL = "MODEL_REFUSAL"
    #: The API refused the account (on hold, a spend limit, billing): the run stops, the item stays pending.
    ACCOUNT_STATE = "ACCOUNT_STATE"


#: `RawResult.error_type` of a connection that could not be made at all (refused, DNS, bad URL): no
#: request reached a server. Both run machines compare against this one value.
CONNECT_FAILED: Final = "connect_failed"

#: The error_code of a request body that did not arrive in time (a batch create splits, a message retries).
REQUEST_BODY_TIMEOUT: Final = "request_body_timeout"


@frozen(kw_only=True)
class StopDetails:
    """Why the model stopped, as the API says it (`stop_details`; today only refusals carry one)."""

    type: str = "refusal"
    category: str | None = None
    explanation: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "category": self.category, "explanation": self.explanation}

    @classmethod
    def from_json(cls, value: Any) -> StopDetails | None:
        """A `StopDetails` from its JSON object (None for anything else)."""
        if not isinstance(value, dict):
            return None
        category, explanation = value.get("category"), value.get("explanation")
        return cls(
            type=str(value.get("type") or "refusal"),
            category=category if isinstance(category, str) else None,
            explanation=explanation if isinstance(explanation, str) else None,
        )


@frozen(kw_only=True)
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
    #: `error.details.error_code` of an error (what the SDK reads as `exc.error_code`).
    error_code: str | None = None
    stop_details: StopDetails | None = None


@frozen(kw_only=True)
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
    error_code: str | None = None
    stop_details: StopDetails | None = None

    @classmethod
    def answer(
        cls,
        status: Status,
        failure: FailureClass | None,
        reason: str,
        text: str | None,
        stop_reason: str | None,
        model: str | None,
        usage: Usage | None,
        stop_details: StopDetails | None = None,
    ) -> Outcome:
        """The outcome of an answer (no error fields), by position: equal to `Outcome(...)` given the
        same fields by keyword, made without its per-field frozen setattr (see `_setters`). What
        `classify` and the harvest's per-line translation (`judgecore.results.resultlines`) build."""
        return _outcome(
            cls,
            status,
            failure,
            reason,
            text,
            stop_reason,
            model,
            usage,
            None,
            None,
            None,
            None,
            stop_details,
        )

    @property
    def final(self) -> bool:
        return self.status in FINAL_STATUSES

    @property
    def account_state(self) -> bool:
        """The API refused the account, not this request: the run stops, the item stays pending."""
        return self.failure is FailureClass.ACCOUNT_STATE


_OUTCOME_SETTERS = _setters(Outcome)


def _outcome(
    cls: type[Outcome],
    status: Status,
    failure: FailureClass | None,
    reason: str,
    text: str | None,
    stop_reason: str | None,
    model: str | None,
    usage: Usage | None,
    error_type: str | None,
    error_message: str | None,
    retry_after: float | None,
    error_code: str | None,
    stop_details: StopDetails | None,
) -> Outcome:
    """`Outcome(...)` by position: every slot set, in field order."""
    o = _new(cls)
    s0, s1, s2, s3, s4, s5, s6, s7, s8, s9, s10, s11 = _OUTCOME_SETTERS
    s0(o, status)
    s1(o, failure)
    s2(o, reason)
    s3(o, text)
    s4(o, stop_reason)
    s5(o, model)
    s6(o, usage)
    s7(o, error_type)
    s8(o, error_message)
    s9(o, retry_after)
    s10(o, error_code)
    s11(o, stop_details)
    return o


_CONTEXT = re.compile(
    r"prompt is too long|context (length|window)|maximum context|too many (input )?tokens"
    r"|input length and `?max_tokens`? exceeds? (the )?context (limit|window)",
    re.IGNORECASE,
)
#: A spend limit you set answers a 400 invalid_request_error with no code, only these words
#: ("You have reached your specified API usage limits", or "... workspace API usage limits").
_SPEND_WORDS = re.compile(r"reached your specified (workspace )?api usage limits?", re.IGNORECASE)
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
_ON_HOLD: _Verdict = (Status.FATAL, FailureClass.ACCOUNT_STATE, "organization on hold")
_SPEND: _Verdict = (Status.FATAL, FailureClass.ACCOUNT_STATE, "spend limit reached")
_BILLING: _Verdict = (Status.FATAL, FailureClass.ACCOUNT_STATE, "billing refused")
_BODY_TIMEOUT: _Verdict = (
    Status.RETRY,
    FailureClass.INFRA_TRANSIENT,
    "request body did not arrive in time",
)
_RAMP: _Verdict = (Status.RETRY, FailureClass.RATE_LIMIT, "ramp limit exceeded")
_REFUSAL: _Verdict = (Status.MISS, FailureClass.MODEL_REFUSAL, "the model refused to answer")

# Errors by `error.details.error_code`, read before anything else (`anthropic/_error_classes.py`). An
# unknown code falls through to the type and status tables.
_BY_ERROR_CODE: dict[str, _Verdict] = {
    "organization_on_hold": _ON_HOLD,  # 400
    "enforced_spend_limit_reached": _SPEND,  # 429: the tier's monthly cap, no retry-after
    "contract_spend_limit_reached": _SPEND,  # 429
    "linked_organization_spend_limit_reached": _SPEND,  # 402
    "linked_organization_billing_unavailable": _BILLING,  # 402
    REQUEST_BODY_TIMEOUT: _BODY_TIMEOUT,  # 400: send a smaller body (a batch create splits)
    "ramp_limit_exceeded": _RAMP,  # 429 with retry-after
    # OpenAI's wire (`adapters.providers.openai.translate` gives a served model's context words this code)
    "insufficient_quota": (Status.FATAL, FailureClass.ACCOUNT_STATE, "quota exhausted"),  # 429
    "context_length_exceeded": _CONTEXT_MISS,  # 400
}

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
    "billing_error": _BILLING,
    "not_found_error": _FATAL,
}

# Sync HTTP errors, by status. Other 4xx: invalid; other 5xx: transient.
_BY_STATUS: dict[int, _Verdict] = {
    400: _INVALID,
    401: _FATAL,
    402: _BILLING,
    403: _FATAL,
    404: _FATAL,
    408: _TRANSIENT,
    409: _TRANSIENT,
    413: _INVALID,
    429: _RATE,
}

#: What a succeeded answer that is not a refusal means, by its stop_reason:
#: `MISS_STOPS.get(stop_reason or "", ANSWERED)` (read by `classify` and `judgecore.results.resultlines`).
ANSWERED: tuple[Status, FailureClass | None, str] = (Status.SUCCEEDED, None, "succeeded")
#: The answers that ran out of room, by stop_reason.
MISS_STOPS: dict[str, tuple[Status, FailureClass | None, str]] = {
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
    """An invalid request about context length is a miss; one saying a spend limit you set was reached
    is an account state; one cut off in transit is transient."""
    if verdict is _INVALID and message:
        if _CONTEXT.search(message):
            return _CONTEXT_MISS
        if _SPEND_WORDS.search(message):
            return _SPEND
        if _CUT_IN_TRANSIT.search(message):
            return _TRANSIT
    return verdict


def _verdict(result: RawResult) -> _Verdict:
    if result.error_code is not None and result.kind in ("errored", "http_error"):
        by_code = _BY_ERROR_CODE.get(result.error_code)
        if by_code is not None:
            return by_code
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
        stop = result.stop_reason
        if stop == "refusal":
            return _refusal(result)
        status, failure, reason = MISS_STOPS.get(stop or "", ANSWERED)
        return _outcome(
            Outcome,
            status,
            failure,
            reason,
            result.text,
            stop,
            result.model,
            result.usage,
            None,
            None,
            None,
            None,
            result.stop_details,
        )
    status, failure, reason = _verdict(result)
    detail = result.error_type or (f"HTTP {result.status}" if result.status else None)
    if detail:
        reason = f"{reason} ({detail})"
    return _outcome(
        Outcome,
        status,
        failure,
        reason,
        None,
        None,
        None,
        None,
        result.error_type or result.kind,
        result.message,
        result.retry_after if status is Status.RETRY else None,
        result.error_code,
        None,
    )


def _refusal(result: RawResult) -> Outcome:
    """A refusal: an answer (billed, final), its text (empty or partial) and `stop_details` kept; its
    `error_type` is the refusal's category ("refusal" when it names none)."""
    status, failure, reason = _REFUSAL
    details = result.stop_details
    category = details.category if details is not None else None
    return _outcome(
        Outcome,
        status,
        failure,
        f"{reason} ({category})" if category else reason,
        result.text,
        result.stop_reason,
        result.model,
        result.usage,
        category or "refusal",
        details.explanation if details is not None else None,
        None,
        None,
        details,
    )


def stop_line(outcome: Outcome, where: str | None = None) -> str:
    """The one line saying why `outcome` stops a run (a `fatal` one), on one line.

    An account state names its cause (the error_code, or what the words said) and promises nothing
    was quarantined; any other names its class, reason, where it happened and the API's message.
    """
    message = outcome.error_message or "no message"
    if outcome.account_state:
        cause = outcome.error_code or outcome.reason.split(" (", 1)[0].replace(" ", "_")
        said = message.rstrip(". ")
        text = f"{ACCOUNT_REFUSED}: {cause}: {said}; nothing was quarantined; rerun once the account is fixed"
    elif where is None:
        text = f"{outcome.reason}: {message}"
    else:
        detail = f": {outcome.error_message}" if outcome.error_message else ""
        text = f"{outcome.failure or 'FATAL_CONFIG'}: {outcome.reason} ({where}){detail}; stopping"
    return " ".join(text.split())
