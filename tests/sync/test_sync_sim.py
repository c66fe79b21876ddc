"""The sync path against the simulator: pacing under an output-tokens-per-minute limit, and parity with
the batch path. The simulator and the run share one FakeClock, so minutes of traffic take a second."""

from __future__ import annotations

import asyncio
import random

import orjson
import pytest

from adapters.checkpoint.records import collect_records
from adapters.providers.anthropic.batch_api import AnthropicBatchApi
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.run.batch import BatchSettings, run_batch
from adapters.run.clock import FakeClock
from adapters.run.events import discard
from adapters.run.sync import SyncSettings, probe
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from judgecore.decide.polling import PollPolicy
from judgecore.decide.routing import RoutePolicy, route
from judgecore.wire.requests import RequestTemplate, build_requests

from .conftest import MODEL, RUBRIC, bind, make_job, sync_run


def sim_api(sim: Simulator) -> AnthropicMessagesApi:
    return AnthropicMessagesApi(sim_client(sim, max_retries=0))


def test_pacing_holds_an_output_token_limit_with_almost_no_429s(tmp_path):
    """At 6,000 OTPM, ~400 answers take minutes; the run stays under the limit and rarely meets a 429."""
    clock = FakeClock()
    otpm = 6000
    sim = Simulator(Scenario(otpm_limit=otpm), clock=clock.now)
    api = sim_api(sim)
    items, template, requests = make_job(400)
    store = bind(tmp_path, items, requests)
    probed = asyncio.run(probe(store=store, api=api, request=requests[0], template=template, clock=clock))
    reading = probed.reading
    assert otpm == reading.otpm
    res = sync_run(store, requests, template, api, clock=clock, reading=reading)
    assert (None, 399) == (res.fatal, res.succeeded)
    share = res.output_tokens / res.elapsed / (otpm / 60)
    assert 0.85 <= share <= 1.0, share
    assert res.rate_limited <= 0.01 * res.sends
    assert 0 == sum(1 for e in sim.message_requests() if e.status == 429) - res.rate_limited


def test_pacing_without_a_probe_learns_the_limit_from_the_first_answer(tmp_path):
    clock = FakeClock()
    otpm = 6000
    sim = Simulator(Scenario(otpm_limit=otpm), clock=clock.now)
    items, template, requests = make_job(300)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, sim_api(sim), clock=clock, reading=None)
    assert 300 == res.succeeded
    assert res.rate_limited <= 0.01 * res.sends
    assert res.output_tokens / res.elapsed <= otpm / 60


def test_probe_on_a_low_tier_routes_a_small_job_to_batches(tmp_path):
    """1,000 items at 40,000 OTPM: threshold 2,000 x 40,000 / 400,000 = 200, so the job goes to batches."""
    clock = FakeClock()
    sim = Simulator(Scenario(advertised_otpm=40_000), clock=clock.now)
    items, template, requests = make_job(5)
    store = bind(tmp_path, items, requests)
    probed = asyncio.run(
        probe(store=store, api=sim_api(sim), request=requests[0], template=template, clock=clock)
    )
    reading = probed.reading
    chosen = route(1000, policy=RoutePolicy(), otpm=reading.otpm)
    assert ("batch", 200) == (chosen.path, chosen.threshold)


def test_the_cache_is_written_once_and_read_by_the_rest(tmp_path):
    clock = FakeClock()
    sim = Simulator(Scenario(), clock=clock.now)
    items, template, requests = make_job(20)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, sim_api(sim), clock=clock)
    assert res.cache_creation_input_tokens > 0
    assert 19 * res.cache_creation_input_tokens == res.cache_read_input_tokens
    assert 0.95 == res.cache_hit_rate


