"""Adaptive concurrency: how many requests a server that publishes no rate limits can hold.

A served model (vLLM, SGLang) sends no rate-limit headers. Its latency is flat while the requests in
flight fit its batch, then climbs as the rest wait in its queue (vLLM's queue is unbounded by default);
a bounded queue refuses the excess with 503. Throughput stops growing at the knee while latency keeps
climbing, so the concurrency worth holding is the knee: as many requests as the server serves at once.

Theory of operation. The rule estimates the knee as the bandwidth-delay product of BBR (Cardwell et
al., "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016): the throughput delivered times
the latency with no queue (the *floor*). By Little's law, `throughput x floor` is the number of
requests the server is serving rather than queueing. The limit is set a little above it: times a
`tolerance` (1.1) and plus a headroom of `sqrt(limit)`, as in the gradient rule of Netflix's
concurrency-limits (`GradientLimit`: `new = limit x gradient + queueSize`, `gradient = tolerance x floor
/ latency` clamped to [0.5, 1], `queueSize = sqrt(limit)`). The estimate is taken once per *window*
(about one latency of answers, as TCP Vegas adjusts once per round trip; Brakmo and Peterson 1994), the
throughput each answer saw being `inflight / latency`; one window's step is at most x2 and at least x0.5.

- **Grow while throughput grows.** While a window's mean latency is within `tolerance` of the floor,
  throughput grows with the limit, and the limit doubles (BBR's startup). Past the knee, throughput is
  flat and the estimate stays at the knee plus its tolerance and headroom, however long the queue.
- **Back off when latency climbs.** A latency well above the floor makes `throughput x floor` fall
  below the requests in flight: the limit shrinks by that ratio (at most by half a window).
- **Back off on refusals.** A 429 or 503 (a bounded queue full) or a lost connection multiplies the
  limit by 0.7 (CUBIC's factor), once per window: the refusals of one burst arrive together and are
  one signal (TCP's one cut per round trip). The limit refused is a *ceiling* the estimate stays under;
  each probe lifts it by its square root, so a bound is tried again rarely and gently. A refusal never
  raises the limit.
- **Find the floor.** The floor is the least window mean since the last probe; a client that starts
  above the knee never sees it, so the rule *probes* (BBR's ProbeRTT; `GradientLimit`'s
  `probeInterval`): for two windows it holds half the limit, forgets the floor and measures it again,
  then resumes (the window after is not used: its answers were sent at half). The first probe comes
  after `first_probe` windows, then every `probe_every`, or again after `first_probe` when the floor
  found was well below the one before (it was stale).
- **An idle client teaches nothing.** A window in which fewer than half the limit were ever in flight
  (the job's tail, a slow reader) leaves the limit alone.
- Bounded: the limit is always within [1, `maximum`].

Pure: `now` and every latency are arguments; `step(state, event)` returns the next state and
`state.current` the number of requests that may be in flight.
"""

from __future__ import annotations

import math
from typing import assert_never

import attrs

from judgecore.values import frozen

#: bounds of one window's change: grow at most x2, shrink at most x0.5
GROW_AT_MOST = 2.0
SHRINK_AT_MOST = 0.5
#: a refusal (429/503) or a lost connection multiplies the limit by this
BACKOFF = 0.7


@frozen(kw_only=True)
class Answered:
    """An answer arrived at `now`, `latency` seconds after it was sent, with `inflight` requests in
    flight when it arrived (itself included)."""

    now: float
    latency: float
    inflight: int


@frozen(kw_only=True)
class Refused:
    """A 429 or a 503 (the server's queue is full) at `now`."""

    now: float


@frozen(kw_only=True)
class Unreachable:
    """A connection refused or reset at `now`."""

    now: float


@frozen(kw_only=True)
class Tick:
    """Time passed (`now`) without an answer: closes a window that has lasted its length."""

    now: float


Event = Answered | Refused | Unreachable | Tick


@frozen(kw_only=True)
class Window:
    """The answers of the current window: since `start`, `answers` of them, their latencies and
    throughputs summed, and the most requests seen in flight."""

    start: float
    answers: int = 0
    latency_sum: float = 0.0
    #: the answers' `inflight / latency` summed: by Little's law, the throughput each one saw
    rate_sum: float = 0.0
    most_inflight: int = 0

    def add(self, e: Answered) -> Window:
        return Window(
            start=self.start,
            answers=self.answers + 1,
            latency_sum=self.latency_sum + e.latency,
            rate_sum=self.rate_sum + e.inflight / max(e.latency, 1e-9),
            most_inflight=max(self.most_inflight, e.inflight),
        )


@frozen(kw_only=True)
class Probe:
    """A floor probe under way: `windows` left to hold, the limit to resume afterwards, and the floor
    before it (a floor found well below it was stale: the next probe comes soon)."""

    windows: int
    resume: float
    floor_before: float | None = None


