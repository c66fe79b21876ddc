"""The Messages API port of the sync path: one request in, one plain answer out; SDK objects stay here.

`MessagesApi.create(params)` returns `(RawResult, RateLimitReading, request_id)`. Success, every HTTP
error and every connection failure come back as values for `judgecore.classify`; only bugs raise. A
connection that could not be made at all (refused, DNS failure, a URL without a usable scheme) is a
`connection_error` whose `error_type` is `judgecore.results.outcomes.CONNECT_FAILED` and whose message names
the base URL: the run machine stops on it when the run has had no HTTP answer yet. Every answer and
every failure is translated by `adapters.providers.anthropic.sdk_results`, the batch port's translation too.

Streaming. The SDK refuses, before sending, a non-streaming request whose `max_tokens` may take over
ten minutes (above 21,333, or 8,192 for the Opus 4 / 4.1 ids). A request asking for more than
`STREAM_ABOVE` output tokens is therefore received through the SDK's streaming helper
(`messages.stream(...)`, `get_final_message()`); the answer is the same `RawResult`. An `error` event
in the middle of a stream becomes an `errored` result classified by its error type.

Retries. The SDK retries 408/409/429/5xx and connection errors by itself (2 retries by default) and
sleeps for whatever `retry-after` says, an hour included, inside one `create` call: a wait the progress
view, the pacer and the user can't see. So `AnthropicMessagesApi` pins the SDK's `max_retries` to 0,
whatever the client was built with: one `create` is exactly one HTTP send, and the run machine
(`judgecore.run.sync`) owns every retry, each wait visible and paced.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2

from adapters.providers.anthropic.sdk_results import error_result as _translate
from adapters.providers.anthropic.sdk_results import message_result
from adapters.providers.port import Answer
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import RawResult

#: Requests allowed more output tokens than this are received by streaming (see the module docstring).
STREAM_ABOVE = 8192


def error_result(exc: anthropic.APIStatusError, now: float) -> RawResult:
    """A RawResult from an SDK status error (`adapters.providers.anthropic.sdk_results.error_result`)."""
    return _translate(exc, now=now)


class AnthropicMessagesApi:
    """`MessagesApi` over `anthropic.AsyncAnthropic`, with the SDK's own retries switched off."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        timeout: float | None = None,
        now: Callable[[], float] = time.time,
    ) -> None:
        # max_retries=0: see the module docstring. `timeout` (seconds, per phase) overrides the SDK's
        # 600 s read timeout; a timeout comes back as a connection_error that the run retries.
        # `now` (epoch seconds) reads a `retry-after` given as an HTTP date.
        self._now = now
        if timeout is None:
            self._client = client.with_options(max_retries=0)
        else:
            self._client = client.with_options(max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    def _connection_failed(self, exc: BaseException) -> RawResult:
        return _translate(exc, base_url=self.base_url, now=self._now())

    async def create(self, params: dict[str, Any]) -> Answer:
        try:
            if params.get("max_tokens", 0) > STREAM_ABOVE:
                return await self._stream(params)
            raw = await self._client.messages.with_raw_response.create(**params)
            message = await raw.parse()
        except anthropic.APIStatusError as exc:
            headers = exc.response.headers
            return error_result(exc, self._now()), RateLimitReading.from_headers(headers), exc.request_id
        except (anthropic.APIConnectionError, httpx2.TransportError) as exc:
            return self._connection_failed(exc), RateLimitReading(), None
        except (ValueError, TypeError) as exc:
            # The SDK refused the params before sending: a property of this request (quarantined).
            result = RawResult(
                kind="http_error",
                status=400,
                error_type="invalid_request_error",
                message=f"refused by the SDK before sending: {exc}",
            )
            return result, RateLimitReading(), None
        return message_result(message), RateLimitReading.from_headers(raw.headers), raw.request_id

    async def _stream(self, params: dict[str, Any]) -> Answer:
        async with self._client.messages.stream(**params) as stream:
            message = await stream.get_final_message()
            headers = stream.response.headers
            return message_result(message), RateLimitReading.from_headers(headers), stream.request_id
