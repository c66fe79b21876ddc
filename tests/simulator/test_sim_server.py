"""The real SDK over real loopback HTTP to the simulator's server: keep-alive, streaming, drops,
cut streams, absolute results_url, errors and the blocking runner."""

from __future__ import annotations

import asyncio
import threading

import anthropic
import httpx2
import orjson
import pytest

from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import run_server_forever, serve

from .support import batch_requests, params

pytestmark = pytest.mark.integration


def client_for(base_url: str, **kw) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="sk-sim", base_url=base_url, **kw)


def test_messages_over_http_with_keep_alive(make_sim):
    sim = make_sim()
    with serve(sim) as server:
        client = client_for(server.base_url)
        texts = [client.messages.create(**params(f"q{i}")).content[0].text for i in range(5)]
        raw = client.messages.with_raw_response.create(**params())
    assert all(t.startswith("Score: ") for t in texts)
    assert raw.headers["request-id"].startswith("req_")
    assert raw.headers["anthropic-ratelimit-output-tokens-limit"] == "400000"
    assert len(sim.message_requests()) == 6


def test_batch_lifecycle_over_http_with_async_client(make_sim, clock):
    sim = make_sim()

    async def run(base_url: str) -> tuple[str, list[str]]:
        client = anthropic.AsyncAnthropic(api_key="sk-sim", base_url=base_url)
        batch = await client.messages.batches.create(requests=batch_requests(25))
        clock.advance(2)
        ended = await client.messages.batches.retrieve(batch.id)
        ids = [r.custom_id async for r in await client.messages.batches.results(batch.id)]
        listed = [b.id async for b in client.messages.batches.list(limit=1)]
        assert listed == [batch.id]
        return ended.results_url, ids

    with serve(sim) as server:
        url, ids = asyncio.run(run(server.base_url))
    assert url.startswith(server.base_url + "/v1/messages/batches/")
    assert sorted(ids) == sorted(f"r{i}" for i in range(25))


def test_base_url_path_prefix_is_kept_in_results_url(make_sim, clock):
    sim = make_sim()
    with serve(sim) as server:
        client = client_for(server.base_url + "/prefix")
        batch = client.messages.batches.create(requests=batch_requests(2))
        clock.advance(2)
        assert client.messages.batches.retrieve(batch.id).results_url.startswith(
            server.base_url + "/prefix/v1/"
        )
        assert len(list(client.messages.batches.results(batch.id))) == 2


@pytest.mark.parametrize("framing", ["chunked", "content-length"])
def test_a_create_body_streamed_in_pieces_is_read_whole_either_way_it_is_framed(make_sim, framing):
    """A body sent `Transfer-Encoding: chunked` or streamed under a `Content-Length` makes the same
    batch; the connection is kept for the next request."""
    body = orjson.dumps({"requests": batch_requests(40)})
    pieces = [body[i : i + 1000] for i in range(0, len(body), 1000)]
    key = {"x-api-key": "sk-sim"}
    headers = key | {"content-type": "application/json"}
    if framing == "content-length":
        headers["content-length"] = str(len(body))
    sim = make_sim()
    with serve(sim) as server, httpx2.Client(base_url=server.base_url) as client:
        created = client.post("/v1/messages/batches", content=iter(pieces), headers=headers)
        listed = client.get("/v1/messages/batches", headers=key)
    assert (200, 200) == (created.status_code, listed.status_code)
    assert tuple(f"r{i}" for i in range(40)) == sim.submitted_custom_ids()
    assert (framing == "chunked") == ("transfer-encoding" in created.request.headers)


def test_dropped_connection_is_a_connection_error_and_is_retried(make_sim):
    sim = make_sim(sync_faults={1: "drop", 3: "drop"})
    with serve(sim) as server:
        assert client_for(server.base_url, max_retries=1).messages.create(**params()).content
        with pytest.raises(anthropic.APIConnectionError):
            client_for(server.base_url, max_retries=0).messages.create(**params())
    assert [e.status for e in sim.message_requests()] == [0, 200, 0]


def test_errors_over_http_carry_request_id(make_sim):
    sim = make_sim(sync_faults={1: "529"})
    with serve(sim) as server:
        with pytest.raises(anthropic.OverloadedError) as info:
            client_for(server.base_url, max_retries=0).messages.create(**params())
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(api_key="sk-bad", base_url=server.base_url).messages.create(**params())
    assert info.value.request_id == sim.message_requests()[0].request_id


def test_results_stream_cut_over_http_then_refetched_whole(make_sim, clock):
    sim = make_sim(results_drop_after_lines=5, results_chunk_lines=1)
    with serve(sim) as server:
        client = client_for(server.base_url)
        batch = client.messages.batches.create(requests=batch_requests(30))
        clock.advance(2)
        seen = []
        with pytest.raises(httpx2.HTTPError):
            for r in client.messages.batches.results(batch.id):
                seen.append(r.custom_id)
        assert len(seen) <= 5
        assert len(list(client.messages.batches.results(batch.id))) == 30


def test_paced_results_call_the_injected_sleep(make_sim, clock):
    sim = make_sim(results_chunk_lines=10, results_line_delay=0.001)
    slept: list[float] = []
    with serve(sim, sleep=slept.append) as server:
        client = client_for(server.base_url)
        batch = client.messages.batches.create(requests=batch_requests(35))
        clock.advance(2)
        assert len(list(client.messages.batches.results(batch.id))) == 35
    assert slept == [0.001] * 3


def test_persist_then_500_over_http_leaves_a_batch_in_list(make_sim):
    sim = make_sim(create_faults={1: "persist_then_500"})
    with serve(sim) as server:
        client = client_for(server.base_url, max_retries=0)
        with pytest.raises(anthropic.InternalServerError):
            client.messages.batches.create(requests=batch_requests(3))
        assert [b.id for b in client.messages.batches.list()] == [sim.batches[0].id]


def test_run_server_forever_announces_and_stops():
    sim = Simulator(Scenario(), clock=FakeClock())
    stop = threading.Event()
    ready: list[str] = []

    def on_ready(handle) -> None:
        ready.append(handle.base_url)
        assert client_for(handle.base_url).messages.create(**params()).content
        stop.set()

    run_server_forever(sim, port=0, on_ready=on_ready, stop=stop)
    assert ready[0].startswith("http://127.0.0.1:")
