"""chunk: an order-preserving, greedy (so minimal) partition under both caps, checked on real bytes."""

from __future__ import annotations

from itertools import pairwise

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import item_lists, templates

from judgecore.job.errors import RequestTooLargeError
from judgecore.job.parsing import parse_items
from judgecore.wire import encoding
from judgecore.wire.chunking import ENVELOPE_BYTES, MAX_BYTES, body_size, chunk
from judgecore.wire.encoding import create_body_chunks
from judgecore.wire.requests import Request, RequestTemplate, build_requests

#: each request's messages by custom_id: the requests hold none, the encoder is given them
MESSAGES: dict[str, bytes] = {}


def messages_of(requests) -> list[bytes]:
    return [MESSAGES[r.custom_id] for r in requests]


def with_messages(items, template: RequestTemplate):
    """`build_requests(items, template)`, their messages kept in `MESSAGES` for the encoder."""
    MESSAGES.update((i.custom_id, i.messages_json) for i in items)
    return build_requests(items, template)


def create_body(requests, template: RequestTemplate) -> bytes:
    """The exact bytes of a Message Batches create call carrying these requests (the reference)."""
    return b'{"requests":[' + b",".join(r.body(template, MESSAGES[r.custom_id]) for r in requests) + b"]}"


def judgecore_body(requests, template: RequestTemplate) -> bytes:
    return encoding.create_body(requests, template, messages_of(requests))


@st.composite
def chunk_cases(draw):
    """Real requests, and caps under which each request fits alone (so chunking must succeed)."""
    template = draw(templates)
    reqs = with_messages(draw(item_lists(max_size=30)), template)
    biggest = max((r.size for r in reqs), default=0) + ENVELOPE_BYTES
    total = body_size([r.size for r in reqs])
    max_bytes = draw(st.integers(biggest, max(biggest, total) + 50))
    max_requests = draw(st.integers(1, len(reqs) + 2))
    return template, reqs, max_requests, max_bytes


def min_parts(sizes, max_requests, max_bytes):
    """The fewest order-preserving parts under both caps, by dynamic programming (the reference)."""
    best = [0] + [None] * len(sizes)
    for end in range(1, len(sizes) + 1):
        for start in range(end - 1, -1, -1):
            if end - start > max_requests or body_size(sizes[start:end]) > max_bytes:
                break
            if best[start] is not None and (best[end] is None or best[start] + 1 < best[end]):
                best[end] = best[start] + 1
    return best[-1]


@given(chunk_cases())
def test_the_create_body_is_the_reference_bytes_and_each_sub_batch_size(case):
    """The body judgecore sends is byte for byte the envelope around each request's body, and each
    sub-batch's recorded size is its body's length."""
    template, reqs, max_requests, max_bytes = case
    assert create_body(reqs, template) == judgecore_body(reqs, template)
    for sb in chunk(reqs, max_requests=max_requests, max_bytes=max_bytes):
        assert len(judgecore_body(sb.requests, template)) == sb.size


@given(chunk_cases(), st.integers(64, 3000))
def test_a_streamed_create_body_is_the_reference_bytes_in_pieces_of_about_chunk_bytes(case, chunk_bytes):
    """The pieces a create body is streamed in join to the reference body; a piece the stream joined
    (not a request's own bytes passed through) is never more than twice `chunk_bytes`."""
    template, reqs, _, _ = case
    pieces = list(create_body_chunks(reqs, template, messages_of(reqs), chunk_bytes))
    assert create_body(reqs, template) == b"".join(pieces)
    # the custom_ids made once by the batch shell (for the intent and the messages): the same pieces
    cids = tuple(r.custom_id for r in reqs)
    assert pieces == list(create_body_chunks(reqs, template, messages_of(reqs), chunk_bytes, cids))
    assert body_size([r.size for r in reqs]) == sum(map(len, pieces))
    own = [q for r in reqs for q in r.pieces(template, MESSAGES[r.custom_id])]  # alive while compared
    joined = [p for p in pieces if id(p) not in {id(q) for q in own}]
    assert [] == [p for p in joined if len(p) > 2 * chunk_bytes + ENVELOPE_BYTES]


