"""`--budget` on the sync route, through the real SDK against the simulator: a hard cap, then a rerun."""

from __future__ import annotations

import asyncio
import random

from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.run.clock import FakeClock
from adapters.run.events import Notice
from adapters.run.sync import SyncSettings, run_sync
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.spend import Budget, request_bound

from .conftest import MODEL, Recorder, bind, latest, make_job


def test_a_spent_budget_leaves_the_rest_pending_and_a_rerun_with_more_resumes(tmp_path):
    clock = FakeClock()
    sim = Simulator(Scenario(seed=5), clock=clock.now)
    api = AnthropicMessagesApi(sim_client(sim, max_retries=0))
    items, template, requests = make_job(10)
    store = bind(tmp_path, items, requests)
    price = DEFAULT_PRICES[MODEL]
    bound = request_bound(
        request_bytes=requests[0].size,
        cached_bytes=len(template.system_json or b""),
        max_tokens=requests[0].max_tokens,
        price=price,
        route="sync",
    )
    cap = bound + 0.02  # room for the bound of one request in flight and a few answers (~$0.005 each)

    def run(budget: Budget, emit: Recorder):
        return asyncio.run(
            run_sync(
                store=store,
                requests=requests,
                template=template,
                api=api,
                clock=clock,
                settings=SyncSettings(concurrency=2),
                emit=emit,
                rng=random.Random(1),
                reading=None,
                budget=budget,
                price=price,
            )
        )

    first_emit = Recorder()
    first = run(Budget(cap=cap), first_emit)
    assert first.budget_stopped and first.fatal is None
    assert 0 < first.pending < 10
    assert first.spent_usd <= cap
    budget_lines = [e.message for e in first_emit.events if isinstance(e, Notice) and "budget" in e.message]
    assert 1 == len(budget_lines) and f"{first.pending} items left pending" in budget_lines[0]
    sent_first = len(sim.message_requests())
    assert sent_first == 10 - first.pending

    second = run(Budget(cap=100.0, spent=first.spent_usd), Recorder())
    assert (0, first.pending) == (second.pending, second.succeeded)
    assert 10 == len(sim.message_requests()), "each item sent once over both runs"
    assert {("succeeded", 1)} == set(latest(store).values())
