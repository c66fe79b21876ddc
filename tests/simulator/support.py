"""Request builders shared by the simulator tests."""

from __future__ import annotations

from typing import Any

MODEL = "claude-opus-4-8"
RUBRIC = "You grade answers on a 1-10 scale. " * 400  # ~3,600 tokens: above the cache minimum


def params(text: str = "Grade answer #1", *, max_tokens: int = 256, **extra: Any) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": max_tokens,
        "messages": [{"role": "user", "content": text}],
        **extra,
    }


def cached_system(ttl: str | None = None) -> list[dict[str, Any]]:
    cc: dict[str, str] = {"type": "ephemeral"}
    if ttl:
        cc["ttl"] = ttl
    return [{"type": "text", "text": RUBRIC, "cache_control": cc}]


def batch_requests(n: int, prefix: str = "r", **kw: Any) -> list[dict[str, Any]]:
    return [{"custom_id": f"{prefix}{i}", "params": params(f"item {i}", **kw)} for i in range(n)]
