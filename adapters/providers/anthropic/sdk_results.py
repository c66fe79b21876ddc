"""The one translation of what the SDK hands back into the core's values, for both ports.

`adapters.providers.anthropic.sync_api` (one message) and `adapters.providers.anthropic.batch_api` (batch calls and result lines) both read
the SDK through these functions, so an answer means the same on either route:

- `message_result(message)`: an SDK `Message` (a sync answer, a streamed one's final message, or a
  succeeded batch line's) as a `succeeded` result: text blocks only (thinking and tool blocks are never
  kept in `text`), `stop_reason`, `stop_details` (a refusal's category and explanation), usage.
- `line_result(result)`: one batch results line's `result` (succeeded / errored / canceled / expired);
  an errored line's envelope is `{"type": "error", "error": {"type", "message", "details":
  {"error_code"}?}, "request_id"}`, its `error_code` read as the SDK reads an HTTP error's.
- `result_line(line)`: one raw line of a results file (bytes, parsed with orjson) as `(custom_id,
  Outcome)`, with no SDK model built: the harvest's per-line path. Its translation is the core's pure
  `judgecore.results.resultlines.line_outcome`, which means exactly what `classify(line_result(...))` means
  for the SDK's model of the same line (`tests/batch/test_result_lines.py` checks that on lines
  generated from the SDK's own types).
- `error_result(exc, base_url=..., now=...)`: an exception of an SDK call. A status error is an
  `http_error` with its status, type, message, `error_code` (`exc.error_code`, read by
  `anthropic._exceptions.extract_error_code`) and retry-after (an error event inside a 200 stream is
  `errored`, as a batch line would be); a connection that could not be made at all (refused, DNS, no
  usable URL: nothing reached a server) is a `connection_error` whose `error_type` is
  `judgecore.results.outcomes.CONNECT_FAILED`, naming the base URL; any other transport failure (a timeout, a
  dropped connection, a stream cut) is a plain `connection_error`.
"""

from __future__ import annotations

import time
from typing import Any

import anthropic
import orjson
from anthropic._exceptions import extract_error_code

from adapters.providers.port import NEVER_CONNECTED  # no connection made at all: nothing was made
from judgecore.decide.retry_after import retry_after
from judgecore.results.outcomes import CONNECT_FAILED, Outcome, RawResult, StopDetails, Usage
from judgecore.results.resultlines import line_outcome


def usage_of(u: Any) -> Usage | None:
    """The four token counts of an SDK `Usage` (None stays None)."""
    if u is None:
        return None
    return Usage(
        input_tokens=u.input_tokens or 0,
        output_tokens=u.output_tokens or 0,
        cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
        cache_read_input_tokens=u.cache_read_input_tokens or 0,
    )


def stop_details_of(value: Any) -> StopDetails | None:
    """An SDK `RefusalStopDetails` (or its dict) as the core's `StopDetails`."""
    if value is None:
        return None
    if not isinstance(value, dict):
        value = {k: getattr(value, k, None) for k in ("type", "category", "explanation")}
    return StopDetails.from_json(value)


def message_result(message: Any) -> RawResult:
    """A `succeeded` RawResult from an SDK `Message` (text blocks joined; usage's four counts)."""
    texts = [b.text for b in (message.content or ()) if getattr(b, "type", None) == "text"]
    details = getattr(message, "stop_details", None)  # set on refusals only: no call on the hot path
    return RawResult(
        kind="succeeded",
        text="".join(texts) if texts else None,
        stop_reason=message.stop_reason,
        model=message.model,
        usage=usage_of(message.usage),
        stop_details=None if details is None else stop_details_of(details),
    )


def _envelope(value: Any) -> Any:
    """An SDK model as plain JSON (what `extract_error_code` reads), a mapping as it is."""
    if value is None or isinstance(value, dict):
        return value
    to_dict = getattr(value, "to_dict", None)
    return to_dict() if callable(to_dict) else None


def line_result(result: Any) -> RawResult:
    """A `RawResult` from one results line's `result` (succeeded / errored / canceled / expired)."""
    kind = getattr(result, "type", None)
    if kind == "succeeded":
        return message_result(result.message)
    if kind == "errored":
        envelope = _envelope(getattr(result, "error", None))
        inner = envelope.get("error") if isinstance(envelope, dict) else None
        inner = inner if isinstance(inner, dict) else {}
        return RawResult(
            kind="errored",
            error_type=inner.get("type"),
            message=inner.get("message"),
            error_code=extract_error_code(envelope),
        )
    if kind in ("canceled", "expired"):
        return RawResult(kind=kind)
    return RawResult(kind="errored", error_type=f"unknown_result_type:{kind}", message=repr(result)[:200])


def result_line(line: bytes) -> tuple[str, Outcome]:
    """One line of a batch's results file as `(custom_id, Outcome)`, through the core's one pure
    translation of a line (`judgecore.results.resultlines.line_outcome`). A line that is not a results line
    (torn, not JSON, no custom_id or result) raises `ValueError`."""
    obj = orjson.loads(line)
    try:
        custom_id, result = obj["custom_id"], obj["result"]
        if type(custom_id) is not str or type(result) is not dict:  # orjson makes exactly these
            raise TypeError(type(custom_id).__name__)
        return custom_id, line_outcome(result)
    except (KeyError, TypeError, AttributeError) as exc:
        raise ValueError(f"not a batch results line: {line[:200]!r}") from exc


def error_result(exc: BaseException, *, base_url: str | None = None, now: float | None = None) -> RawResult:
    """The failure of one SDK call as a `RawResult` (see the module docstring). `now` (epoch seconds)
    reads a `retry-after` given as an HTTP date."""
    if isinstance(exc, anthropic.APIStatusError):
        message = exc.api_message or exc.message
        code = exc.error_code
        if exc.status_code == 200:  # an error event in the middle of a stream
            return RawResult(kind="errored", error_type=exc.type, message=message, error_code=code)
        return RawResult(
            kind="http_error",
            status=exc.status_code,
            error_type=exc.type,
            message=message,
            error_code=code,
            retry_after=retry_after(exc.response.headers, time.time() if now is None else now),
        )
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, NEVER_CONNECTED) or isinstance(cause, NEVER_CONNECTED):
        detail = str(cause if cause is not None else exc) or type(cause or exc).__name__
        where = f" at {base_url}" if base_url else ""
        return RawResult(
            kind="connection_error",
            error_type=CONNECT_FAILED,
            message=f"cannot connect to the API{where}: {detail} (check ANTHROPIC_BASE_URL)"[:500],
        )
    message = f"{type(exc).__name__}: {exc}"
    if cause is not None and str(cause):
        message += f" ({type(cause).__name__}: {cause})"
    return RawResult(kind="connection_error", message=message[:500])


__all__ = [
    "NEVER_CONNECTED",
    "error_result",
    "line_result",
    "message_result",
    "result_line",
    "stop_details_of",
    "usage_of",
]
