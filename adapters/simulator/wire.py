"""Plain values at the HTTP boundary: `SimRequest` in, `SimResponse` out, plus the wire formats
(error envelope, RFC 3339 timestamps, ids) that both the logic and the shells agree on."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Any, Final

import attrs
import orjson

from judgecore.values import frozen

#: The status that goes with each error type (anthropic-api-facts.md §4).
ERROR_STATUS: Final = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}

_ALPHABET: Final = "0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghijkmnopqrstuvwxyz"


def digest_int(*parts: object) -> int:
    """A stable 64-bit hash of `parts` (unlike `hash()`, the same in every process)."""
    data = "\x1f".join(str(p) for p in parts).encode()
    return int.from_bytes(hashlib.sha256(data).digest()[:8], "big")


def unit_float(*parts: object) -> float:
    """A stable draw in [0, 1) from `parts`."""
    return digest_int(*parts) / 2**64


def make_id(prefix: str, *parts: object, length: int = 24) -> str:
    """An id like the API's (`msgbatch_01...`, `msg_01...`, `req_011...`), derived from `parts`."""
    raw = hashlib.sha256("\x1f".join(str(p) for p in parts).encode()).digest()
    n = int.from_bytes(raw, "big")
    chars = []
    for _ in range(length):
        n, r = divmod(n, len(_ALPHABET))
        chars.append(_ALPHABET[r])
    return prefix + "".join(chars)


def rfc3339(epoch: float) -> str:
    """`2026-11-29T10:00:00.000000Z`."""
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def dumps(obj: object) -> bytes:
    return orjson.dumps(obj)


@frozen(kw_only=True)
class SimRequest:
    """One HTTP request as the simulator sees it; header names are lower case."""

    method: str
    path: str
    query: tuple[tuple[str, str], ...] = ()
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    #: Scheme, host and any base-path prefix the client used, e.g. `http://127.0.0.1:8765`;
    #: absolute URLs (`results_url`) are built on it.
    origin: str = "http://simulator.local"

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key == name:
                return value
        return None

    def param(self, name: str) -> str | None:
        for key, value in self.query:
            if key == name:
                return value
        return None


@frozen(kw_only=True)
class SimResponse:
    """What to send back. `drop` closes the connection without answering; `cut_after` sends the
    headers and that many body bytes, then closes the connection (a stream cut mid-way)."""

    status: int
    headers: tuple[tuple[str, str], ...] = ()
    body: bytes = b""
    drop: bool = False
    cut_after: int | None = None
    #: For streamed bodies: pause `pace[1]` seconds after every `pace[0]` lines.
    pace: tuple[int, float] | None = None
    #: Seconds the HTTP server holds the connection before it answers (or drops it): a slow answer
    #: the client may be killed in the middle of (the in-process transport does not wait)
    stall: float = 0.0
    #: A body made as it is sent (`body` is then unused): sent chunked, each piece whole lines; with
    #: `cut_after` set, the connection closes after the last piece, the body unfinished.
    chunks: Iterable[bytes] | None = attrs.field(default=None, eq=False)

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None

    def json(self) -> object:
        return orjson.loads(self.body)


def line_chunks(body: bytes, lines_per_chunk: int) -> Iterator[bytes]:
    """`body` split into pieces of `lines_per_chunk` newline-terminated lines (the tail as is)."""
    start = pos = 0
    count = 0
    while True:
        nl = body.find(b"\n", pos)
        if nl < 0:
            break
        pos = nl + 1
        count += 1
        if count == lines_per_chunk:
            yield body[start:pos]
            start, count = pos, 0
    if start < len(body):
        yield body[start:]


def error_body(
    error_type: str, message: str, request_id: str | None, error_code: str | None = None
) -> dict[str, object]:
    """The standard error envelope; an `error_code` goes in `error.details` (where the SDK's
    `extract_error_code` reads it)."""
    error: dict[str, object] = {"type": error_type, "message": message}
    if error_code is not None:
        error["details"] = {"error_code": error_code}
    return {"type": "error", "error": error, "request_id": request_id}


@frozen(kw_only=True)
class LogEntry:
    """One handled request. `status` is 0 when the connection was dropped without an answer."""

    time: float
    method: str
    path: str
    status: int
    request_id: str
    fault: str | None = None
    batch_id: str | None = None
    custom_ids: tuple[str, ...] = ()
    digest: str | None = None
    #: A `POST /v1/messages` that asked for `stream: true`.
    stream: bool = False


def draw(weights: tuple[tuple[str, float], ...], *key: object) -> str | None:
    """A seeded weighted choice; weights may sum to less than 1 (the rest is None)."""
    if not weights:
        return None
    if len(weights) == 1 and weights[0][1] >= 1:  # the draw's only answer, without the hash
        return weights[0][0]
    total = sum(w for _, w in weights)
    scale = max(1.0, total)
    u = unit_float(*key) * scale
    acc = 0.0
    for name, w in weights:
        acc += w
        if u < acc:
            return name
    return None


@attrs.define
class RequestCtx:
    """Per-request scratch of either wire: the request, its id and time, and what the log records."""

    request: SimRequest
    request_id: str
    now: float
    fault: str | None = None
    batch_id: str | None = None
    custom_ids: tuple[str, ...] = ()
    digest: str | None = None

    def json_body(self) -> Any:
        try:
            return orjson.loads(self.request.body) if self.request.body else None
        except orjson.JSONDecodeError:
            return None

    def ok(self, obj: object, *, extra: list[tuple[str, str]] | None = None) -> SimResponse:
        return SimResponse(status=200, headers=tuple(extra or ()), body=dumps(obj))
