"""Rate limits: what the API's rate-limit headers say, and how fast the sync path may therefore send.

Theory of operation. The API meters each organisation with per-minute token buckets (requests, input
tokens, output tokens) that refill continuously; every response reports each bucket's `limit`,
`remaining` (token counts rounded to the nearest thousand) and `reset` (an RFC 3339 instant) in
`anthropic-ratelimit-*` headers. A `RateLimitReading` is those headers as a value.

The sync path keeps its own model of those buckets, a `Pacer`: one `Lane` per known limit, refilling
at `headroom x limit / 60` per second (a little under the real rate, so the org's bucket stays near
full and other live sessions sharing it keep their share), holding at most `burst_seconds` of refill.
Before a request leaves, the pacer reserves its *estimated* cost (output: a running mean of observed
output tokens; before any observation, the request's max_tokens); when its answer arrives the
reservation is replaced by the actual usage. Each reading clamps a lane down to what the server says
remains, less what is still in flight, so other consumers of the same limit slow us too. A 429 blocks
every send until its `retry-after` has passed (read by `judgecore.decide.retry_after`).

`Concurrency` bounds requests in flight: its ceiling comes from the tier (`concurrency_for`), a 429
halves it (once per cooldown: the 429s of one burst arrive together), successes win it back one slot
at a time (AIMD). 5xx answers say nothing about the rate and leave it alone.

Everything is pure: time (`now`) comes in as an argument; nothing here sleeps or reads a clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import attrs

from judgecore.results.outcomes import Usage

_GROUPS = ("requests", "input_tokens", "output_tokens", "tokens")
_FIELDS = ("limit", "remaining", "reset")

#: Token `remaining` values are rounded to the nearest thousand: the truth may be this much lower.
TOKEN_ROUNDING = 500.0


def parse_rfc3339(value: str) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp (`2026-11-29T10:00:00Z`, fractions and offsets allowed).

    A timestamp without an offset is read as UTC; anything unparsable is None, never an error.
    """
    text = value.strip()
    if not text:
        return None
    if text[-1] in "zZ":
        text = text[:-1] + "+00:00"
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when.timestamp()


def _int(value: str | None) -> int | None:
    if value is None:
        return None
    try:
        n = int(float(value.strip()))
    except ValueError:
        return None
    return n if n >= 0 else None


@attrs.frozen(kw_only=True)
class LimitGroup:
    """One limit as reported: its size per minute, what remains, and when it is full again (epoch)."""

    limit: int | None = None
    remaining: int | None = None
    reset: float | None = None

    @property
    def empty(self) -> bool:
        return self.limit is None and self.remaining is None and self.reset is None


_NONE = LimitGroup()


@attrs.frozen(kw_only=True)
class RateLimitReading:
    """The `anthropic-ratelimit-*` headers of one response, as a value (every part optional)."""

    requests: LimitGroup = _NONE
    input_tokens: LimitGroup = _NONE
    output_tokens: LimitGroup = _NONE
    tokens: LimitGroup = _NONE

    @classmethod
    def from_headers(cls, headers: Mapping[str, str]) -> RateLimitReading:
        """Read the requests, input-tokens, output-tokens and tokens groups; unknown or bad values are None."""
        lower = {str(k).lower(): str(v) for k, v in headers.items()}
        groups: dict[str, LimitGroup] = {}
        for group in _GROUPS:
            prefix = f"anthropic-ratelimit-{group.replace('_', '-')}-"
            reset = lower.get(prefix + "reset")
            groups[group] = LimitGroup(
                limit=_int(lower.get(prefix + "limit")),
                remaining=_int(lower.get(prefix + "remaining")),
                reset=parse_rfc3339(reset) if reset is not None else None,
            )
        return cls(**groups)

    @classmethod
    def for_otpm(cls, otpm: int) -> RateLimitReading:
        """A reading that knows only the output-tokens-per-minute limit (from `--otpm`)."""
        return cls(output_tokens=LimitGroup(limit=otpm))

    @property
    def empty(self) -> bool:
        return all(getattr(self, g).empty for g in _GROUPS)

    @property
    def otpm(self) -> int | None:
        """The output-tokens-per-minute limit, which `route()` scales its threshold by."""
        return self.output_tokens.limit

    def to_json(self) -> dict[str, Any]:
        """Flat JSON for the checkpoint: `output_tokens_limit`, `requests_reset`, ... (None when unknown)."""
        return {f"{g}_{f}": getattr(getattr(self, g), f) for g in _GROUPS for f in _FIELDS}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> RateLimitReading:
        """The inverse of `to_json`; missing keys are None."""

        def num(key: str, kind: type) -> Any:
            value = raw.get(key)
            return None if value is None else kind(value)

        return cls(
            **{
                g: LimitGroup(
                    limit=num(f"{g}_limit", int),
                    remaining=num(f"{g}_remaining", int),
                    reset=num(f"{g}_reset", float),
                )
                for g in _GROUPS
            }
        )


