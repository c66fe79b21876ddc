"""The providers a job can judge with, by name: how each builds its client from the environment, its
sync port, its sync route's request template, its batch port and the limits of one sub-batch. A
served judge's provider (`served_provider`) is built for the URL in its name: the `openai` SDK with
that URL as its base, no key required. The run asks `provider_of(model)` once, where it
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

from adapters.providers.anthropic.batch_api import AnthropicBatchApi
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.providers.openai import missing_extra
from adapters.providers.openai.batch_port import OpenAIBatchPort
from adapters.providers.openai.body import MAX_FILE_BYTES, MAX_LINES
from adapters.providers.openai.sync import OpenAIChatApi
from adapters.providers.openai.sync_template import OpenAISyncTemplate
from adapters.providers.port import BatchPort
from adapters.usage import UsageError
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.routing import RoutePolicy
from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS
from judgecore.wire.providers import JudgeNameError, parse_judge
from judgecore.wire.requests import RequestTemplate


@attrs.frozen
class BatchLimits:
    """What one sub-batch may hold on a provider's batch route (judgecore's caps, under the API's)."""

    requests: int
    bytes: int


@attrs.frozen
class Provider:
    """One provider's shell: `client(environ)`, `sync_api(client, timeout)` (a `MessagesApi`),
    `sync_template(template)` (what the sync run asks `params` of), `batch_port(client, keep_files)`
    (its `adapters.providers.port.BatchPort`; None: no batch route) and `batch_limits` (the most a
    sub-batch holds: `--max-batch-requests` / `--max-batch-bytes` are clamped to them)."""

    name: str
    client: Callable[[Mapping[str, str]], Any]
    sync_api: Callable[[Any, float | None], Any]
    sync_template: Callable[[RequestTemplate], Any]
    batch_port: Callable[[Any, bool], BatchPort] | None
    batch_limits: BatchLimits
    #: the per-minute limit routing scales its threshold by, as read from a probe's headers, its name,
    #: and the figure at which the threshold is `--sync-threshold` (also the one assumed when none is
    #: read): Anthropic's output tokens per minute, OpenAI's tokens per minute
    route_limit: Callable[[RateLimitReading], int | None] = attrs.field(default=lambda r: r.otpm)
    limit_name: str = "OTPM"
    reference_limit: int = 400_000
    #: whether that limit counts a request's input tokens too (OpenAI's TPM: uncached and cached input
    #: and output), not its output alone (Anthropic's OTPM): what a deadline's sync-route time counts
    limit_counts_input: bool = False
    #: the modules its ports live in (they import its SDK): a run imports them once, the collector
    #: paused (`adapters.run.operations.connect`)
    sdk_modules: tuple[str, ...] = ()

    def route_policy(self, base_threshold: int) -> RoutePolicy:
        """The job's routing on this provider: `base_threshold` requests at its reference limit."""
        return RoutePolicy(
            base_threshold=base_threshold,
            reference_otpm=self.reference_limit,
            assumed_otpm=self.reference_limit,
            sync_only=None if self.batch else self.name,
            limit_name=self.limit_name,
        )

    @property
    def batch(self) -> bool:
        """Whether its batch route is built."""
        return self.batch_port is not None


def _anthropic_client(environ: Mapping[str, str]) -> Any:
    import anthropic

    if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise UsageError("ANTHROPIC_API_KEY is not set (nothing was sent); `judgecore demo` needs no key")
    # Our own loops own every retry (adapters/providers/anthropic/sync_api.py, batch_api.py); the SDK's
    # retries are set per call there, so the client default does not matter for correctness.
    return anthropic.AsyncAnthropic(max_retries=0)


def _anthropic_sync(client: Any, timeout: float | None) -> Any:

    return AnthropicMessagesApi(client, timeout=timeout)


def _anthropic_batch(client: Any, keep_files: bool) -> BatchPort:

    return AnthropicBatchApi(client)  # a Message Batch leaves no file behind: nothing to keep


def _openai_client(environ: Mapping[str, str]) -> Any:

    if (hint := missing_extra()) is not None:
        raise UsageError(f"{hint} (nothing was sent)")
    if not environ.get("OPENAI_API_KEY"):
        raise UsageError("OPENAI_API_KEY is not set (nothing was sent); an openai: judge needs it")
    import openai

    return openai.AsyncOpenAI(
        api_key=environ["OPENAI_API_KEY"], base_url=environ.get("OPENAI_BASE_URL") or None, max_retries=0
    )


