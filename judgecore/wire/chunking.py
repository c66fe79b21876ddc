"""Chunking: the partition of a job's requests into sub-batches, none over either cap.

Greedy and order-preserving: each sub-batch takes requests in input order until the next one would
pass `max_requests` or make the create body (`{"requests":[...]}` envelope included) pass `max_bytes`.
Greedy is minimal for an order-preserving partition: no valid partition of the same order has fewer
sub-batches. It plans from the requests' sizes alone; the bytes are the encoder's
(`judgecore.wire.encoding`, given the messages by the shell).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from judgecore.job.errors import RequestTooLargeError
from judgecore.values import frozen
from judgecore.wire.encoding import (  # their old home: re-exported
    CHUNK_BYTES,
    create_body,
    create_body_chunks,
)
from judgecore.wire.requests import Request, Requests, custom_ids_of, item_ids_of

MAX_REQUESTS = 8000
MAX_BYTES = 250_000_000
ENVELOPE_BYTES = len(b'{"requests":[') + len(b"]}")


def body_size(sizes: Sequence[int]) -> int:
    """Bytes of a create body holding requests of these sizes: envelope, bodies, and the commas."""
    return ENVELOPE_BYTES + sum(sizes) + max(0, len(sizes) - 1)


@frozen
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
    # A sub-batch's requests are found in a window of the next ones (at most `max_requests`): acc[k]
    # is the bytes of the window's first k, so with a comma after each they are acc[k] + k (`ends`;
    # the body of the first k is then ends(k) - 1 + the envelope); each sub-batch takes the most that
    # fit both caps, found by bisecting the window by its `ends`. A window is 8 bytes a request of one
    # sub-batch, never of the job (5.8 MB at 720,000 requests); after a sub-batch the bytes cut short,
    # the next window is about twice its size (doubled while the cap is not found in it).
    room = max_bytes - ENVELOPE_BYTES + 1
    out: list[SubBatch] = []
    start, width = 0, max_requests
    while start < n:
        whole = min(n - start, max_requests)
        while True:
            cap = min(whole, width)
            acc = array("q", accumulate(sizes[start : start + cap], initial=0))

            def ends(k: int, acc: array[int] = acc) -> int:
                return acc[k] + k

            fit = bisect_right(range(cap + 1), room, lo=1, key=ends) - 1
            if fit < cap or cap == whole:
                break
            width = min(max_requests, 2 * width)
        out.append(SubBatch(len(out), view[start : start + fit], ENVELOPE_BYTES - 1 + ends(fit)))
        start += fit
        width = max_requests if fit == cap else min(max_requests, 2 * fit + 1)
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