def test_parity_sync_output_equals_batch_output_but_route_and_batch_id(tmp_path):
    """No faults: the same items through both paths give the same output lines, route and batch_id aside."""
    clock = FakeClock()
    sim = Simulator(Scenario(batch_seconds=5.0), clock=clock.now)
    client = sim_client(sim, max_retries=0)
    items, sync_template, requests = make_job(30, rubric=None)
    batch_template = RequestTemplate.build(model=MODEL, max_tokens=256, rubric=None, path="batch")
    batch_requests = build_requests(items, batch_template)

    sync_store = bind(tmp_path, items, requests, name="sync")
    res = sync_run(sync_store, requests, sync_template, AnthropicMessagesApi(client), clock=clock)
    assert 30 == res.succeeded

    batch_store = bind(tmp_path, items, batch_requests, name="batch")
    bres = asyncio.run(
        run_batch(
            store=batch_store,
            requests=batch_requests,
            template=batch_template,
            api=AnthropicBatchApi(client),
            clock=clock,
            settings=BatchSettings(poll=PollPolicy(interval=1.0, grace=60.0)),
            emit=discard,
            rng=random.Random(3),
        )
    )
    assert bres.fatal is None

    def lines(store, path):
        records = collect_records(store, items)
        out = []
        for record in records.values():
            record = orjson.loads(orjson.dumps(record))
            assert path == record.pop("route")
            record.pop("batch_id")
            out.append(record)
        return out

    sync_lines = lines(sync_store, "sync")
    batch_lines = lines(batch_store, "batch")
    assert batch_lines == sync_lines
    assert {"succeeded"} == {r["status"] for r in sync_lines}


def test_parity_with_a_cached_rubric_differs_only_in_cache_accounting(tmp_path):
    """With a rubric, the two paths' answers match; usage differs only in how the cache was counted."""
    clock = FakeClock()
    sim = Simulator(Scenario(batch_seconds=5.0), clock=clock.now)
    client = sim_client(sim, max_retries=0)
    items, sync_template, requests = make_job(10, rubric=RUBRIC)
    batch_template = RequestTemplate.build(model=MODEL, max_tokens=256, rubric=RUBRIC, path="batch")
    batch_requests = build_requests(items, batch_template)
    sync_store = bind(tmp_path, items, requests, name="sync")
    sync_run(sync_store, requests, sync_template, AnthropicMessagesApi(client), clock=clock)
    batch_store = bind(tmp_path, items, batch_requests, name="batch")
    asyncio.run(
        run_batch(
            store=batch_store,
            requests=batch_requests,
            template=batch_template,
            api=AnthropicBatchApi(client),
            clock=clock,
            settings=BatchSettings(poll=PollPolicy(interval=1.0, grace=60.0)),
            emit=discard,
            rng=random.Random(3),
        )
    )
    strip = ("route", "batch_id", "usage")
    s = [{k: v for k, v in r.items() if k not in strip} for r in collect_records(sync_store, items).values()]
    b = [{k: v for k, v in r.items() if k not in strip} for r in collect_records(batch_store, items).values()]
    assert orjson.dumps(b) == orjson.dumps(s)


def test_settings_from_env_reads_every_override():
    env = {
        "JUDGECORE_MAX_CONCURRENCY": "12",
        "JUDGECORE_MAX_RATE_LIMITED": "4",
        "JUDGECORE_BACKOFF_BASE": "0.5",
        "JUDGECORE_BACKOFF_CAP": "30",
        "JUDGECORE_PACING_HEADROOM": "0.8",
        "JUDGECORE_PACING_BURST": "1.5",
        "JUDGECORE_REQUEST_TIMEOUT": "120",
        "JUDGECORE_PROGRESS_INTERVAL": "2",
        "UNRELATED": "x",
    }
    s = SyncSettings.from_env(env, max_attempts=5)
    assert (12, 5, 4, 0.5, 30.0, 0.8, 1.5, 120.0, 2.0) == (
        s.concurrency,
        s.max_attempts,
        s.max_rate_limited,
        s.backoff_base,
        s.backoff_cap,
        s.pacing_headroom,
        s.pacing_burst,
        s.request_timeout,
        s.progress_interval,
    )
    assert SyncSettings() == SyncSettings.from_env({})


def test_settings_from_env_names_a_bad_variable():
    with pytest.raises(ValueError, match="JUDGECORE_MAX_CONCURRENCY"):
        SyncSettings.from_env({"JUDGECORE_MAX_CONCURRENCY": "lots"})
    with pytest.raises(ValueError, match=r"JUDGECORE_PACING_HEADROOM=.1\.5.: must be at most 1"):
        SyncSettings.from_env({"JUDGECORE_PACING_HEADROOM": "1.5"})