# --- concurrency ------------------------------------------------------------------------------------

DEFAULT_CONCURRENCY = 16
MIN_CONCURRENCY = 4
MAX_CONCURRENCY = 256


def concurrency_for(reading: RateLimitReading | None) -> int:
    """Requests in flight a tier supports: one per 1,000 OTPM, and at most RPM/6 (10 s answers at full
    RPM), within [4, 256]; 16 when nothing is known. Pacing, not this number, holds the rate."""
    if reading is None:
        return DEFAULT_CONCURRENCY
    bounds: list[int] = []
    if reading.output_tokens.limit:
        bounds.append(reading.output_tokens.limit // 1000)
    if reading.requests.limit:
        bounds.append(reading.requests.limit // 6)
    if not bounds:
        return DEFAULT_CONCURRENCY
    return max(MIN_CONCURRENCY, min(MAX_CONCURRENCY, *bounds))


def after_429(concurrency: int) -> int:
    """Multiplicative decrease: half as many requests in flight, never fewer than one."""
    return max(1, concurrency // 2)


@attrs.frozen(kw_only=True)
class Concurrency:
    """How many requests may be in flight now (AIMD between 1 and `ceiling`)."""

    limit: int
    ceiling: int
    recover_every: int = 8
    cooldown: float = 5.0
    successes: int = 0
    cut_until: float = -math.inf

    @classmethod
    def start(cls, ceiling: int, *, recover_every: int = 8, cooldown: float = 5.0) -> Concurrency:
        if ceiling < 1:
            raise ValueError(f"concurrency must be >= 1, got {ceiling}")
        return cls(limit=ceiling, ceiling=ceiling, recover_every=recover_every, cooldown=cooldown)

    def on_429(self, now: float) -> Concurrency:
        """Halve, unless a cut already happened within `cooldown` (one burst, one cut)."""
        if now < self.cut_until:
            return attrs.evolve(self, successes=0)
        return attrs.evolve(self, limit=after_429(self.limit), successes=0, cut_until=now + self.cooldown)

    def on_success(self) -> Concurrency:
        """Additive increase: one more slot after `recover_every` answers in a row, up to the ceiling."""
        if self.limit >= self.ceiling:
            return self if self.successes == 0 else attrs.evolve(self, successes=0)
        successes = self.successes + 1
        if successes >= self.recover_every:
            return attrs.evolve(self, limit=self.limit + 1, successes=0)
        return attrs.evolve(self, successes=successes)


# --- pacing -----------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class PacingPolicy:
    """Aim at `headroom` of each per-minute limit; bursts hold at most `burst_seconds` of that rate."""

    headroom: float = 0.95
    burst_seconds: float = 2.0
    #: Weight of the newest observation in the running mean of tokens per request.
    alpha: float = 0.1

    def __attrs_post_init__(self) -> None:
        if not 0.0 < self.headroom <= 1.0:
            raise ValueError(f"pacing headroom must be in (0, 1], got {self.headroom}")
        if not self.burst_seconds > 0.0:
            raise ValueError(f"pacing burst must be > 0 seconds, got {self.burst_seconds}")
        if not 0.0 < self.alpha <= 1.0:
            raise ValueError(f"alpha must be in (0, 1], got {self.alpha}")


@attrs.frozen(kw_only=True)
class Lane:
    """A local token bucket mirroring one per-minute limit: `rate` per second, at most `capacity`."""

    limit: int
    rate: float
    capacity: float
    level: float
    updated: float

    @classmethod
    def for_limit(cls, limit: int, now: float, policy: PacingPolicy) -> Lane:
        rate = policy.headroom * limit / 60.0
        capacity = max(1.0, rate * policy.burst_seconds)
        return cls(limit=limit, rate=rate, capacity=capacity, level=capacity, updated=now)

    def at(self, now: float) -> Lane:
        """This lane refilled up to `now` (time never goes back here)."""
        if now <= self.updated:
            return self
        level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        return attrs.evolve(self, level=level, updated=now)

    def wait(self, now: float, amount: float) -> float:
        """Seconds from `now` until `amount` fits (an amount over the capacity fits a full lane)."""
        need = min(amount, self.capacity) - self.at(now).level
        return 0.0 if need <= 0 else need / self.rate

    def spend(self, amount: float) -> Lane:
        return attrs.evolve(self, level=self.level - amount)

    def cap(self, ceiling: float) -> Lane:
        return self if self.level <= ceiling else attrs.evolve(self, level=ceiling)


@attrs.frozen(kw_only=True)
class Cost:
    """What one request is reckoned to take from each limit (reserved before it leaves)."""

    requests: float = 1.0
    input_tokens: float = 0.0
    output_tokens: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            requests=self.requests + other.requests,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
        )


NOTHING = Cost(requests=0.0)
_LANES = ("requests", "input_tokens", "output_tokens")


def _ewma(old: float | None, new: float, alpha: float) -> float:
    return new if old is None else old + alpha * (new - old)


@attrs.frozen(kw_only=True)
class Pacer:
    """The sync path's model of the org's rate limits (see the module docstring)."""

    policy: PacingPolicy = PacingPolicy()
    requests: Lane | None = None
    input_tokens: Lane | None = None
    output_tokens: Lane | None = None
    #: Running means of input tokens (ITPM counts input + cache writes) and output tokens per answer.
    mean_input: float | None = None
    mean_output: float | None = None
    #: No request leaves before this instant (set by a 429's retry-after).
    blocked_until: float = -math.inf

    @classmethod
    def start(
        cls, reading: RateLimitReading | None, now: float, policy: PacingPolicy = PacingPolicy()
    ) -> Pacer:
        pacer = cls(policy=policy)
        return pacer.observe(now, reading, in_flight=NOTHING) if reading is not None else pacer

    def estimate(self, max_tokens: int) -> Cost:
        """The reckoned cost of a request allowed `max_tokens` of output (max_tokens until observed)."""
        out = self.mean_output if self.mean_output is not None else float(max_tokens)
        return Cost(
            requests=1.0,
            input_tokens=self.mean_input or 0.0,
            output_tokens=min(out, float(max_tokens)),
        )

    def wait(self, now: float, cost: Cost) -> float:
        """Seconds from `now` before a request of `cost` may leave (0: send it now)."""
        wait = max(0.0, self.blocked_until - now)
        for name in _LANES:
            lane: Lane | None = getattr(self, name)
            if lane is not None:
                wait = max(wait, lane.wait(now, getattr(cost, name)))
        return wait

    def admit(self, now: float, cost: Cost) -> Pacer:
        """Reserve `cost`: the request leaves now."""
        changes: dict[str, Any] = {}
        for name in _LANES:
            lane: Lane | None = getattr(self, name)
            if lane is not None:
                changes[name] = lane.at(now).spend(getattr(cost, name))
        return attrs.evolve(self, **changes)

    def settle(self, now: float, reserved: Cost, usage: Usage | None) -> Pacer:
        """Replace a request's reservation by what it actually used (nothing, if it never ran)."""
        actual = NOTHING
        changes: dict[str, Any] = {}
        if usage is not None:
            used_in = float(usage.input_tokens + usage.cache_creation_input_tokens)
            actual = Cost(requests=1.0, input_tokens=used_in, output_tokens=float(usage.output_tokens))
            changes["mean_input"] = _ewma(self.mean_input, used_in, self.policy.alpha)
            changes["mean_output"] = _ewma(self.mean_output, float(usage.output_tokens), self.policy.alpha)
        else:
            # A refused request still counts against requests-per-minute.
            actual = Cost(requests=1.0)
        for name in _LANES:
            lane: Lane | None = getattr(self, name)
            if lane is not None:
                refund = getattr(reserved, name) - getattr(actual, name)
                changes[name] = attrs.evolve(lane.at(now), level=lane.at(now).level + refund)
        return attrs.evolve(self, **changes)

    def observe(self, now: float, reading: RateLimitReading | None, *, in_flight: Cost) -> Pacer:
        """Fold in a reading: learn limits (new or changed tier), and clamp each lane to what the server
        says remains, less what is `in_flight` (reserved, not yet charged)."""
        if reading is None:
            return self
        changes: dict[str, Any] = {}
        for name in _LANES:
            group: LimitGroup = getattr(reading, name)
            lane: Lane | None = getattr(self, name)
            if group.limit and (lane is None or lane.limit != group.limit):
                fresh = Lane.for_limit(group.limit, now, self.policy)
                lane = fresh if lane is None else attrs.evolve(fresh, level=min(fresh.level, lane.level))
            if lane is None:
                continue
            lane = lane.at(now)
            if group.remaining is not None:
                slack = 0.0 if name == "requests" else TOKEN_ROUNDING
                lane = lane.cap(group.remaining - slack - getattr(in_flight, name))
            changes[name] = lane
        return attrs.evolve(self, **changes)

    def on_429(self, now: float, retry_after: float | None, reading: RateLimitReading | None) -> Pacer:
        """The org's bucket is empty: nobody sends before `retry-after` (or the reset, at most 60 s)."""
        wait = retry_after
        if wait is None or wait <= 0:
            resets = [
                g.reset
                for g in (getattr(reading, n) for n in _LANES if reading is not None)
                if g.reset is not None and g.remaining == 0
            ]
            wait = min(60.0, max(0.0, min(resets) - now)) if resets else 1.0
        return attrs.evolve(self, blocked_until=max(self.blocked_until, now + wait))
