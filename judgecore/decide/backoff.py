"""Backoff: how long to wait before a retry, with the random draw passed in.

Full jitter (`u x min(cap, base x 2**attempt)`) spreads retries of many requests over the whole window.
A server's `retry-after` is a floor, honoured whatever its size (past the SDK's old 60 s cap too): the
delay is then `retry_after + u x base`, so clients told the same instant do not stampede back together.
"""

from __future__ import annotations

from judgecore.values import frozen


@frozen(kw_only=True)
class BackoffPolicy:
    """Exponential backoff starting at `base` seconds, capped at `cap`."""

    base: float = 1.0
    cap: float = 60.0

    def __attrs_post_init__(self) -> None:
        if not (self.base > 0 and self.cap >= self.base):
            raise ValueError(f"need 0 < base <= cap, got base={self.base} cap={self.cap}")


def backoff(attempt: int, retry_after: float | None, policy: BackoffPolicy, u: float) -> float:
    """Seconds to wait before retry number `attempt` (0-based); `u` is a uniform draw in [0, 1)."""
    if not 0.0 <= u < 1.0:
        raise ValueError(f"u must be in [0, 1), got {u}")
    if retry_after is not None and retry_after > 0:
        return retry_after + u * policy.base
    window = policy.cap if attempt >= 63 else min(policy.cap, policy.base * 2.0 ** max(0, attempt))
    return u * window
