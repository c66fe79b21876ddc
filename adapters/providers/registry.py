"""The providers a job can judge with, by name: how each builds its client from the environment, its
sync port, and its sync route's request template. A served judge's provider (`served_provider`) is
built for the URL in its name: the `openai` SDK with that URL as its base, no key required. The run asks `provider_of(model)` once, where it
connects and where it sends, and never branches on a provider anywhere else.

Each provider's rate-limit reader lives in its port (`AnthropicMessagesApi` reads `anthropic-ratelimit-*`,
`OpenAIChatApi` reads `x-ratelimit-*` with `adapters.providers.openai.translate.openai_reading`): both
return the core's `RateLimitReading`, so pacing is the same machine on either wire.
"""

from __future__ import annotations

import functools
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


def _served_client(url: str, environ: Mapping[str, str]) -> Any:
    """A served model's client: the `openai` SDK with the judge's URL as its base. A served model needs
    no key (vLLM's `--api-key` is optional): `SERVED_API_KEY` when set, else a placeholder the server
    ignores (the SDK refuses an empty one). A plain install was refused before (`judge_problem`)."""
    import openai

    key = environ.get("SERVED_API_KEY") or SERVED_NO_KEY
    return openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0)


def _served_sync(client: Any, timeout: float | None) -> Any:
    from adapters.providers.openai.sync import OpenAIChatApi

    return OpenAIChatApi(client, timeout=timeout, env="the URL of served:MODEL@URL")


#: The key a served judge's client sends when `SERVED_API_KEY` is not set (a server without
#: `--api-key` ignores it).
SERVED_NO_KEY = "EMPTY"


def served_provider(url: str) -> Provider:
    """The provider of a `served:MODEL@URL` judge: Chat Completions at `url`, sync only."""
    return Provider(
        "served", functools.partial(_served_client, url), _served_sync, _openai_template, batch=False
    )


PROVIDERS: Mapping[str, Provider] = {
    "anthropic": Provider("anthropic", _anthropic_client, _anthropic_sync, lambda t: t, batch=True),
    "openai": Provider("openai", _openai_client, _openai_sync, _openai_template, batch=False),
    # a served judge's provider is built for its URL (`served_provider`); this entry names the provider
    "served": Provider(
        "served", functools.partial(_served_client, ""), _served_sync, _openai_template, batch=False
    ),
}


def provider_of(model: str) -> Provider:
    """The provider of a judge's name (`claude-...` Anthropic's, `openai:...` OpenAI's); `UsageError`
    for one `judgecore run` cannot send to (the settings refuse those first)."""
    try:
        judge = parse_judge(model)
    except JudgeNameError as exc:
        raise UsageError(str(exc)) from None
    if judge.provider == "served" and judge.url is not None:
        return served_provider(judge.url)
    provider = PROVIDERS.get(judge.provider)
    if provider is None:
        raise UsageError(f"{model!r}: judgecore run sends to {', '.join(f'{p}:' for p in PROVIDERS)}")
    return provider


__all__ = ["PROVIDERS", "SERVED_NO_KEY", "Provider", "provider_of", "served_provider"]
