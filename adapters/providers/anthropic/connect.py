"""The Anthropic provider's ports, built when a run connects: its client from the environment, its
sync port and its batch port. The SDK, and the port modules that import it (`sync_api`, `batch_api`),
are imported here when the first is built: `adapters.providers.registry` names the provider without
loading them, so a dry run never imports the SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.usage import UsageError


def client(environ: Mapping[str, str]) -> Any:
    """`anthropic.AsyncAnthropic` from the environment's key; exit 2 without one."""
    import anthropic

    if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
        raise UsageError("ANTHROPIC_API_KEY is not set (nothing was sent); `judgecore demo` needs no key")
    # Our own loops own every retry (adapters/providers/anthropic/sync_api.py, batch_api.py); the SDK's
    # retries are set per call there, so the client default does not matter for correctness. The key,
    # token and base URL are the ones checked above (`judge(environ=...)` may differ from os.environ).
    return anthropic.AsyncAnthropic(
        api_key=environ.get("ANTHROPIC_API_KEY") or None,
        auth_token=environ.get("ANTHROPIC_AUTH_TOKEN") or None,
        base_url=environ.get("ANTHROPIC_BASE_URL") or None,
        max_retries=0,
    )


def local_client(base_url: str, api_key: str) -> Any:
    """`anthropic.AsyncAnthropic` for a server at `base_url` (the demo's simulator), with no retries
    of its own."""
    import anthropic

    return anthropic.AsyncAnthropic(base_url=base_url, api_key=api_key, max_retries=0)


def sync_api(client: Any, timeout: float | None) -> Any:
    """The sync port over `client`."""
    from adapters.providers.anthropic.sync_api import AnthropicMessagesApi

    return AnthropicMessagesApi(client, timeout=timeout)


def batch_port(client: Any, keep_files: bool) -> Any:
    """The batch port over `client` (a Message Batch leaves no file behind: nothing to keep)."""
    from adapters.providers.anthropic.batch_api import AnthropicBatchApi

    return AnthropicBatchApi(client)


__all__ = ["batch_port", "client", "local_client", "sync_api"]
