"""The wire encoder of a create body: `{"requests":[...]}` from the requests' pieces and the messages
the shell gives it, whole (`create_body`) or streamed in pieces (`create_body_chunks`).

The requests hold no messages (`judgecore.wire.requests`): the shell reads them (from the checkpoint, a
slice at a time) and hands them here, one per request, in order. The sizes the chunking planned from
(`judgecore.wire.chunking.body_size`) are exactly the lengths of these bytes.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import accumulate, chain, islice, repeat

from judgecore.wire.requests import Request, Requests, RequestTemplate

#: About how many bytes each piece of a streamed create body holds (`create_body_chunks`).
CHUNK_BYTES = 256 * 1024
#: Requests a streamed body of one model's requests joins at a time, a column at a time (`_column_chunks`).
SLICE = 32


def create_body(requests: Iterable[Request], template: RequestTemplate, messages: Iterable[bytes]) -> bytes:
    """The exact bytes of a create call, `{"requests":[...]}`, joined once from every request's pieces,
    `messages` being each request's serialized messages, in order (no per-request copy: a sub-batch
    body is built with one allocation of its final size)."""
    parts = [b'{"requests":[']
    for n, (req, mj) in enumerate(zip(requests, messages, strict=True)):
        if n:
            parts.append(b",")
        parts.extend(req.pieces(template, mj))
    parts.append(b"]}")
    return b"".join(parts)


def create_body_chunks(
    requests: Iterable[Request],
    template: RequestTemplate,
    messages: Iterable[bytes],
    chunk_bytes: int = CHUNK_BYTES,
    custom_ids: Sequence[str] | None = None,
) -> Iterator[bytes]:
    """`create_body(requests, template, messages)` in pieces, made as they are asked for: their
    concatenation is exactly those bytes, so a body can be sent without ever being held whole.

    `messages` (each request's, in order) is read one as each request is encoded: given an iterator
    that reads them as it goes, a body holds a few requests' messages at a time, never all of them.
    Requests are joined into a piece until it reaches `chunk_bytes` (a request is never split); a
    request of `chunk_bytes` or more goes out as its own pieces, uncopied (its messages and the shared
    rubric as they are given). So no piece is a copy of more than twice `chunk_bytes`.

    A `Requests` view of one model's requests (no panel) is encoded from its columns, `SLICE`
    requests joined at a time in C (`_column_chunks`): the same bytes, no `Request` built per request;
    `custom_ids`, when given, are its custom_ids made already (a job's are made at each read).
    """
    if isinstance(requests, Requests) and requests.one_model(template.model):
        yield from _column_chunks(requests, template, messages, chunk_bytes, custom_ids)
        return
    parts = [b'{"requests":[']
    held = len(parts[0])
    for n, (req, mj) in enumerate(zip(requests, messages, strict=True)):
        if n:
            parts.append(b",")
            held += 1
        if req.size >= chunk_bytes:
            yield b"".join(parts)
            yield from req.pieces(template, mj)
            parts, held = [], 0
            continue
        parts.extend(req.pieces(template, mj))
        held += req.size
        if held >= chunk_bytes:
            yield b"".join(parts)
            parts, held = [], 0
    parts.append(b"]}")
    yield b"".join(parts)


def _column_chunks(
    requests: Requests,
    template: RequestTemplate,
    messages: Iterable[bytes],
    chunk_bytes: int,
    custom_ids: Sequence[str] | None = None,
) -> Iterator[bytes]:
    """`create_body_chunks` of one model's requests, from their columns, in the same pieces: a
    slice of `SLICE` requests is read at a time, and the requests of a piece in it are joined in one
    C-level pass (the shared pieces repeated), up to the one that brings the piece to `chunk_bytes`
    (told by the running sum of their sizes); a slice holding a request of `chunk_bytes` or more goes
    request by request, as `create_body_chunks` does."""
    head, tail, open_ = template._head, template._tail_prefix, b'{"custom_id":"'
    lead = b"," + open_
    cids = requests.custom_ids if custom_ids is None else custom_ids
    rows = zip(cids, requests.max_tokens, requests.sizes, messages, strict=True)
    parts = [b'{"requests":[']
    held = len(parts[0])
    sep = b""  # before each request but the first
    while batch := list(islice(rows, SLICE)):
        cids, mts, sizes, mjs = zip(*batch, strict=True)
        if max(sizes) < chunk_bytes:
            ids, max_tokens = list(map(str.encode, cids)), list(map(str.encode, map(str, mts)))
            steps = [s + 1 for s in sizes]  # each request and the comma before it
            if not sep:
                steps[0] -= 1
            start, n = 0, len(sizes)
            while start < n:
                held_after = list(accumulate(steps[start:], initial=held))
                stop = min(start + bisect_left(held_after, chunk_bytes, 1), n)  # the piece's last one
                joined = b"".join(
                    chain.from_iterable(
                        zip(
                            repeat(lead),
                            ids[start:stop],
                            repeat(head),
                            max_tokens[start:stop],
                            repeat(tail),
                            mjs[start:stop],
                            repeat(b"}}"),
                        )
                    )
                )
                parts.append(joined if sep else joined[1:])
                sep = b","
                held = held_after[stop - start]
                if held >= chunk_bytes:
                    yield b"".join(parts)
                    parts, held = [], 0
                start = stop
            continue
        for cid, mt, req_size, mj in batch:
            if sep:
                parts.append(sep)
                held += 1
            sep = b","
            pieces = (open_, cid.encode("ascii"), head, str(mt).encode("ascii"), tail, mj, b"}}")
            if req_size >= chunk_bytes:
                yield b"".join(parts)
                yield from pieces
                parts, held = [], 0
                continue
            parts.extend(pieces)
            held += req_size
            if held >= chunk_bytes:
                yield b"".join(parts)
                parts, held = [], 0
    parts.append(b"]}")
    yield b"".join(parts)
