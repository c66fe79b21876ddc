"""Chunking: the partition of a job's requests into sub-batches, none over either cap.

Greedy and order-preserving: each sub-batch takes requests in input order until the next one would
pass `max_requests` or make the create body (`{"requests":[...]}` envelope included) pass `max_bytes`.
Greedy is minimal for an order-preserving partition: no valid partition of the same order has fewer
sub-batches. It plans from the requests' sizes alone; the bytes are the encoder's
(`judgecore.encoding`, given the messages by the shell).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

import attrs

from judgecore.encoding import CHUNK_BYTES, create_body, create_body_chunks  # their old home: re-exported
from judgecore.errors import RequestTooLargeError
from judgecore.requests import Request, Requests, custom_ids_of, item_ids_of

MAX_REQUESTS = 8000
MAX_BYTES = 250_000_000
ENVELOPE_BYTES = len(b'{"requests":[') + len(b"]}")


def body_size(sizes: Sequence[int]) -> int:
    """Bytes of a create body holding requests of these sizes: envelope, bodies, and the commas."""
    return ENVELOPE_BYTES + sum(sizes) + max(0, len(sizes) - 1)


@attrs.frozen
class SubBatch:
    """One Message Batches create call: its position in the job, its requests, and its body's size."""

    index: int
    requests: Sequence[Request]  # a view of the job's `Requests` (or a tuple, when given one)
    size: int

    @property
    def custom_ids(self) -> tuple[str, ...]:
        return custom_ids_of(self.requests)


def chunk(
    requests: Sequence[Request], *, max_requests: int = MAX_REQUESTS, max_bytes: int = MAX_BYTES
) -> tuple[SubBatch, ...]:
    """Partition `requests` into sub-batches of at most `max_requests` and `max_bytes` each.

    Raises `RequestTooLargeError` naming the item when one request alone cannot fit in `max_bytes`.
    """
    if max_requests < 1:
        raise ValueError(f"max_requests must be >= 1, got {max_requests}")
    if isinstance(requests, Requests):  # the sizes column: no object per request
        sizes: Sequence[int] = requests.sizes
        view: Sequence[Request] = requests
    else:
        view = tuple(requests)
        sizes = [r.size for r in view]
    n = len(sizes)
    if n and max(sizes) + ENVELOPE_BYTES > max_bytes:
        i = next(k for k, s in enumerate(sizes) if s + ENVELOPE_BYTES > max_bytes)
        item_id, cid = item_ids_of(view[i : i + 1])[0], custom_ids_of(view[i : i + 1])[0]
        raise RequestTooLargeError(item_id, cid, sizes[i] + ENVELOPE_BYTES, max_bytes)
    # acc[k]: the bytes of requests [0, k), so with a comma after each they are acc[k] + k (`ends`; the
    # body of [a, b) is then ends(b) - ends(a) - 1 + the envelope); each sub-batch takes the most
    # requests that fit both caps, found by bisecting the positions by their `ends`.
    acc = array("q", accumulate(sizes, initial=0))  # 8 bytes a request, in C

    def ends(k: int) -> int:
        return acc[k] + k

    room = max_bytes - ENVELOPE_BYTES + 1
    positions = range(n + 1)
    out: list[SubBatch] = []
    start = 0
    while start < n:
        fit = bisect_right(positions, ends(start) + room, lo=start + 1, key=ends) - 1
        stop = min(start + max_requests, fit)
        out.append(SubBatch(len(out), view[start:stop], ENVELOPE_BYTES - 1 + ends(stop) - ends(start)))
        start = stop
    return tuple(out)


__all__ = [
    "CHUNK_BYTES",
    "ENVELOPE_BYTES",
    "MAX_BYTES",
    "MAX_REQUESTS",
    "SubBatch",
    "body_size",
    "chunk",
    "create_body",
    "create_body_chunks",
]
