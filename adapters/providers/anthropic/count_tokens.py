"""`--dry-run --count-tokens`: one prompt of the job counted by the API, to scale the estimate.

The plan's input estimate is call-free (UTF-8 bytes / 4). Asked for it, a dry run makes one
`client.messages.count_tokens` call per distinct prompt shape (a job has one: the route's request
template, the rubric as a system block, the verdict's `output_config`, `thinking`), with the messages
of the job's median-sized item: the API answers the prompt's real input tokens, sends no message
and bills nothing. Their ratio to the plan's estimate of the same prompt scales the estimate of every
request (`judgecore.decide.planning.Learned`). A job whose checkpoint holds answers learns from them instead.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import orjson

from adapters.usage import UsageError
from judgecore.decide.planning import JobPlan, Learned, estimate_tokens
from judgecore.job.items import RoutePath
from judgecore.wire.requests import Requests


def count_params(job: JobPlan, requests: Requests, path: RoutePath) -> tuple[dict[str, Any], int]:
    """The `count_tokens` parameters of the median-sized request of `requests` on `path` (as the SDK
    types define them: `model`, `messages`, `system`, `output_config`, `thinking`; no `max_tokens`),
    and the plan's call-free estimate of the same prompt (tokens)."""
    template = job.template(path)
    sizes = requests.message_sizes
    k = sorted(range(len(sizes)), key=sizes.__getitem__)[len(sizes) // 2]
    messages = job.items.messages()[requests.positions[k]]  # a dry run's items hold them (`--count-tokens`)
    params: dict[str, Any] = {"model": template.model, "messages": orjson.loads(messages)}
    rubric_tokens = 0
    if template.system_json is not None:
        system = orjson.loads(template.system_json)
        params["system"] = system
        texts = system if isinstance(system, list) else [{"text": system}]
        rubric_tokens = estimate_tokens(sum(len(str(b.get("text", "")).encode()) for b in texts))
    if template.output_config_json is not None:
        params["output_config"] = orjson.loads(template.output_config_json)
    if template.thinking_json is not None:
        params["thinking"] = orjson.loads(template.thinking_json)
    return params, (sizes[k] + 3) // 4 + rubric_tokens


def count_prompt(
    job: JobPlan,
    requests: Requests,
    path: RoutePath,
    *,
    client: Any = None,
    environ: Mapping[str, str] | None = None,
) -> Learned:
    """One prompt of `requests` counted by the API (`client`: a sync `anthropic.Anthropic`; None: one
    built from the environment). A `UsageError` (exit 2) when there is no key or the API refuses."""

    import anthropic

    environ = os.environ if environ is None else environ
    if client is None:
        if not environ.get("ANTHROPIC_API_KEY") and not environ.get("ANTHROPIC_AUTH_TOKEN"):
            raise UsageError("--count-tokens asks the API to count a prompt: ANTHROPIC_API_KEY is not set")
        client = anthropic.Anthropic(max_retries=2)
    params, estimate = count_params(job, requests, path)
    try:
        counted = client.messages.count_tokens(**params)
    except anthropic.APIStatusError as exc:
        raise UsageError(
            f"--count-tokens: the API refused to count a prompt ({exc.status_code}: {exc.message})"
        ) from None
    except anthropic.APIConnectionError as exc:
        raise UsageError(f"--count-tokens: cannot reach the API ({exc})") from None
    return Learned(counted=int(counted.input_tokens), counted_estimate=estimate)


__all__ = ["count_params", "count_prompt"]
