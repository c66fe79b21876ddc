"""The HTTP shell: a loopback HTTP/1.1 server (stdlib, one thread per connection, keep-alive) that hands
each request to a `Simulator` and writes its `SimResponse`, streaming paced bodies and cutting or
dropping connections when told to."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from judgecore.values import frozen

from .logic import Simulator
from .wire import SimRequest, SimResponse, line_chunks


@frozen
class ServerHandle:
    """A running server: point clients at `base_url`."""

    host: str
    port: int
    sim: Simulator

    @property
    def base_url(self) -> str:
        return f"http://{self.host}:{self.port}"


def _make_handler(sim: Simulator, sleep: Callable[[float], None]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "judgecore-simulator"
        sys_version = ""
        timeout = 120  # an idle keep-alive connection is closed after this many seconds
        disable_nagle_algorithm = True  # headers and body go out in separate writes

        def log_message(self, format: str, *args: object) -> None:
            pass

        def _body(self) -> bytes:
            """The request body, framed by `Content-Length` or sent `Transfer-Encoding: chunked`."""
            if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                parts = []
                while size := int(self.rfile.readline(65537).split(b";", 1)[0], 16):
                    parts.append(self.rfile.read(size))
                    self.rfile.readline(65537)  # the CRLF after the chunk's data
                while self.rfile.readline(65537).strip():  # trailers, up to the blank line
                    pass
                return b"".join(parts)
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        def _serve(self) -> None:
            body = self._body()
            split = urlsplit(self.path)
            i = split.path.find("/v1/")
            prefix = split.path[:i] if i > 0 else ""
            host = self.headers.get("Host") or "{}:{}".format(*self.server.server_address[:2])
            request = SimRequest(
                method=self.command,
                path=split.path,
                query=tuple(parse_qsl(split.query, keep_blank_values=True)),
                headers=tuple((k.lower(), v) for k, v in self.headers.items()),
                body=body,
                origin=f"http://{host}{prefix}",
            )
            self._write(sim.handle(request))

        def _write(self, response: SimResponse) -> None:
            if response.stall > 0:
                sleep(response.stall)
            if response.drop:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.send_response(response.status)
            for key, value in response.headers:
                self.send_header(key, value)
            if response.chunks is not None:
                self._write_chunked(response)
                return
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            body = response.body
            limit = len(body) if response.cut_after is None else response.cut_after
            if response.pace is None:
                self.wfile.write(body[:limit])
            else:
                lines, delay = response.pace
                self._write_paced(body[:limit], lines, delay)
            self.wfile.flush()
            if response.cut_after is not None:
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)

        def _write_chunked(self, response: SimResponse) -> None:
            """A body made as it is sent, in HTTP/1.1 chunks (paced as `_write_paced`); a cut one closes
            the connection without the last chunk."""
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            assert response.chunks is not None
            lines, delay = response.pace or (0, 0.0)
            for n, piece in enumerate(response.chunks):
                if delay > 0:
                    for m, part in enumerate(line_chunks(piece, lines)):
                        if n or m:
                            sleep(delay)
                        self.wfile.write(b"%x\r\n%b\r\n" % (len(part), part))
                elif piece:
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(piece), piece))
            if response.cut_after is not None:
                self.wfile.flush()
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

        def _write_paced(self, body: bytes, lines: int, delay: float) -> None:
            for n, chunk in enumerate(line_chunks(body, lines)):
                if n and delay > 0:
                    sleep(delay)
                self.wfile.write(chunk)

        do_GET = _serve
        do_POST = _serve
        do_DELETE = _serve
        do_PUT = _serve
        do_PATCH = _serve

    return Handler


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 1024  # the default backlog of 5 refuses connections under a concurrent client
    allow_reuse_address = True


@contextlib.contextmanager
def serve(
    sim: Simulator,
    host: str = "127.0.0.1",
    port: int = 0,
    *,
    sleep: Callable[[float], None] = time.sleep,
) -> Iterator[ServerHandle]:
    """Serve `sim` on `host:port` (0 = any free port) in a daemon thread until the block exits."""
    server = _Server((host, port), _make_handler(sim, sleep))
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield ServerHandle(host, server.server_address[1], sim)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def run_server_forever(
    sim: Simulator,
    host: str = "127.0.0.1",
    port: int = 8765,
    *,
    on_ready: Callable[[ServerHandle], None] | None = None,
    stop: threading.Event | None = None,
) -> None:
    """Serve until Ctrl-C (or until `stop` is set). `on_ready` gets the handle once listening;
    by default it prints the base URL and the `export ANTHROPIC_BASE_URL=...` hint."""

    def announce(handle: ServerHandle) -> None:
        print(f"simulator listening on {handle.base_url}", flush=True)
        print(f"export ANTHROPIC_BASE_URL={handle.base_url} ANTHROPIC_API_KEY=sk-sim", flush=True)
        print(f"export OPENAI_BASE_URL={handle.base_url}/v1 OPENAI_API_KEY=sk-sim", flush=True)

    with serve(sim, host, port) as handle:
        (on_ready or announce)(handle)
        event = stop or threading.Event()
        with contextlib.suppress(KeyboardInterrupt):
            while not event.wait(0.2):
                pass
