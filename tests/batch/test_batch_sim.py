"""The batch path through the real `anthropic` SDK, against the simulator's in-process transport."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import anthropic
import attrs
import httpx2

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import AnthropicBatchApi, BatchApiError, CreateBody
from adapters.run.batch import BatchRunResult, BatchSettings, run_batch
from adapters.run.clock import FakeClock
from adapters.run.events import BatchCreated, Event
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from judgecore.decide.polling import PollPolicy
from judgecore.results.outcomes import Status, classify

from .fakes import TEMPLATE, bind, make_requests, messages_of


def run_sim(
    tmp_path: Path, n: int, scenario: Scenario, settings: BatchSettings, events: list[Event] | None = None
) -> tuple[BatchRunResult, Simulator]:
    clock = FakeClock()
    sim = Simulator(scenario, clock=clock.now)
    requests = make_requests(n)
    store = Store.open(tmp_path / "state")
    bind(store, requests)
    sink: list[Event] = [] if events is None else events

    async def main() -> BatchRunResult:
        client = sim_client(sim)
        async with client:
            return await run_batch(
                store=store,
                requests=requests,
                template=TEMPLATE,
                api=AnthropicBatchApi(client),
                clock=clock,
                settings=settings,
                emit=sink.append,
                rng=random.Random(0),
            )

    try:
        return asyncio.run(main()), sim
    finally:
        store.close()


def test_a_job_in_eight_small_sub_batches_through_the_sdk(tmp_path: Path) -> None:
    """Eight sub-batches, each id sent once. (It was 20,000 items in sub-batches of 2,500: the size
    adds nothing the 16,001-item run over HTTP in tests/integration/test_end_to_end.py and the
    90,000-item job in tests/batch/test_batch_run.py do not show.)"""
    result, sim = run_sim(tmp_path, 2_000, Scenario(), BatchSettings(max_batch_requests=250))
    assert 2_000 == result.counts["succeeded"]
    assert 8 == len(sim.batches)
    assert {1} == set(Counter(sim.submitted_custom_ids()).values())
    creates = sim.requests("POST", "/v1/messages/batches")
    assert 8 == len(creates)


def test_a_never_ending_batch_is_stuck_and_the_run_ends(tmp_path: Path) -> None:
    scenario = Scenario(never_end=True, expires_after=3.0)
    result, sim = run_sim(tmp_path, 50, scenario, BatchSettings(poll=PollPolicy(interval=60.0, grace=5.0)))
    assert (sim.batches[0].id,) == result.stuck
    assert 50 == result.counts["pending"]


def test_persist_then_500_is_adopted_not_paid_twice(tmp_path: Path) -> None:
    events: list[Event] = []
    scenario = Scenario(create_faults={1: "persist_then_500"})
    result, sim = run_sim(tmp_path, 300, scenario, BatchSettings(max_batch_requests=100), events)
    assert 300 == result.counts["succeeded"]
    assert {1} == set(Counter(sim.submitted_custom_ids()).values())
    assert 1 == sum(1 for e in events if isinstance(e, BatchCreated) and e.adopted)
    assert 3 == len(sim.batches)


def test_a_dropped_results_stream_resumes_by_id(tmp_path: Path) -> None:
    scenario = Scenario(results_drop_after_lines=40, results_chunk_lines=10)
    result, sim = run_sim(tmp_path, 200, scenario, BatchSettings())
    assert 200 == result.counts["succeeded"]
    assert 1 == len(sim.batches)
    assert 2 == sum(1 for e in sim.log if e.path.endswith("/results"))


def test_mixed_outcomes_are_retried_in_rounds_through_the_sdk(tmp_path: Path) -> None:
    scenario = Scenario(
        batch_mix={"succeeded": 0.6, "api_error": 0.2, "expired": 0.1, "invalid_request": 0.1}
    )
    result, sim = run_sim(tmp_path, 500, attrs.evolve(scenario, seed=3), BatchSettings())
    counts = Counter(sim.submitted_custom_ids())
    assert result.fatal is None
    assert 0 == result.counts["pending"]
    assert result.counts["quarantined"] > 0
    assert {1, 2} == set(counts.values())
    assert 2 == result.rounds


class HangingTransport(httpx2.AsyncBaseTransport):
    """An endpoint that takes every request and never answers (a stalled upload or server)."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


def test_a_create_call_past_its_deadline_fails_as_one_that_may_have_made_a_batch() -> None:
    async def main() -> BatchApiError:
        client = anthropic.AsyncAnthropic(
            api_key="sk-test",
            base_url="http://hang.invalid",
            http_client=httpx2.AsyncClient(transport=HangingTransport(), base_url="http://hang.invalid"),
        )
        async with client:
            api = AnthropicBatchApi(client, create_deadline=0.05)
            try:
                await api.create(CreateBody((), TEMPLATE, ()))
            except BatchApiError as exc:
                return exc
        raise AssertionError("the create returned")

    raw = asyncio.run(asyncio.wait_for(main(), 30.0)).raw  # without a deadline: TimeoutError here
    assert ("connection_error", "timeout") == (raw.kind, raw.error_type)
    assert Status.RETRY == classify(raw).status  # reconciled before any resend, never a plain failure


def test_results_read_raw_are_the_sdks_own_results_line_for_line() -> None:
    """`AnthropicBatchApi.results` (raw bytes, orjson, no model per line) yields the outcome of what the
    SDK's own `messages.batches.results` decoder yields, translated, for every outcome the simulator makes,
    across the simulator's chunk boundaries."""
    from adapters.providers.anthropic.sdk_results import line_result
    from adapters.simulator.scenario import BATCH_OUTCOMES

    clock = FakeClock()
    mix = tuple((kind, 1.0) for kind in BATCH_OUTCOMES)
    sim = Simulator(Scenario(seed=5, batch_mix=mix, results_chunk_lines=7), clock=clock.now)

    async def main() -> tuple[list[tuple[str, object]], list[tuple[str, object]]]:
        async with sim_client(sim) as client:
            api = AnthropicBatchApi(client)
            snap = await api.create(CreateBody(make_requests(300), TEMPLATE, messages_of(make_requests(300))))
            clock.advance(3600)
            ours = [line async for lines in api.results(snap.id) for line in lines]
            stream = await client.messages.batches.results(snap.id)
            theirs = [(line.custom_id, line_result(line.result)) async for line in stream]
            return ours, theirs

    ours, theirs = asyncio.run(main())
    assert 300 == len(theirs)
    assert len({type(r).__name__ + r.kind for _, r in theirs}) >= 4  # succeeded, errored, canceled, expired
    assert [(c, classify(r)) for c, r in theirs] == ours
