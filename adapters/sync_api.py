"""The Messages API port of the sync path: one request in, one plain answer out; SDK objects stay here.

`MessagesApi.create(params)` returns `(RawResult, RateLimitReading, request_id)`. Success, every HTTP
error and every connection failure come back as values (`RawResult(kind="succeeded" | "http_error" |
"connection_error")`) for `judgecore.classify`; only bugs raise.

Retries. The SDK retries 408/409/429/5xx and connection errors by itself (2 retries by default) and
sleeps for whatever `retry-after` says, an hour included, inside one `create` call: a wait the progress
view, the pacer and the user can't see. So `AnthropicMessagesApi` pins the SDK's `max_retries` to 0,
whatever the client was built with: one `create` is exactly one HTTP send, and `adapters.sync` owns every
retry, each wait visible (progress, notices) and paced. Composed: SDK sends per call (1) x our sends per
item per run (at most `max_attempts + max_rate_limited - 1`: 12 with the defaults 3 and 10), instead of
the 3 x that an SDK left at its default of 2 retries would multiply in, with hidden sleeps.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import anthropic

from judgecore import RawResult, Usage
from judgecore.ratelimit import RateLimitReading

Answer = tuple[RawResult, RateLimitReading, str | None]


class MessagesApi(Protocol):
    """What the sync path needs of the Messages API."""

    async def create(self, params: dict[str, Any]) -> Answer: ...


def retry_after_of(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from `retry-after-ms` (exact) or `retry-after` (seconds; HTTP dates ignored)."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) * scale
        except ValueError:
            continue
        if seconds > 0:
            return seconds
    return None


def message_result(message: Any) -> RawResult:
    """A `succeeded` RawResult from an SDK `Message` (text blocks joined; usage's four counts)."""
    texts = [b.text for b in (message.content or ()) if getattr(b, "type", None) == "text"]
    u = message.usage
    usage = None
    if u is not None:
        usage = Usage(
            input_tokens=u.input_tokens or 0,
            output_tokens=u.output_tokens or 0,
            cache_creation_input_tokens=u.cache_creation_input_tokens or 0,
            cache_read_input_tokens=u.cache_read_input_tokens or 0,
        )
    return RawResult(
        kind="succeeded",
        text="".join(texts) if texts else None,
        stop_reason=message.stop_reason,
        model=message.model,
        usage=usage,
    )


def error_result(exc: anthropic.APIStatusError) -> RawResult:
    """An `http_error` RawResult from an SDK status error (type and message from the error envelope)."""
    return RawResult(
        kind="http_error",
        status=exc.status_code,
        error_type=exc.type,
        message=exc.api_message or exc.message,
        retry_after=retry_after_of(exc.response.headers),
    )


class AnthropicMessagesApi:
    """`MessagesApi` over `anthropic.AsyncAnthropic`, with the SDK's own retries switched off."""

    def __init__(self, client: anthropic.AsyncAnthropic, *, timeout: float | None = None) -> None:
        # max_retries=0: see the module docstring. `timeout` (seconds, per phase) overrides the SDK's
        # 600 s read timeout; a timeout comes back as a connection_error that our loop retries.
        if timeout is None:
            self._client = client.with_options(max_retries=0)
        else:
            self._client = client.with_options(max_retries=0, timeout=timeout)

    async def create(self, params: dict[str, Any]) -> Answer:
        try:
            raw = await self._client.messages.with_raw_response.create(**params)
        except anthropic.APIStatusError as exc:
            headers = exc.response.headers
            return error_result(exc), RateLimitReading.from_headers(headers), exc.request_id
        except anthropic.APIConnectionError as exc:
            return RawResult(kind="connection_error", message=str(exc)), RateLimitReading(), None
        except (ValueError, TypeError) as exc:
            # The SDK refused the params before sending (e.g. max_tokens too large for a non-streaming
            # call): a property of this request, so it is quarantined like a 400.
            result = RawResult(
                kind="http_error",
                status=400,
                error_type="invalid_request_error",
                message=f"refused by the SDK before sending: {exc}",
            )
            return result, RateLimitReading(), None
        message = await raw.parse()
        return message_result(message), RateLimitReading.from_headers(raw.headers), raw.request_id
