"""Routing: does a job go through the Messages API now, or the Message Batches API at half price?

Below the threshold, a batch's tail (up to 24 hours) costs more than the discount saves; at or above it,
the sync path would spend the org's shared rate limit for hours. The threshold scales with the tier:
`base x OTPM / reference`, so a low tier sends even small jobs to batches.
"""

from __future__ import annotations

from typing import Literal

import attrs

from judgecore.items import Path

OtpmSource = Literal["read", "flag", "assumed"]


@attrs.frozen(kw_only=True)
class RoutePolicy:
    """2,000 requests at 400,000 output tokens per minute; the OTPM assumed when none is known."""

    base_threshold: int = 2000
    reference_otpm: int = 400_000
    assumed_otpm: int = 400_000

    def threshold(self, otpm: int) -> int:
        """The request count at and above which a job goes to batches; never below 1."""
        return max(1, self.base_threshold * otpm // self.reference_otpm)


@attrs.frozen(kw_only=True)
class Route:
    """The routing decision, with what it was based on and a one-line reason for the user."""

    path: Path
    n: int
    threshold: int
    otpm: int
    otpm_source: OtpmSource
    forced: bool
    reason: str


def route(
    n: int,
    *,
    policy: RoutePolicy,
    otpm: int | None = None,
    force: Path | None = None,
    otpm_source: Literal["read", "flag"] = "read",
) -> Route:
    """Route `n` requests: sync when `n < threshold`, batch otherwise; `force` overrides and says so.

    `otpm` is the output-tokens-per-minute limit, read from a probe response (`otpm_source="read"`) or
    given with `--otpm` (`"flag"`); None means unknown, and `policy.assumed_otpm` is used ("assumed").
    """
    if n < 0:
        raise ValueError(f"request count must be >= 0, got {n}")
    if otpm is not None and otpm < 1:
        raise ValueError(f"OTPM must be >= 1, got {otpm}")
    source: OtpmSource = otpm_source if otpm is not None else "assumed"
    used = otpm if otpm is not None else policy.assumed_otpm
    threshold = policy.threshold(used)
    natural: Path = "sync" if n < threshold else "batch"
    tier = f"OTPM {used:,} ({source})"
    if force is not None:
        path: Path = force
        reason = f"forced to {force} (--force-{force}); by size it would go {natural}"
    else:
        path = natural
        cmp = "<" if path == "sync" else ">="
        reason = f"{n:,} requests {cmp} threshold {threshold:,} at {tier}"
    return Route(
        path=path,
        n=n,
        threshold=threshold,
        otpm=used,
        otpm_source=source,
        forced=force is not None,
        reason=reason,
    )
