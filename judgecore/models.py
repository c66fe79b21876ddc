"""Models: how many output tokens a request may ask of a known model, decided before anything is sent.

The API refuses a `max_tokens` above the model's output limit with a 400, which judgecore would only
learn after paying the routing probe (and, in a batch, after a whole sub-batch came back invalid).
`max_tokens_problem` answers up front from a table of known models' limits on the Messages API (no
beta headers, which judgecore never sends). A model not in the table passes through: the API stays
the judge of ids we do not know. Any value above `ABSURD_MAX_TOKENS` is refused for every model: no
model answers a million tokens, and such a value is a typo.

A dated snapshot id (`claude-haiku-4-5-20251001`) has the limit of its alias (`claude-haiku-4-5`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

ABSURD_MAX_TOKENS = 1_000_000

OUTPUT_LIMITS: Mapping[str, int] = MappingProxyType(
    {
        "claude-opus-4-8": 128_000,
        "claude-opus-4-7": 128_000,
        "claude-opus-4-6": 128_000,
        "claude-sonnet-4-6": 128_000,
        "claude-opus-4-5": 64_000,
        "claude-sonnet-4-5": 64_000,
        "claude-haiku-4-5": 64_000,
        "claude-opus-4-1": 32_000,
        "claude-opus-4-0": 32_000,
        "claude-opus-4": 32_000,
        "claude-sonnet-4-0": 64_000,
        "claude-sonnet-4": 64_000,
        "claude-3-7-sonnet": 64_000,
        "claude-3-5-haiku": 8_192,
        "claude-3-haiku": 4_096,
    }
)

_SNAPSHOT = re.compile(r"(?P<alias>.+?)(?:-(?:latest|\d{8}))$")


def output_limit(model: str) -> int | None:
    """The most output tokens `model` may be asked for, or None for a model not in the table."""
    if model in OUTPUT_LIMITS:
        return OUTPUT_LIMITS[model]
    m = _SNAPSHOT.fullmatch(model)
    return OUTPUT_LIMITS.get(m["alias"]) if m else None


def max_tokens_problem(model: str, max_tokens: int) -> str | None:
    """Why `max_tokens` cannot be asked of `model` (a one-line reason naming the limit), or None."""
    if max_tokens < 1:
        return f"max_tokens must be >= 1, got {max_tokens}"
    if max_tokens > ABSURD_MAX_TOKENS:
        return f"max_tokens {max_tokens:,} is above {ABSURD_MAX_TOKENS:,}, more than any model answers"
    limit = output_limit(model)
    if limit is not None and max_tokens > limit:
        return f"max_tokens {max_tokens:,} is above {model}'s output limit of {limit:,} tokens"
    return None