@frozen(kw_only=True)
class AdaptiveConcurrency:
    """The rule's state. Start with `AdaptiveConcurrency.start(initial, maximum)`."""

    limit: float
    maximum: int
    #: the latency with no queue: the least window mean since the last probe (None before a window)
    floor: float | None = None
    #: the last closed window's mean latency (None before one)
    latency: float | None = None
    window: Window | None = None
    #: when a refusal last cut the limit: one cut per window
    last_cut: float = -math.inf
    probe: Probe | None = None
    #: windows closed since the last probe ended (or since the start)
    windows: int = 0
    probes: int = 0
    #: the limit at the last refusal: the estimate stays below it; each probe lifts it by its square root
    ceiling: float | None = None
    first_probe: int = 3
    probe_every: int = 60
    #: how far above the floor latency may sit before the estimate falls below the requests in flight
    tolerance: float = 1.1

    @classmethod
    def start(
        cls, initial: int, maximum: int, *, first_probe: int = 3, probe_every: int = 60
    ) -> AdaptiveConcurrency:
        """The rule at `initial` requests in flight (`--concurrency`), never above `maximum`."""
        if maximum < 1:
            raise ValueError(f"maximum must be at least 1, not {maximum}")
        return cls(
            limit=float(min(max(initial, 1), maximum)),
            maximum=maximum,
            first_probe=first_probe,
            probe_every=probe_every,
        )

    @property
    def current(self) -> int:
        """How many requests may be in flight now."""
        held = self.limit * SHRINK_AT_MOST if self.probe is not None else self.limit
        return max(1, min(self.maximum, math.floor(held)))

    def _bounded(self, x: float) -> float:
        return min(float(self.maximum), max(1.0, x))


def step(state: AdaptiveConcurrency, event: Event) -> AdaptiveConcurrency:
    """The state after `event`."""
    match event:
        case Answered():
            window = state.window or Window(start=event.now - event.latency)
            state = attrs.evolve(state, window=window.add(event))
            return _maybe_close(state, event.now)
        case Tick():
            return _maybe_close(state, event.now)
        case Refused() | Unreachable():
            since = state.window.start if state.window is not None else -math.inf
            if state.last_cut > -math.inf and state.last_cut >= since:
                return state  # one cut per window: the refusals of one burst are one signal
            calm = event.now
            if state.probe is not None:  # resume lower after the probe
                resume = state.probe.resume
                probe = attrs.evolve(state.probe, resume=state._bounded(resume * BACKOFF))
                return attrs.evolve(state, probe=probe, last_cut=calm, ceiling=resume)
            return attrs.evolve(
                state, limit=state._bounded(state.limit * BACKOFF), last_cut=calm, ceiling=state.limit
            )
        case _:
            assert_never(event)


def _maybe_close(state: AdaptiveConcurrency, now: float) -> AdaptiveConcurrency:
    """Close the window once it has answers and has lasted as long as their mean latency."""
    w = state.window
    if w is None or w.answers == 0:
        return state
    mean = w.latency_sum / w.answers
    elapsed = now - w.start
    # a window lasts one mean latency and holds a quarter of the limit's answers (or lasts four latencies)
    if elapsed <= 0 or elapsed < mean or (w.answers * 4 < state.limit and elapsed < 4 * mean):
        return state
    floor = mean if state.floor is None else min(state.floor, mean)
    state = attrs.evolve(state, window=Window(start=now), latency=mean, floor=floor)
    if state.probe is not None:
        if state.probe.windows > 1:
            return attrs.evolve(state, probe=attrs.evolve(state.probe, windows=state.probe.windows - 1))
        before = state.probe.floor_before
        stale = before is not None and floor < 0.9 * before
        # a floor well below the last one was stale: probe again soon, as at the start
        windows = state.probe_every - state.first_probe if stale else 0
        return attrs.evolve(state, limit=state.probe.resume, probe=None, windows=windows)
    state = attrs.evolve(state, windows=state.windows + 1)
    due = state.first_probe if state.probes == 0 else state.probe_every
    if state.windows >= due:  # forget the floor and measure it again at half the limit
        probe = Probe(windows=2, resume=state.limit, floor_before=state.floor)
        ceiling = None if state.ceiling is None else state.ceiling + math.sqrt(state.ceiling)
        return attrs.evolve(state, probe=probe, floor=None, ceiling=ceiling, probes=state.probes + 1)
    if w.most_inflight * 2 < state.limit:
        return state  # idle: the window says nothing about the server
    if state.probes and state.windows in (1, state.probe_every - state.first_probe + 1):
        return state  # the window after a probe: its answers were sent at the probe's half limit
    throughput = w.rate_sum / w.answers
    estimate = throughput * floor * state.tolerance + math.sqrt(state.limit)
    if mean <= floor * state.tolerance:  # latency at its floor: throughput grows with the limit
        estimate = max(estimate, state.limit * GROW_AT_MOST)
    lo, hi = state.limit * SHRINK_AT_MOST, state.limit * GROW_AT_MOST
    if state.ceiling is not None:
        hi = min(hi, max(state.limit, state.ceiling - 1))
    return attrs.evolve(state, limit=state._bounded(min(hi, max(lo, estimate))))
