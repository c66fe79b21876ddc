"""Batch latency drawn from a heavy-tailed distribution (`batch_latency`), seeded, seen through the real
SDK; and a canceled batch ends with what it had completed `succeeded` and the rest `canceled`."""

from __future__ import annotations

import argparse
import math
from collections import Counter

import anthropic
import pytest

from adapters.run.clock import FakeClock
from adapters.simulator.cli import add_arguments, scenario_from_args
from adapters.simulator.latency import latency_at
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from adapters.simulator.wire import unit_float

from .support import batch_requests

HOUR = 3_600.0


def test_the_median_is_batch_seconds_and_the_tail_is_long():
    """Median 20 min: most batches within an hour, a tail to a day and beyond (as the docs describe)."""
    for kind in ("lognormal", "pareto"):
        assert 1_200.0 == pytest.approx(latency_at(kind, 1_200.0, None, 0.5))
    # lognormal, sigma 1.2: 82% within the hour, 99.2% within 6 hours
    assert HOUR == pytest.approx(latency_at("lognormal", 1_200.0, None, 0.8202), rel=1e-3)
    assert 6 * HOUR == pytest.approx(latency_at("lognormal", 1_200.0, None, 0.99200), rel=1e-2)
    # pareto, alpha 1.1: 85% within the hour, 0.45% still running at 24 hours
    assert HOUR == pytest.approx(latency_at("pareto", 1_200.0, None, 0.8507), rel=1e-3)
    assert 24 * HOUR == pytest.approx(latency_at("pareto", 1_200.0, None, 1 - 0.00448), rel=1e-2)
    assert 99.0 == latency_at("fixed", 99.0, None, 0.999)


def test_a_draw_grows_with_its_quantile_and_with_the_spread_in_the_tail():
    us = [i / 100 for i in range(100)]
    for kind in ("lognormal", "pareto"):
        draws = [latency_at(kind, 600.0, None, u) for u in us]
        assert draws == sorted(draws)
        assert all(math.isfinite(d) and d > 0 for d in draws)
    assert latency_at("lognormal", 600.0, 2.0, 0.99) > latency_at("lognormal", 600.0, 1.0, 0.99)
    assert latency_at("pareto", 600.0, 0.8, 0.99) > latency_at("pareto", 600.0, 2.0, 0.99)


def _latencies(seed: int, n: int, **knobs: object) -> list[float]:
    """Each of `n` one-request batches' `ended_at - created_at`, through the SDK, after 30 days."""
    clock = FakeClock()
    sim = Simulator(Scenario(seed=seed, **knobs), clock=clock)  # type: ignore[arg-type]
    client = sim_client(sim, async_=False)
    ids = [client.messages.batches.create(requests=batch_requests(1, prefix=f"b{i}-")).id for i in range(n)]
    clock.advance(30 * 86_400.0)
    out = []
    for batch_id in ids:
        batch = client.messages.batches.retrieve(batch_id)
        assert "ended" == batch.processing_status
        assert batch.ended_at is not None
        out.append((batch.ended_at - batch.created_at).total_seconds())
    return out


def test_drawn_latencies_are_deterministic_under_the_seed_and_differ_across_seeds():
    knobs = {"batch_seconds": 1_200.0, "batch_latency": "pareto"}
    first = _latencies(1, 40, **knobs)
    assert first == _latencies(1, 40, **knobs)
    assert first != _latencies(2, 40, **knobs)
    assert len(set(first)) == 40  # each batch its own draw
    assert 10 <= sum(x > 1_200.0 for x in first) <= 30  # about half above the median


def test_a_batch_drawn_past_its_expiry_ends_at_expires_at_with_the_rest_expired():
    """A tail batch that would need more than `expires_after` ends then, partly `expired`, as the API's."""
    clock = FakeClock()
    sim = Simulator(
        Scenario(seed=4, batch_seconds=600.0, batch_latency="pareto", expires_after=3 * HOUR), clock=clock
    )
    client = sim_client(sim, async_=False)
    ids = [client.messages.batches.create(requests=batch_requests(20, prefix=f"e{i}-")).id for i in range(60)]
    clock.advance(4 * HOUR)
    expired = [b for b in ids if client.messages.batches.retrieve(b).request_counts.expired]
    assert expired  # alpha 1.1, median 10 min: ~3% of draws over 3 hours
    for batch_id in expired:
        batch = client.messages.batches.retrieve(batch_id)
        assert batch.ended_at == batch.expires_at
        kinds = Counter(r.result.type for r in client.messages.batches.results(batch_id))
        assert {"succeeded", "expired"} >= set(kinds)
        assert (batch.request_counts.succeeded, batch.request_counts.expired) == (
            kinds["succeeded"],
            kinds["expired"],
        )


