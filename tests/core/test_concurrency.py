"""Adaptive concurrency for a served model: bounded, backs off on refusals, holds still on a steady server
and settles near the queue depth past which latency climbs."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from judgecore.decide.concurrency import (
    AdaptiveConcurrency,
    Answered,
    Event,
    Refused,
    Tick,
    Unreachable,
    step,
)

_kinds = st.sampled_from(["answered", "refused", "unreachable", "tick"])


@st.composite
def event_runs(draw: st.DrawFn) -> list[Event]:
    """Any sequence of events, time never going back."""
    now = 0.0
    out: list[Event] = []
    for kind in draw(st.lists(_kinds, max_size=120)):
        now += draw(st.floats(0, 50, allow_nan=False))
        if kind == "answered":
            latency = draw(st.floats(0.001, 120, allow_nan=False))
            out.append(Answered(now=now, latency=latency, inflight=draw(st.integers(0, 2_000))))
        elif kind == "refused":
            out.append(Refused(now=now))
        elif kind == "unreachable":
            out.append(Unreachable(now=now))
        else:
            out.append(Tick(now=now))
    return out


def _rules(initial: int, maximum: int) -> AdaptiveConcurrency:
    return AdaptiveConcurrency.start(initial, maximum)


starts = st.builds(_rules, st.integers(-5, 600), st.integers(1, 512))


@given(starts, event_runs())
def test_the_limit_stays_within_one_and_the_maximum(rule, events):
    for e in events:
        rule = step(rule, e)
        assert 1 <= rule.current <= rule.maximum
        assert 1.0 <= rule.limit <= rule.maximum


@given(starts, event_runs(), st.sampled_from([Refused, Unreachable]), st.floats(0, 50))
def test_a_refusal_never_raises_the_limit(rule, events, refusal, later):
    """A 429/503 or a lost connection, after any history, leaves the limit (and what it lets fly) no
    higher; a probe under way resumes no higher either."""
    for e in events:
        rule = step(rule, e)
    now = (events[-1].now if events else 0.0) + later
    after = step(rule, refusal(now=now))
    assert after.limit <= rule.limit
    assert after.current <= rule.current
    if rule.probe is not None:
        assert after.probe is not None and after.probe.resume <= rule.probe.resume


def drive(
    rule: AdaptiveConcurrency, latency_of: Callable[[int], float], rounds: int
) -> list[AdaptiveConcurrency]:
    """A closed loop: each round the client has `rule.current` requests in flight, and they come back
    evenly over the latency the server gives that many. The states after each answer."""
    now, seen = 0.0, []
    for _ in range(rounds):
        c = rule.current
        latency = latency_of(c)
        for _ in range(c):
            now += latency / c
            rule = step(rule, Answered(now=now, latency=latency, inflight=c))
            seen.append(rule)
    return seen


@settings(max_examples=25)  # each example drives thousands of answers
@given(st.integers(1, 64), st.integers(1, 512), st.floats(0.01, 100))
def test_a_steady_server_that_never_refuses_never_sees_the_limit_fall(initial, maximum, latency):
    """Constant latency, no refusal: the limit never falls (a floor probe holds half of it in flight
    for two windows, then resumes it: `current` dips, `limit` does not), and it grows to the maximum."""
    seen = drive(_rules(initial, maximum), lambda c: latency, rounds=40)
    limits = [s.limit for s in seen]
    assert all(a <= b for a, b in itertools.pairwise(limits))
    assert maximum == seen[-1].limit


@settings(max_examples=20)  # each example drives up to 50,000 answers
@given(st.integers(4, 160), st.floats(0.05, 10), st.integers(1, 64))
def test_past_a_queue_depth_the_limit_settles_near_it(depth, base, initial):
    """A server that serves `depth` at once and queues the rest (latency `base` up to `depth` in
    flight, then `base x inflight / depth`): from any start, the limit ends within
    [depth, 1.1 x depth + sqrt(...) + 1], the knee plus the rule's tolerance and headroom."""
    seen = drive(_rules(initial, 512), lambda c: base * max(1.0, c / depth), rounds=250)
    settled = [s.limit for s in seen[len(seen) // 2 :] if s.probe is None]
    top = 1.1 * depth + math.sqrt(1.1 * depth) + 3
    assert depth <= min(settled)
    assert max(settled) <= top


def test_refusals_of_one_burst_cut_once():
    """Thirty 503s in the same instant are one signal: one cut, to 0.7 of the limit."""
    rule = _rules(32, 256)
    rule = drive(rule, lambda c: 1.0, rounds=1)[-1]
    before = rule.limit
    for _ in range(30):
        rule = step(rule, Refused(now=10.0))
    assert math.isclose(before * 0.7, rule.limit)


def test_an_idle_client_teaches_nothing():
    """Answers with a handful in flight (the tail of a job) leave a limit of 64 alone."""
    rule = _rules(64, 256)
    for k in range(1, 200):
        rule = step(rule, Answered(now=float(k), latency=1.0, inflight=3))
    assert 64 == rule.current or rule.probe is not None
    assert 64.0 == rule.limit