def test_a_request_past_chunk_bytes_is_streamed_as_its_own_bytes_not_a_copy():
    """A request larger than a piece: its messages go out as the very object the encoder is given."""
    template = RequestTemplate.build(model="claude-opus-4-8", max_tokens=16, rubric=None, path="batch")
    small, big, after = with_messages(
        parse_items(
            [
                b'{"id": "a", "prompt": "short"}',
                b'{"id": "b", "prompt": "' + b"x" * 5000 + b'"}',
                b'{"id": "c", "prompt": "short"}',
            ]
        ),
        template,
    )
    given = messages_of((small, big, after))
    pieces = list(create_body_chunks((small, big, after), template, given, chunk_bytes=1000))
    assert create_body((small, big, after), template) == b"".join(pieces)
    own = big.pieces(template, given[1])
    assert [True] == [any(p is q for q in own) for p in pieces if len(p) > 1000]


@given(chunk_cases())
def test_chunks_partition_the_requests_in_order(case):
    _, reqs, max_requests, max_bytes = case
    subs = chunk(reqs, max_requests=max_requests, max_bytes=max_bytes)
    assert list(reqs) == [r for sb in subs for r in sb.requests]
    assert list(range(len(subs))) == [sb.index for sb in subs]
    assert all(sb.requests for sb in subs)


@given(chunk_cases())
def test_no_chunk_passes_either_cap_on_the_real_create_body(case):
    template, reqs, max_requests, max_bytes = case
    for sb in chunk(reqs, max_requests=max_requests, max_bytes=max_bytes):
        body = create_body(sb.requests, template)
        assert len(body) == sb.size
        assert len(sb.requests) <= max_requests
        assert len(body) <= max_bytes


@given(chunk_cases())
def test_each_chunk_is_full_when_the_next_one_starts(case):
    """Greedy: the first request of a sub-batch would have broken a cap of the one before it."""
    template, reqs, max_requests, max_bytes = case
    subs = chunk(reqs, max_requests=max_requests, max_bytes=max_bytes)
    for prev, nxt in pairwise(subs):
        grown = (*prev.requests, nxt.requests[0])
        assert len(grown) > max_requests or len(create_body(grown, template)) > max_bytes


@given(chunk_cases())
def test_greedy_chunking_uses_the_fewest_sub_batches(case):
    _, reqs, max_requests, max_bytes = case
    subs = chunk(reqs, max_requests=max_requests, max_bytes=max_bytes)
    assert min_parts([r.size for r in reqs], max_requests, max_bytes) == len(subs)


@given(chunk_cases())
def test_custom_ids_of_a_sub_batch_follow_its_requests(case):
    _, reqs, max_requests, max_bytes = case
    for sb in chunk(reqs, max_requests=max_requests, max_bytes=max_bytes):
        assert tuple(r.custom_id for r in sb.requests) == sb.custom_ids


@given(st.integers(1, 10_000), st.integers(ENVELOPE_BYTES, 10**9))
def test_no_requests_means_no_sub_batches(max_requests, max_bytes):
    assert () == chunk([], max_requests=max_requests, max_bytes=max_bytes)


@given(templates, item_lists(min_size=1, max_size=30), st.data())
def test_a_request_too_large_for_any_sub_batch_is_an_error_naming_it(template, its, data):
    """The first request that cannot fit even alone stops the chunking, named; none is dropped."""
    reqs = with_messages(its, template)
    biggest = max(r.size for r in reqs) + ENVELOPE_BYTES
    max_bytes = data.draw(st.integers(ENVELOPE_BYTES, biggest - 1))
    culprit = next(r for r in reqs if len(create_body([r], template)) > max_bytes)
    with pytest.raises(RequestTooLargeError) as err:
        chunk(reqs, max_bytes=max_bytes)
    assert (culprit.item_id, culprit.custom_id) == (err.value.item_id, err.value.custom_id)
    assert (len(create_body([culprit], template)), max_bytes) == (err.value.size, err.value.max_bytes)
    assert repr(culprit.item_id) in str(err.value)


