"""The in-process shell: an httpx2 transport that hands requests to a `Simulator`, and `sim_client`,
which wires a real `anthropic` client to it. No sockets; a dropped connection becomes the httpx2
exception a real socket would raise."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Literal, overload

import anthropic
import httpx2

from .logic import Simulator
from .wire import SimRequest, SimResponse, line_chunks

DEFAULT_BASE_URL = "http://simulator.local"


def to_sim_request(request: httpx2.Request, body: bytes) -> SimRequest:
    url = request.url
    path = url.path
    i = path.find("/v1/")
    prefix = path[:i] if i > 0 else ""
    port = f":{url.port}" if url.port is not None else ""
    return SimRequest(
        method=request.method,
        path=path,
        query=tuple(url.params.multi_items()),
        headers=tuple((k.lower(), v) for k, v in request.headers.items()),
        body=body,
        origin=f"{url.scheme}://{url.host}{port}{prefix}",
    )


class _SimStream(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """Yields the body a few lines at a time; raises like a dropped socket at `cut_after`."""

    def __init__(self, response: SimResponse) -> None:
        self._response = response

    def _chunks(self) -> Iterator[bytes]:
        r = self._response
        if r.chunks is not None:  # made as it is read (a lazy batch's results)
            sent = 0
            for piece in r.chunks:
                sent += len(piece)
                yield piece
            if r.cut_after is not None:
                raise httpx2.RemoteProtocolError(
                    f"peer closed connection without sending complete message body (received {sent} bytes)"
                )
            return
        body = r.body if r.cut_after is None else r.body[: r.cut_after]
        yield from line_chunks(body, r.pace[0] if r.pace else 200)
        if r.cut_after is not None:
            raise httpx2.RemoteProtocolError(
                "peer closed connection without sending complete message body "
                f"(received {r.cut_after} bytes, expected {len(r.body)})"
            )

    def __iter__(self) -> Iterator[bytes]:
        yield from self._chunks()

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks():
            yield chunk


class SimTransport(httpx2.BaseTransport, httpx2.AsyncBaseTransport):
    """An httpx2 transport (sync and async) answering from `sim`."""

    def __init__(self, sim: Simulator) -> None:
        self.sim = sim

    def _answer(self, request: httpx2.Request, body: bytes) -> httpx2.Response:
        response = self.sim.handle(to_sim_request(request, body))
        if response.drop:
            raise httpx2.RemoteProtocolError(
                "Server disconnected without sending a response.", request=request
            )
        streamed = response.cut_after is not None or response.pace is not None or response.chunks is not None
        headers = list(response.headers)
        if response.chunks is None:
            headers.append(("content-length", str(len(response.body))))
        if streamed:
            return httpx2.Response(
                response.status, headers=headers, stream=_SimStream(response), request=request
            )
        return httpx2.Response(response.status, headers=headers, content=response.body, request=request)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._answer(request, request.read())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        return self._answer(request, await request.aread())


@overload
def sim_client(
    sim: Simulator,
    *,
    api_key: str = ...,
    async_: Literal[True] = ...,
    max_retries: int = ...,
    base_url: str = ...,
) -> anthropic.AsyncAnthropic: ...
@overload
def sim_client(
    sim: Simulator,
    *,
    api_key: str = ...,
    async_: Literal[False],
    max_retries: int = ...,
    base_url: str = ...,
) -> anthropic.Anthropic: ...
def sim_client(
    sim: Simulator,
    *,
    api_key: str = "sk-sim",
    async_: bool = True,
    max_retries: int = 2,
    base_url: str = DEFAULT_BASE_URL,
) -> anthropic.AsyncAnthropic | anthropic.Anthropic:
    """A real `AsyncAnthropic` (default) or `Anthropic` client talking to `sim` in-process."""
    transport = SimTransport(sim)
    if async_:
        return anthropic.AsyncAnthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=transport, base_url=base_url),
        )
    return anthropic.Anthropic(
        api_key=api_key,
        base_url=base_url,
        max_retries=max_retries,
        http_client=httpx2.Client(transport=transport, base_url=base_url),
    )
