"""Per-minute rate limits as continuously refilling token buckets, and the headers that report them.

A bucket holds up to `limit` and refills at `limit / 60` per second, read from the injected `now`.
Admission: a request needs 1 from the requests bucket, its input tokens (`input_tokens +
cache_creation_input_tokens`; cache reads are free, as for most models) from the input bucket, and a
positive output bucket. Output tokens are charged after answering, by what was actually generated, so the
output bucket may go negative, like the real one: the next request then waits until it refills above 0.
"""

from __future__ import annotations

import math

import attrs

from .wire import rfc3339


@attrs.define
class Bucket:
    limit: int
    level: float
    updated: float

    @classmethod
    def full(cls, limit: int, now: float) -> Bucket:
        return cls(limit, float(limit), now)

    def refill(self, now: float) -> None:
        if now > self.updated:
            self.level = min(float(self.limit), self.level + (now - self.updated) * self.limit / 60)
            self.updated = now

    def wait_for(self, amount: float) -> float:
        """Seconds until the level reaches `amount` (capped at the limit)."""
        need = min(amount, float(self.limit)) - self.level
        return 0.0 if need <= 0 else need * 60 / self.limit

    def reset_at(self, now: float) -> float:
        return now + self.wait_for(self.limit)


@attrs.define
class RateLimiter:
    rpm: Bucket | None
    itpm: Bucket | None
    otpm: Bucket | None
    advertised_otpm: int

    @classmethod
    def create(
        cls, rpm: int | None, itpm: int | None, otpm: int | None, advertised_otpm: int, now: float
    ) -> RateLimiter:
        def mk(limit: int | None) -> Bucket | None:
            return None if limit is None else Bucket.full(limit, now)

        return cls(mk(rpm), mk(itpm), mk(otpm), advertised_otpm)

    def check(self, input_tokens: int, now: float) -> tuple[str, float] | None:
        """None if admitted, else (which limit, seconds to wait). Does not charge."""
        for bucket in (self.rpm, self.itpm, self.otpm):
            if bucket is not None:
                bucket.refill(now)
        if self.rpm is not None and self.rpm.level < 1:
            return "requests", self.rpm.wait_for(1)
        if self.itpm is not None and self.itpm.level < min(input_tokens, self.itpm.limit):
            return "input tokens", self.itpm.wait_for(input_tokens)
        if self.otpm is not None and self.otpm.level <= 0:
            return "output tokens", self.otpm.wait_for(1)
        return None

    def charge(self, input_tokens: int, output_tokens: int) -> None:
        if self.rpm is not None:
            self.rpm.level -= 1
        if self.itpm is not None:
            self.itpm.level -= input_tokens
        if self.otpm is not None:
            self.otpm.level -= output_tokens

    def headers(self, now: float) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        if self.rpm is not None:
            out += _group("requests", self.rpm.limit, math.floor(self.rpm.level), self.rpm, now)
        if self.itpm is not None:
            out += _group("input-tokens", self.itpm.limit, _thousand(self.itpm.level), self.itpm, now)
        if self.otpm is not None:
            out += _group("output-tokens", self.otpm.limit, _thousand(self.otpm.level), self.otpm, now)
        else:
            out += _group("output-tokens", self.advertised_otpm, self.advertised_otpm, None, now)
        token_buckets = [b for b in (self.itpm, self.otpm) if b is not None]
        if token_buckets:
            tightest = min(token_buckets, key=lambda b: b.level / b.limit)
            out += _group("tokens", tightest.limit, _thousand(tightest.level), tightest, now)
        return out


def _thousand(level: float) -> int:
    return max(0, round(level / 1000) * 1000)


def _group(name: str, limit: int, remaining: int, bucket: Bucket | None, now: float) -> list[tuple[str, str]]:
    reset = now if bucket is None else bucket.reset_at(now)
    prefix = f"anthropic-ratelimit-{name}"
    return [
        (f"{prefix}-limit", str(limit)),
        (f"{prefix}-remaining", str(max(0, remaining))),
        (f"{prefix}-reset", rfc3339(reset).replace(".000000Z", "Z")),
    ]
