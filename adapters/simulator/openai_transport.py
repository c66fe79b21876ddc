"""`openai_client`: a real `openai` client (async by default) talking to a `Simulator` in-process,
through the same httpx2 transport the Anthropic client uses (`transport.SimTransport`)."""

from __future__ import annotations

from typing import Literal, overload

import httpx2
import openai

from .logic import Simulator
from .transport import DEFAULT_BASE_URL, SimTransport


@overload
def openai_client(
    sim: Simulator,
    *,
    api_key: str = ...,
    async_: Literal[True] = ...,
    max_retries: int = ...,
    base_url: str = ...,
) -> openai.AsyncOpenAI: ...
@overload
def openai_client(
    sim: Simulator, *, api_key: str = ..., async_: Literal[False], max_retries: int = ..., base_url: str = ...
) -> openai.OpenAI: ...
def openai_client(
    sim: Simulator,
    *,
    api_key: str = "sk-sim",
    async_: bool = True,
    max_retries: int = 0,
    base_url: str = DEFAULT_BASE_URL + "/v1",
) -> openai.AsyncOpenAI | openai.OpenAI:
    """A real `AsyncOpenAI` (default) or `OpenAI` client answered by `sim` in-process (retries off by
    default: judgecore runs its own)."""
    transport = SimTransport(sim)
    if async_:
        return openai.AsyncOpenAI(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=transport, base_url=base_url),
        )
    return openai.OpenAI(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        http_client=httpx2.Client(transport=transport, base_url=base_url),
    )
