"""The providers a job can judge with, by name: how each builds its client from the environment, its
sync port, and its sync route's request template. The run asks `provider_of(model)` once, where it
connects and where it sends, and never branches on a provider anywhere else.

Each provider's rate-limit reader lives in its port (`AnthropicMessagesApi` reads `anthropic-ratelimit-*`,
`OpenAIChatApi` reads `x-ratelimit-*` with `adapters.providers.openai.translate.openai_reading`): both
return the core's `RateLimitReading`, so pacing is the same machine on either wire.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from adapters.usage import UsageError
from judgecore.wire.providers import JudgeNameError, parse_judge
from judgecore.wire.requests import RequestTemplate


@attrs.frozen
class Provider:
    """One provider's shell: `client(environ)`, `sync_api(client, timeout)` (a `MessagesApi`), and
    `sync_template(template)` (what the sync run asks `params` of); `batch`: whether its batch route
    is built."""

    name: str
    client: Callable[[Mapping[str, str]], Any]
    sync_api: Callable[[Any, float | None], Any]
    sync_template: Callable[[RequestTemplate], Any]
    batch: bool


def _anthropic_client(environ: Mapping[str, str]) -> Any:
    import anthropic

    if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise UsageError("ANTHROPIC_API_KEY is not set (nothing was sent); `judgecore demo` needs no key")
    # Our own loops own every retry (adapters/providers/anthropic/sync_api.py, batch_api.py); the SDK's
    # retries are set per call there, so the client default does not matter for correctness.
    return anthropic.AsyncAnthropic(max_retries=0)


def _anthropic_sync(client: Any, timeout: float | None) -> Any:
    from adapters.providers.anthropic.sync_api import AnthropicMessagesApi

    return AnthropicMessagesApi(client, timeout=timeout)


def _openai_client(environ: Mapping[str, str]) -> Any:
    from adapters.providers.openai import missing_extra

    if (hint := missing_extra()) is not None:
        raise UsageError(f"{hint} (nothing was sent)")
    if not environ.get("OPENAI_API_KEY"):
        raise UsageError("OPENAI_API_KEY is not set (nothing was sent); an openai: judge needs it")
    import openai

    return openai.AsyncOpenAI(
        api_key=environ["OPENAI_API_KEY"], base_url=environ.get("OPENAI_BASE_URL") or None, max_retries=0
    )


def _openai_sync(client: Any, timeout: float | None) -> Any:
    from adapters.providers.openai.sync import OpenAIChatApi

    return OpenAIChatApi(client, timeout=timeout)


def _openai_template(template: RequestTemplate) -> Any:
    from adapters.providers.openai.sync_template import OpenAISyncTemplate

    return OpenAISyncTemplate(template)


PROVIDERS: Mapping[str, Provider] = {
    "anthropic": Provider("anthropic", _anthropic_client, _anthropic_sync, lambda t: t, batch=True),
    "openai": Provider("openai", _openai_client, _openai_sync, _openai_template, batch=False),
}


def provider_of(model: str) -> Provider:
    """The provider of a judge's name (`claude-...` Anthropic's, `openai:...` OpenAI's); `UsageError`
    for one `judgecore run` cannot send to (the settings refuse those first)."""
    try:
        provider = PROVIDERS.get(parse_judge(model).provider)
    except JudgeNameError as exc:
        raise UsageError(str(exc)) from None
    if provider is None:
        raise UsageError(f"{model!r}: judgecore run sends to {', '.join(f'{p}:' for p in PROVIDERS)}")
    return provider


__all__ = ["PROVIDERS", "Provider", "provider_of"]