def _openai_sync(client: Any, timeout: float | None) -> Any:

    return OpenAIChatApi(client, timeout=timeout)


def _openai_batch(client: Any, keep_files: bool) -> BatchPort:

    return OpenAIBatchPort.over(client, keep_files=keep_files)


def _openai_template(template: RequestTemplate) -> Any:

    return OpenAISyncTemplate(template)


#: Anthropic's Message Batches: 100,000 requests and 256 MB per batch; judgecore's caps 8,000 and 250 MB.
ANTHROPIC_BATCH = BatchLimits(requests=MAX_REQUESTS, bytes=MAX_BYTES)
#: OpenAI's Batch API: 50,000 lines and 200 MB per input file; judgecore's caps 8,000 and 190 MB.
OPENAI_BATCH = BatchLimits(requests=MAX_LINES, bytes=MAX_FILE_BYTES)

#: OpenAI's routing reference: the threshold is `--sync-threshold` at 4,000,000 tokens per minute
#: (input and output together: about ten times the output alone, so the same tier as Anthropic's
#: 400,000 OTPM reference), scaled by the TPM a probe reads (`x-ratelimit-limit-tokens`).
OPENAI_REFERENCE_TPM = 4_000_000


def _served_client(url: str, environ: Mapping[str, str]) -> Any:
    """A served model's client: the `openai` SDK with the judge's URL as its base. A served model needs
    no key (vLLM's `--api-key` is optional): `SERVED_API_KEY` when set, else a placeholder the server
    ignores (the SDK refuses an empty one). A plain install was refused before (`judge_problem`)."""
    import openai

    key = environ.get("SERVED_API_KEY") or SERVED_NO_KEY
    return openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0)


def _served_sync(client: Any, timeout: float | None) -> Any:

    return OpenAIChatApi(client, timeout=timeout, env="the URL of served:MODEL@URL")


#: The key a served judge's client sends when `SERVED_API_KEY` is not set (a server without
#: `--api-key` ignores it).
SERVED_NO_KEY = "EMPTY"


def served_provider(url: str) -> Provider:
    """The provider of a `served:MODEL@URL` judge: Chat Completions at `url`, sync only."""
    return _served(functools.partial(_served_client, url))


def _served(client: Callable[[Mapping[str, str]], Any]) -> Provider:
    return Provider(
        "served",
        client,
        _served_sync,
        _openai_template,
        None,  # no batch route
        OPENAI_BATCH,
        sdk_modules=("adapters.providers.openai.sync",),
    )


PROVIDERS: Mapping[str, Provider] = {
    "anthropic": Provider(
        "anthropic",
        _anthropic_client,
        _anthropic_sync,
        lambda t: t,
        _anthropic_batch,
        ANTHROPIC_BATCH,
        sdk_modules=("adapters.providers.anthropic.sync_api", "adapters.providers.anthropic.batch_api"),
    ),
    "openai": Provider(
        "openai",
        _openai_client,
        _openai_sync,
        _openai_template,
        _openai_batch,
        OPENAI_BATCH,
        route_limit=lambda r: r.tokens.limit,
        limit_name="TPM",
        reference_limit=OPENAI_REFERENCE_TPM,
        limit_counts_input=True,
        sdk_modules=("adapters.providers.openai.sync", "adapters.providers.openai.batch_port"),
    ),
    # a served judge's provider is built for its URL (`served_provider`); this entry names the provider
    "served": _served(functools.partial(_served_client, "")),
}


def provider_of(model: str) -> Provider:
    """The provider of a judge's name (`claude-...` Anthropic's, `openai:...` OpenAI's, `served:M@URL`
    one for its server; `served:M`, a served judge's identity as a checkpoint keeps it, the served
    provider's entry); `UsageError` for one `judgecore run` cannot send to (the settings refuse those
    first)."""
    if model.startswith("served:") and "@" not in model:  # a served judge's identity, as kept (no URL)
        return PROVIDERS["served"]
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


__all__ = [
    "ANTHROPIC_BATCH",
    "OPENAI_BATCH",
    "OPENAI_REFERENCE_TPM",
    "PROVIDERS",
    "SERVED_NO_KEY",
    "BatchLimits",
    "Provider",
    "provider_of",
    "served_provider",
]