def test_a_canceled_batch_keeps_what_it_completed_and_cancels_the_rest_unbilled():
    """Canceled at 41% of its drawn latency: 20 of 50 `succeeded` (billed, at the batch price), 30 lines of
    type `canceled` (not billed), counts and lines agreeing."""
    clock = FakeClock()
    sim = Simulator(
        Scenario(seed=9, batch_seconds=1_800.0, batch_latency="lognormal", cancel_seconds=30.0), clock=clock
    )
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(50))
    latency = _latency_of(sim, batch.id)
    clock.advance(0.41 * latency)  # 20.5 of 50 processed: 20
    canceling = client.messages.batches.cancel(batch.id)
    assert ("canceling", 50) == (canceling.processing_status, canceling.request_counts.processing)
    clock.advance(29.0)
    assert "canceling" == client.messages.batches.retrieve(batch.id).processing_status
    clock.advance(1.0)
    ended = client.messages.batches.retrieve(batch.id)
    assert "ended" == ended.processing_status
    lines = list(client.messages.batches.results(batch.id))
    kinds = Counter(r.result.type for r in lines)
    assert Counter({"succeeded": 20, "canceled": 30}) == kinds
    assert (20, 30, 0) == (
        ended.request_counts.succeeded,
        ended.request_counts.canceled,
        ended.request_counts.processing,
    )
    assert [("batch", 20)] == [(route, n) for route, n in Counter(r for r, _ in sim.billed).items()]
    assert all(
        r.result.type == "canceled" and not hasattr(r.result, "message")
        for r in lines
        if r.result.type != "succeeded"
    )


def _latency_of(sim: Simulator, batch_id: str) -> float:
    s = sim.scenario
    return latency_at(
        s.batch_latency, s.batch_seconds, s.batch_latency_shape, unit_float(s.seed, "latency", batch_id)
    )


def test_the_command_line_knobs():
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ns = parser.parse_args(
        ["--batch-seconds", "900", "--batch-latency", "pareto", "--batch-latency-shape", "1.5"]
    )
    assert ("pareto", 1.5, 900.0) == (
        (s := scenario_from_args(ns)).batch_latency,
        s.batch_latency_shape,
        s.batch_seconds,
    )
    assert ("fixed", None) == (
        (d := scenario_from_args(parser.parse_args([]))).batch_latency,
        d.batch_latency_shape,
    )
    for bad in (
        ["--batch-latency", "normal"],
        ["--batch-latency-shape", "0"],
        ["--batch-latency-shape", "nan"],
    ):
        with pytest.raises(SystemExit):
            parser.parse_args(bad)
    with pytest.raises(ValueError, match="batch_latency_shape"):
        Scenario(batch_latency="pareto", batch_latency_shape=-1.0)
    with pytest.raises(ValueError, match="batch_latency"):
        Scenario(batch_latency="uniform")


def test_without_the_knob_every_batch_takes_batch_seconds():
    assert [90.0] * 5 == _latencies(3, 5, batch_seconds=90.0)


def test_a_drawn_batch_ends_at_its_own_latency_not_at_batch_seconds():
    clock = FakeClock()
    sim = Simulator(Scenario(seed=5, batch_seconds=600.0, batch_latency="lognormal"), clock=clock)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(3))
    latency = _latency_of(sim, batch.id)
    assert abs(latency - 600.0) > 1.0
    clock.advance(latency * 0.999)
    with pytest.raises(anthropic.AnthropicError, match="No `results_url`"):
        client.messages.batches.results(batch.id)
    clock.advance(latency * 0.002)
    assert 3 == sum(r.result.type == "succeeded" for r in client.messages.batches.results(batch.id))