def test_a_request_exactly_at_the_cap_fits_alone():
    req = Request("c", "i", 1, 100, 2)
    (sb,) = chunk([req], max_bytes=100 + ENVELOPE_BYTES)
    assert 100 + ENVELOPE_BYTES == sb.size


def test_default_caps_are_the_api_limits():
    reqs = [Request(f"c{i}", f"i{i}", 1, 30, 2) for i in range(20_001)]
    assert [8000, 8000, 4001] == [len(sb.requests) for sb in chunk(reqs)]
    assert 250_000_000 == MAX_BYTES


def test_max_requests_below_one_is_refused():
    with pytest.raises(ValueError):
        chunk([], max_requests=0)


@given(chunk_cases(), st.data())
def test_chunking_a_view_of_requests_is_chunking_the_same_requests_as_a_tuple(case, data):
    """A job's requests are columns (`Requests`), and rounds chunk views of them (a subset, in any
    order): the sub-batches are those of the same requests given one by one, with the same bodies."""
    template, reqs, max_requests, max_bytes = case
    order = data.draw(st.permutations(list(reqs.custom_ids)))
    some = order[: data.draw(st.integers(0, len(order)))]
    view = reqs.select(some)
    alone = tuple(reqs[reqs.custom_ids.index(c)] for c in some)
    assert alone == tuple(view)
    by_view = chunk(view, max_requests=max_requests, max_bytes=max_bytes)
    by_tuple = chunk(alone, max_requests=max_requests, max_bytes=max_bytes)
    assert [(sb.custom_ids, sb.size) for sb in by_tuple] == [(sb.custom_ids, sb.size) for sb in by_view]
    for a, b in zip(by_tuple, by_view, strict=True):
        assert judgecore_body(a.requests, template) == judgecore_body(b.requests, template)


def _greedy(sizes, max_requests, max_bytes):
    """The reference: each sub-batch takes requests while both caps hold (one at a time)."""
    parts, current = [], []
    for s in sizes:
        if current and (len(current) == max_requests or body_size([*current, s]) > max_bytes):
            parts.append(current)
            current = []
        current.append(s)
    return [*parts, current] if current else parts


@given(
    st.lists(st.sampled_from([1, 2, 3, 40, 300, 1000]), max_size=400),
    st.integers(1, 64),
    st.integers(1000 + ENVELOPE_BYTES, 4000),
)
def test_sub_batches_cut_short_by_bytes_then_by_count_are_the_greedy_ones(sizes, max_requests, max_bytes):
    """Runs of big requests (cut by the bytes cap) between runs of small ones (cut by the count): the
    window each sub-batch is found in shrinks after a short one and grows back, with the same cuts."""
    from types import SimpleNamespace

    reqs = [SimpleNamespace(size=s, custom_id=f"c{k}", item_id=f"i{k}") for k, s in enumerate(sizes)]
    subs = chunk(reqs, max_requests=max_requests, max_bytes=max_bytes)
    assert [[r.size for r in sb.requests] for sb in subs] == _greedy(sizes, max_requests, max_bytes)
    assert [sb.size for sb in subs] == [body_size([r.size for r in sb.requests]) for sb in subs]


@given(chunk_cases(), st.integers(64, 3000))
def test_a_view_s_columns_stream_the_bytes_its_requests_stream_one_by_one(case, chunk_bytes):
    """A `Requests` view of one model's requests is encoded from its columns, a slice at a time: the
    same pieces as its `Request`s encoded one by one."""
    template, reqs, _, _ = case
    one_by_one = list(create_body_chunks(tuple(reqs), template, messages_of(reqs), chunk_bytes))
    columns = list(create_body_chunks(reqs, template, messages_of(reqs), chunk_bytes))
    assert one_by_one == columns  # the same bytes, in the same pieces
