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

from adapters.providers.anthropic import connect as anthropic_connect
from adapters.providers.openai import MAX_FILE_BYTES, MAX_LINES
from adapters.providers.openai import connect as openai_connect
from adapters.providers.openai.connect import SERVED_NO_KEY
from adapters.usage import UsageError
from judgecore.decide.routing import RoutePolicy
from judgecore.values import frozen
from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS
from judgecore.wire.providers import JudgeNameError, parse_judge
from judgecore.wire.requests import RequestTemplate


@frozen
class BatchLimits:
    """What one sub-batch may hold on a provider's batch route (judgecore's caps, under the API's)."""

    requests: int
    bytes: int


@frozen
class Provider:
    """One provider's shell: `client(environ)`, `sync_api(client, timeout)` (a `MessagesApi`),
    `sync_template(template)` (what the sync run asks `params` of), `batch_port(client, keep_files)`
    (its `adapters.providers.port.BatchPort`; None: no batch route) and `batch_limits` (the most a
    sub-batch holds: `--max-batch-requests` / `--max-batch-bytes` are clamped to them)."""

    name: str
    client: Callable[[Mapping[str, str]], Any]
    sync_api: Callable[[Any, float | None], Any]
    sync_template: Callable[[RequestTemplate], Any]
    batch_port: Callable[[Any, bool], Any] | None  # an `adapters.providers.port.BatchPort`
    batch_limits: BatchLimits
    #: the per-minute limit routing scales its threshold by, as read from a probe's headers, its name,
    #: and the figure at which the threshold is `--sync-threshold` (also the one assumed when none is
    #: read): Anthropic's output tokens per minute, OpenAI's tokens per minute
    #: (of a `judgecore.decide.ratelimit.RateLimitReading`: typed `Any` here, so that naming a provider,
    #: as a dry run does, does not load the pacing module the run's sync route alone uses)
    route_limit: Callable[[Any], int | None] = attrs.field(default=lambda r: r.otpm)
    limit_name: str = "OTPM"
    reference_limit: int = 400_000
    #: whether that limit counts a request's input tokens too (OpenAI's TPM: uncached and cached input
    #: and output), not its output alone (Anthropic's OTPM): what a deadline's sync-route time counts
    limit_counts_input: bool = False
    #: the modules its ports live in (they import its SDK): a run imports them once, the collector
    #: paused (`adapters.run.operations.connect`)
    sdk_modules: tuple[str, ...] = ()
    #: whether one batch holds one model's requests only (OpenAI's: its input file names one model),
    #: so a lane of several judges runs a batch machine per judge (`adapters.run.panels`)
    batch_one_model: bool = False

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


#: Anthropic's Message Batches: 100,000 requests and 256 MB per batch; judgecore's caps 8,000 and 250 MB.
ANTHROPIC_BATCH = BatchLimits(requests=MAX_REQUESTS, bytes=MAX_BYTES)
#: OpenAI's Batch API: 50,000 lines and 200 MB per input file; judgecore's caps 8,000 and 190 MB.
OPENAI_BATCH = BatchLimits(requests=MAX_LINES, bytes=MAX_FILE_BYTES)

#: OpenAI's routing reference: the threshold is `--sync-threshold` at 4,000,000 tokens per minute
#: (input and output together: about ten times the output alone, so the same tier as Anthropic's
#: 400,000 OTPM reference), scaled by the TPM a probe reads (`x-ratelimit-limit-tokens`).
OPENAI_REFERENCE_TPM = 4_000_000


def served_provider(url: str) -> Provider:
    """The provider of a `served:MODEL@URL` judge: Chat Completions at `url`, sync only."""
    return _served(functools.partial(openai_connect.served_client, url))


def _served(client: Callable[[Mapping[str, str]], Any]) -> Provider:
    return Provider(
        "served",
        client,
        openai_connect.served_sync_api,
        openai_connect.sync_template,
        None,  # no batch route
        OPENAI_BATCH,
        sdk_modules=("adapters.providers.openai.sync",),
    )


PROVIDERS: Mapping[str, Provider] = {
    "anthropic": Provider(
        "anthropic",
        anthropic_connect.client,
        anthropic_connect.sync_api,
        lambda t: t,
        anthropic_connect.batch_port,
        ANTHROPIC_BATCH,
        sdk_modules=("adapters.providers.anthropic.sync_api", "adapters.providers.anthropic.batch_api"),
    ),
    "openai": Provider(
        "openai",
        openai_connect.client,
        openai_connect.sync_api,
        openai_connect.sync_template,
        openai_connect.batch_port,
        OPENAI_BATCH,
        route_limit=lambda r: r.tokens.limit,
        limit_name="TPM",
        reference_limit=OPENAI_REFERENCE_TPM,
        limit_counts_input=True,
        sdk_modules=("adapters.providers.openai.sync", "adapters.providers.openai.batch_port"),
        batch_one_model=True,
    ),
    # a served judge's provider is built for its URL (`served_provider`); this entry names the provider
    "served": _served(functools.partial(openai_connect.served_client, "")),
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
