"""Create bodies streamed through the real `anthropic` SDK: exactly `create_body`'s bytes under their
`Content-Length` (in-process and over loopback HTTP), and a create whose connection is cut mid-body
fails as one that may have made a batch, is reconciled, and is sent again once."""

from __future__ import annotations

import asyncio
import random
import socket
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anthropic
import httpx2
import pytest

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import AnthropicBatchApi, BatchApiError, CreateBody
from adapters.run.batch import BatchSettings, run_batch
from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from adapters.simulator.transport import DEFAULT_BASE_URL, SimTransport
from judgecore.results.outcomes import Status, classify
from judgecore.run.batch import CONNECT_FAILED
from judgecore.wire.encoding import create_body
from judgecore.wire.requests import RequestTemplate

from .fakes import bind, make_requests, messages_of

#: A rubric long enough that a few hundred requests make a body of several streamed pieces.
BIG = RequestTemplate.build(model="claude-opus-4-8", max_tokens=256, rubric="Grade it. " * 300, path="batch")


class Recording(SimTransport):
    """The simulator's in-process transport, reading each request body as a socket would, piece by
    piece; it records the headers and pieces, and cuts the connection mid-body on the creates in `cut`."""

    def __init__(self, sim: Simulator, cut: frozenset[int] = frozenset()) -> None:
        super().__init__(sim)
        self.cut = cut
        self.creates: list[tuple[httpx2.Headers, list[bytes]]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method != "POST" or request.url.path != "/v1/messages/batches":
            return await super().handle_async_request(request)
        pieces: list[bytes] = []
        self.creates.append((request.headers, pieces))
        assert isinstance(request.stream, httpx2.AsyncByteStream)
        async for piece in request.stream:
            pieces.append(piece)
            if len(self.creates) in self.cut:
                raise httpx2.WriteError("[Errno 104] Connection reset by peer")
        return self._answer(request, b"".join(pieces))


def client_of(transport: httpx2.AsyncBaseTransport) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        api_key="sk-sim",
        base_url=DEFAULT_BASE_URL,
        max_retries=2,  # the client's; creates force their own off
        http_client=httpx2.AsyncClient(transport=transport, base_url=DEFAULT_BASE_URL),
    )


def test_a_create_sends_exactly_the_reference_bytes_in_pieces_under_their_content_length() -> None:
    requests = make_requests(300, template=BIG)
    sim = Simulator(Scenario())
    transport = Recording(sim)

    async def main() -> str:
        async with client_of(transport) as client:
            return (
                await AnthropicBatchApi(client).create(CreateBody(requests, BIG, messages_of(requests)))
            ).id

    batch_id = asyncio.run(main())
    [(headers, pieces)] = transport.creates
    body = create_body(requests, BIG, messages_of(requests))
    assert body == b"".join(pieces)
    assert (str(len(body)), None) == (headers.get("content-length"), headers.get("transfer-encoding"))
    assert len(pieces) > 2  # streamed, not one whole body
    assert "application/json" == headers.get("content-type")
    assert [batch_id] == [b.id for b in sim.batches]
    assert tuple(r.custom_id for r in requests) == sim.batches[0].custom_ids


def test_a_streamed_create_reaches_the_simulators_http_server_whole() -> None:
    """Over real loopback HTTP (h11 framing by Content-Length), the server reads the whole body."""
    requests = make_requests(300, template=BIG)
    sim = Simulator(Scenario())

    async def main(base_url: str) -> str:
        async with anthropic.AsyncAnthropic(api_key="sk-sim", base_url=base_url) as client:
            api = AnthropicBatchApi(client)
            first = await api.create(CreateBody(requests[:150], BIG, messages_of(requests[:150])))
            await api.create(
                CreateBody(requests[150:], BIG, messages_of(requests[150:]))
            )  # the same kept-alive connection
            return first.id

    with serve(sim) as server:
        first = asyncio.run(main(server.base_url))
    assert first == sim.batches[0].id
    assert tuple(r.custom_id for r in requests) == sim.submitted_custom_ids()


def test_a_create_cut_mid_body_is_reconciled_then_sent_again_once(tmp_path: Path) -> None:
    """The first create's connection drops after its first piece: nothing was made; the run lists
    recent batches before it resends, and every id ends in exactly one batch."""
    clock = FakeClock()
    sim = Simulator(Scenario(), clock=clock.now)
    transport = Recording(sim, cut=frozenset({1}))
    requests = make_requests(600, template=BIG)
    store = Store.open(tmp_path / "state")
    bind(store, requests)

    async def main() -> int:
        async with client_of(transport) as client:
            result = await run_batch(
                store=store,
                requests=requests,
                template=BIG,
                api=AnthropicBatchApi(client),
                clock=clock,
                settings=BatchSettings(max_batch_requests=300, concurrency=1),
                emit=[].append,
                rng=random.Random(0),
            )
            return result.counts["succeeded"]

    try:
        succeeded = asyncio.run(main())
    finally:
        store.close()
    assert 600 == succeeded
    assert 1 == len(transport.creates[0][1])  # cut after its first piece
    assert 3 == len(transport.creates)
    assert {1} == set(Counter(sim.submitted_custom_ids()).values())
    calls = [e for e in sim.log if e.path == "/v1/messages/batches"]
    resent = next(n for n, e in enumerate(calls) if requests[0].custom_id in e.custom_ids)
    assert "GET" in [e.method for e in calls[:resent]]  # listed (reconciled) before it was sent again


@pytest.fixture
def cutter() -> Iterator[tuple[str, list[int]]]:
    """A loopback server that reads 64 KB of each request and closes the connection; `received[0]`
    counts the connections it took."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.05)
    received = [0]
    stop = threading.Event()

    def serve_forever() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                received[0] += 1
                conn.recv(65536)

    thread = threading.Thread(target=serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", received
    stop.set()
    thread.join(5)
    server.close()


def test_a_create_whose_connection_is_closed_mid_body_fails_as_a_connection_error(
    cutter: tuple[str, list[int]],
) -> None:
    """Over a real socket: no hang, no retry by the SDK, a failure that may have made a batch."""
    base_url, received = cutter
    requests = make_requests(2000, template=BIG)  # about 6 MB: far past what the socket buffers take

    async def main() -> BatchApiError:
        async with anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=2) as client:
            try:
                await AnthropicBatchApi(client, create_deadline=30.0).create(
                    CreateBody(requests, BIG, messages_of(requests))
                )
            except BatchApiError as exc:
                return exc
        raise AssertionError("the create returned")

    raw = asyncio.run(main()).raw
    assert ("connection_error", 1) == (raw.kind, received[0])
    assert CONNECT_FAILED != raw.error_type
    assert Status.RETRY == classify(raw).status
