"""Prompt-cache accounting: which part of a prompt is written to, read from, or missed by the cache.

Theory of operation. Each breakpoint (a block carrying `cache_control`, or the last block under a
top-level `cache_control`) names a prefix: the exact canonical bytes of every block up to and including
it, in tools -> system -> messages order, for one model. `plan` finds the longest breakpoint whose entry is
alive at `now` (a read of that prefix), then every later breakpoint whose prefix reaches
`min_tokens` is written, the tokens between the previous cached point and it going to that breakpoint's
TTL (5m or 1h). Prefixes under `min_tokens` are not cached: both counters stay 0. `commit` applies a plan:
writes entries and refreshes the hit (lifetime measured from the start of the request, i.e. `now`).
Planning is pure, so a request refused by a rate limit leaves the cache untouched.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import attrs

from judgecore.values import frozen

from .answers import prompt_blocks


@frozen
class CachePlan:
    input_tokens: int  # tokens after the last cached point (plus framing)
    read_tokens: int
    write_5m: int
    write_1h: int
    #: (entry key, ttl seconds) to write or refresh when committed
    touches: tuple[tuple[bytes, float], ...] = ()

    @property
    def creation_tokens(self) -> int:
        return self.write_5m + self.write_1h

    def usage(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.creation_tokens,
            "cache_read_input_tokens": self.read_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.write_5m,
                "ephemeral_1h_input_tokens": self.write_1h,
            },
        }


@attrs.define
class PromptCache:
    """Live entries: prefix key -> expiry (epoch seconds)."""

    min_tokens: int = 1024
    entries: dict[bytes, float] = attrs.field(factory=dict)

    def plan(self, params: Mapping[str, Any], now: float) -> CachePlan:
        blocks, framing = prompt_blocks(params)
        model = str(params.get("model")).encode()
        total = sum(b.tokens for b in blocks) + framing
        breakpoints: list[tuple[bytes, int, float]] = []  # (key, prefix tokens, ttl)
        running = hashlib.sha256(model)
        prefix_tokens = 0
        for block in blocks:
            running.update(len(block.key).to_bytes(8, "big") + block.key)
            prefix_tokens += block.tokens
            if block.ttl is not None:
                breakpoints.append((running.copy().digest(), prefix_tokens, block.ttl))
        hit = -1
        for i in range(len(breakpoints) - 1, -1, -1):
            key, tokens, _ttl = breakpoints[i]
            if tokens >= self.min_tokens and self.entries.get(key, float("-inf")) > now:
                hit = i
                break
        touches: list[tuple[bytes, float]] = []
        read = 0
        cached_upto = 0
        if hit >= 0:
            key, read, ttl = breakpoints[hit]
            cached_upto = read
            touches.append((key, ttl))
        w5 = w1 = 0
        for key, tokens, ttl in breakpoints[hit + 1 :]:
            if tokens < self.min_tokens:
                continue
            if ttl >= 3600:
                w1 += tokens - cached_upto
            else:
                w5 += tokens - cached_upto
            cached_upto = tokens
            touches.append((key, ttl))
        return CachePlan(total - read - w5 - w1, read, w5, w1, tuple(touches))

    def commit(self, plan: CachePlan, now: float) -> None:
        for key, ttl in plan.touches:
            self.entries[key] = max(self.entries.get(key, 0.0), now + ttl)
        if len(self.entries) > 4096:
            for key in [k for k, exp in self.entries.items() if exp <= now]:
                del self.entries[key]
