"""Prices: what each model's tokens cost, the batch discount and the cache's rates, what one answer cost,
and how an amount of money is written. `planning` (the estimate) and `spend` (the budget) both price with
these, so neither imports the other for them."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from judgecore.job.items import RoutePath
from judgecore.results.status import Usage
from judgecore.wire.models import MODELS, ModelPrice

#: Every model's prices (`judgecore.wire.models`, the one table), for callers that take a mapping.
DEFAULT_PRICES: Mapping[str, ModelPrice] = MappingProxyType(
    {m: info.price for m, info in MODELS.items() if info.price is not None}
)

# Shortest prefix the API caches, by model; a shorter rubric is silently not cached (the prompt-caching
# page; the 5.5 models' 512 from their migration guides; Fable/Mythos 5.2 by family, an estimate).
MIN_CACHEABLE_TOKENS: Mapping[str, int] = {
    **dict.fromkeys(
        ("claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1", "claude-fable-5",
         "claude-mythos-5", "claude-opus-5", "claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5"),
        512,
    ),
    **dict.fromkeys(("claude-opus-4-8", "claude-sonnet-5", "claude-sonnet-4-6", "claude-sonnet-4-5"), 1024),
    **dict.fromkeys(("claude-opus-4-1", "claude-opus-4-0", "claude-sonnet-4-0"), 1024),
    **dict.fromkeys(("claude-mythos-preview", "claude-opus-4-7"), 2048),
    **dict.fromkeys(("claude-opus-4-6", "claude-opus-4-5", "claude-haiku-4-5"), 4096),
}  # fmt: skip
DEFAULT_MIN_CACHEABLE = 1024

BATCH_DISCOUNT = 0.5
CACHE_WRITE = {"sync": 1.25, "batch": 2.0}  # 5-minute TTL on sync, 1-hour in batches
CACHE_READ = 0.1  # the usual multiplier; each model's own is `ModelPrice.cache_read`
TTL = {"sync": "5m", "batch": "1h"}


def usage_cost(usage: Usage, price: ModelPrice, path: RoutePath) -> float:
    """What one answer cost, from its reported usage: cache writes at the path's TTL rate, reads at the
    model's `cache_read` multiplier, and the batch discount on the batch path."""
    input_units = (
        usage.input_tokens
        + usage.cache_creation_input_tokens * CACHE_WRITE[path]
        + usage.cache_read_input_tokens * price.cache_read
    )
    cost = (input_units * price.input_per_mtok + usage.output_tokens * price.output_per_mtok) / 1e6
    return cost * (BATCH_DISCOUNT if path == "batch" else 1.0)


def usd(x: float | None) -> str:
    """An amount of dollars as written everywhere (`judgecore.summary.numfmt`'s rule for money)."""
    return "unknown" if x is None else f"${x:,.4f}" if x < 1 else f"${x:,.2f}"
