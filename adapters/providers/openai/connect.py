"""The OpenAI provider's ports (and a served model's), built when a run connects: the client from the
environment (or for a served model's URL), the sync port and the batch port. The `openai` SDK, an
optional extra, and the port modules that import it (`sync`, `batch_port`) are imported here when
the first is built: `adapters.providers.registry` names the provider without loading them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from adapters.providers.openai import missing_extra
from adapters.usage import UsageError

#: The key a served judge's client sends when `SERVED_API_KEY` is not set (a server without
#: `--api-key` ignores it).
SERVED_NO_KEY = "EMPTY"


def client(environ: Mapping[str, str]) -> Any:
    """`openai.AsyncOpenAI` from the environment's key (and `OPENAI_BASE_URL`); exit 2 without the
    extra or the key."""
    if (hint := missing_extra()) is not None:
        raise UsageError(f"{hint} (nothing was sent)")
    if not environ.get("OPENAI_API_KEY"):
        raise UsageError("OPENAI_API_KEY is not set (nothing was sent); an openai: judge needs it")
    import openai

    return openai.AsyncOpenAI(
        api_key=environ["OPENAI_API_KEY"], base_url=environ.get("OPENAI_BASE_URL") or None, max_retries=0
    )


def served_client(url: str, environ: Mapping[str, str]) -> Any:
    """A served model's client: the `openai` SDK with the judge's URL as its base. A served model needs
    no key (vLLM's `--api-key` is optional): `SERVED_API_KEY` when set, else a placeholder the server
    ignores (the SDK refuses an empty one). A plain install was refused before (`judge_problem`)."""
    import openai

    key = environ.get("SERVED_API_KEY") or SERVED_NO_KEY
    return openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=0)


def sync_api(client: Any, timeout: float | None) -> Any:
    """The sync port (Chat Completions) over `client`."""
    from adapters.providers.openai.sync import OpenAIChatApi

    return OpenAIChatApi(client, timeout=timeout)


def served_sync_api(client: Any, timeout: float | None) -> Any:
    """A served model's sync port: its errors name the judge's URL, not an environment variable."""
    from adapters.providers.openai.sync import OpenAIChatApi

    return OpenAIChatApi(client, timeout=timeout, env="the URL of served:MODEL@URL")


def sync_template(template: Any) -> Any:
    """The sync route's request template (`OpenAISyncTemplate`) of the job's `RequestTemplate`."""
    from adapters.providers.openai.sync_template import OpenAISyncTemplate

    return OpenAISyncTemplate(template)


def batch_port(client: Any, keep_files: bool) -> Any:
    """The batch port (Files + Batch API) over `client`."""
    from adapters.providers.openai.batch_port import OpenAIBatchPort

    return OpenAIBatchPort.over(client, keep_files=keep_files)


__all__ = [
    "SERVED_NO_KEY",
    "batch_port",
    "client",
    "served_client",
    "served_sync_api",
    "sync_api",
    "sync_template",
]
