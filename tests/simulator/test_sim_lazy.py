"""Lazy batches (`Scenario.lazy_batches`): the same outcomes, counts and order as an eager batch, the
results made as they are read (in-process and chunked over HTTP), a cut fetch, a cancel, and a retry's
attempt counted across batches."""

from __future__ import annotations

from collections import Counter

import anthropic
import httpx2
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.server import serve
from adapters.simulator.transport import sim_client

from .support import batch_requests, cached_system, params


def _requests(n: int) -> list[dict]:
    reqs = [
        {"custom_id": f"r{i}", "params": params(f"item {i}", system=cached_system("1h"))} for i in range(n)
    ]
    reqs[3]["params"]["messages"][0]["content"] += " [[sim:invalid]]"
    reqs[5]["params"]["messages"][0]["content"] += " [[sim:max_tokens]]"
    reqs[7]["params"]["model"] = "claude-nonexistent"
    return reqs


def _run(make_sim, clock, lazy: bool, n: int = 60, **knobs) -> tuple[list, anthropic.types.MessageBatch]:
    sim: Simulator = make_sim(
        lazy_batches=lazy, batch_mix={"succeeded": 0.8, "overloaded_error": 0.2}, **knobs
    )
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=_requests(n))
    clock.advance(3)
    done = client.messages.batches.retrieve(batch.id)
    return list(client.messages.batches.results(batch.id)), done


def test_a_lazy_batch_answers_like_an_eager_one(make_sim, clock):
    eager, eager_batch = _run(make_sim, clock, lazy=False)
    lazy, lazy_batch = _run(make_sim, clock, lazy=True)
    assert [r.custom_id for r in lazy] == [r.custom_id for r in eager]  # the same seeded order
    assert [r.result.type for r in lazy] == [r.result.type for r in eager]
    assert lazy_batch.request_counts == eager_batch.request_counts
    errors = {r.custom_id: r.result.error.error.type for r in lazy if r.result.type == "errored"}
    assert (errors["r3"], errors["r7"]) == ("invalid_request_error", "not_found_error")
    by_id = {r.custom_id: r for r in lazy}
    assert by_id["r5"].result.message.stop_reason == "max_tokens"
    scores = Counter(
        r.result.message.content[0].text.split("\n")[0] for r in lazy if r.result.type == "succeeded"
    )
    assert len(scores) > 3  # answers still vary from item to item
    ok = [r.result.message for r in lazy if r.result.type == "succeeded"]
    assert len({m.id for m in ok}) == len(ok)
    assert all(m.usage.input_tokens > 0 and m.usage.output_tokens > 0 for m in ok)
    # one fetch's cache: the first request of the shape writes the rubric, the rest read it
    assert sum(m.usage.cache_creation_input_tokens > 0 for m in ok) == 1
    assert sum(m.usage.cache_read_input_tokens > 0 for m in ok) == len(ok) - 1


def test_lazy_results_are_the_same_on_every_fetch(make_sim, clock):
    sim = make_sim(lazy_batches=True)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(700))  # more than one piece
    clock.advance(3)
    first = [r.model_dump() for r in client.messages.batches.results(batch.id)]
    again = [r.model_dump() for r in client.messages.batches.results(batch.id)]
    assert first == again and len(first) == 700
    assert sim.batch(batch.id).results is not None and len(sim.batch(batch.id).results) == 700


def test_a_canceled_lazy_batch_cuts_as_an_eager_one(make_sim, clock):
    outcomes = []
    for lazy in (False, True):
        sim = make_sim(lazy_batches=lazy, batch_seconds=10, cancel_seconds=0)
        client = sim_client(sim, async_=False)
        batch = client.messages.batches.create(requests=batch_requests(50))
        clock.advance(4)
        client.messages.batches.cancel(batch.id)
        clock.advance(1)
        done = client.messages.batches.retrieve(batch.id)
        assert done.request_counts.canceled == 30 and done.request_counts.succeeded == 20
        outcomes.append([(r.custom_id, r.result.type) for r in client.messages.batches.results(batch.id)])
    assert outcomes[0] == outcomes[1]


def test_a_retried_custom_id_is_a_second_attempt_in_a_lazy_batch(make_sim, clock):
    sim = make_sim(lazy_batches=True, batch_failures=1)
    client = sim_client(sim, async_=False)
    first = client.messages.batches.create(requests=batch_requests(3))
    clock.advance(3)
    assert {r.result.type for r in client.messages.batches.results(first.id)} == {"errored"}
    second = client.messages.batches.create(requests=batch_requests(3))
    clock.advance(3)
    assert {r.result.type for r in client.messages.batches.results(second.id)} == {"succeeded"}
    assert sim.batch(second.id).attempts == (2, 2, 2)


@pytest.mark.integration
def test_lazy_results_stream_chunked_over_http_and_a_cut_fetch_fails(make_sim, clock):
    sim = make_sim(lazy_batches=True, results_drop_after_lines=5, results_chunk_lines=1)
    with serve(sim) as server:
        client = anthropic.Anthropic(api_key="sk-sim", base_url=server.base_url)
        batch = client.messages.batches.create(requests=batch_requests(1500))
        clock.advance(3)
        seen = []
        with pytest.raises(httpx2.HTTPError):
            for r in client.messages.batches.results(batch.id):
                seen.append(r.custom_id)
        assert len(seen) <= 5
        whole = [r.custom_id for r in client.messages.batches.results(batch.id)]
        assert sorted(whole) == sorted(f"r{i}" for i in range(1500))
