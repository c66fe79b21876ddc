"""The sync port over OpenAI's Chat Completions (and any OpenAI-compatible server): `OpenAIChatApi`.

The same shape as the Anthropic sync port (`adapters.providers.anthropic.sync_api.MessagesApi`): `create(params)` returns
`(RawResult, RateLimitReading, request_id)`; success, every HTTP error and every connection failure come
back as values for `judgecore.classify` (translated by the pure `adapters.providers.openai.translate`),
only bugs raise. `params` are a Chat Completions body as keyword arguments
(`adapters.providers.openai.body.OpenAITemplate.params`).

Retries. The SDK retries 408/409/429/5xx and connection errors itself (2 retries by default), honouring a
`retry-after` of up to 60 s inside one call, where no pacer and no progress view sees it. The port pins
`max_retries=0`: one `create` is one HTTP send, and the run machine owns every retry.

The answer is read as plain JSON (orjson on the raw body), not as the SDK's pydantic model: the same
translation reads a batch output line's `response.body`, so both routes mean the same by an answer.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import orjson

from adapters.providers.openai.translate import completion_result, error_result, openai_reading
from adapters.providers.port import NEVER_CONNECTED
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import CONNECT_FAILED, RawResult

Answer = tuple[RawResult, RateLimitReading, str | None]


def connection_result(exc: BaseException, base_url: str, env: str) -> RawResult:
    """A connection failure as a `RawResult`: `CONNECT_FAILED` naming the endpoint (and the variable that
    sets it) when nothing reached a server; a plain `connection_error` otherwise (a timeout, a drop)."""
    cause = exc.__cause__ or exc.__context__
    if isinstance(exc, NEVER_CONNECTED) or isinstance(cause, NEVER_CONNECTED):
        detail = str(cause if cause is not None else exc) or type(cause or exc).__name__
        return RawResult(
            kind="connection_error",
            error_type=CONNECT_FAILED,
            message=f"cannot connect to the API at {base_url}: {detail} (check {env})"[:500],
        )
    message = f"{type(exc).__name__}: {exc}"
    if cause is not None and str(cause):
        message += f" ({type(cause).__name__}: {cause})"
    return RawResult(kind="connection_error", message=message[:500])


def status_error_result(exc: openai.APIStatusError, now: float) -> RawResult:
    """An SDK status error as a `RawResult` (`exc.body` is the error object the SDK took out of the body)."""
    body = exc.body if exc.body is not None else {"message": exc.message}
    return error_result(exc.status_code, body, exc.response.headers, now)


class OpenAIChatApi:
    """`MessagesApi` over `openai.AsyncOpenAI`, the SDK's own retries off (see the module docstring).

    `env` names the variable that sets the endpoint, for the line a failed connection prints
    (`OPENAI_BASE_URL`; a served model's is its name's URL)."""

    def __init__(
        self,
        client: openai.AsyncOpenAI,
        *,
        timeout: float | None = None,
        now: Callable[[], float] = time.time,
        env: str = "OPENAI_BASE_URL",
    ) -> None:
        self._now = now
        self._env = env
        if timeout is None:
            self._client = client.with_options(max_retries=0)
        else:
            self._client = client.with_options(max_retries=0, timeout=timeout)

    @property
    def base_url(self) -> str:
        return str(self._client.base_url)

    async def create(self, params: dict[str, Any]) -> Answer:
        try:
            raw = await self._client.chat.completions.with_raw_response.create(**params)
            body = orjson.loads(raw.content)
        except openai.APIStatusError as exc:
            reading = openai_reading(exc.response.headers, self._now())
            return status_error_result(exc, self._now()), reading, exc.request_id
        except (openai.APIConnectionError, httpx2.TransportError) as exc:
            return connection_result(exc, self.base_url, self._env), RateLimitReading(), None
        except orjson.JSONDecodeError as exc:  # a 200 whose body is not JSON: the server's fault
            return (
                RawResult(kind="errored", error_type="api_error", message=f"not JSON: {exc}"),
                RateLimitReading(),
                None,
            )
        except (ValueError, TypeError) as exc:
            # The SDK refused the params before sending: a property of this request (quarantined).
            result = RawResult(
                kind="http_error",
                status=400,
                error_type="invalid_request_error",
                message=f"refused by the SDK before sending: {exc}",
            )
            return result, RateLimitReading(), None
        return completion_result(body), openai_reading(raw.headers, self._now()), raw.request_id


__all__ = ["Answer", "OpenAIChatApi", "connection_result", "status_error_result"]
