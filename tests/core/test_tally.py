"""The plan made as the input is read (`PlanTally`, `parse_chunks`, `SeenIds`): the same figures and
sub-batches as the plan of the whole job's requests, whatever the chunks' sizes, and repeated ids
named by both their lines."""

from __future__ import annotations

import attrs
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import judgecore.job.seen as seen_module
from judgecore.decide.planning import (
    EXPECTED_OUTPUT_TOKENS,
    plan,
    plan_job,
    plan_of_totals,
    request_templates,
)
from judgecore.decide.routing import RoutePolicy, route
from judgecore.decide.tally import PlanTally
from judgecore.job.errors import DuplicateIdError, RequestTooLargeError
from judgecore.job.ids import custom_id_for, custom_id_lengths_of, custom_ids_for
from judgecore.job.items import CustomIds
from judgecore.job.parsing import parse_chunks, parse_items
from judgecore.job.seen import SeenIds, first_repeat, id_hashes
from judgecore.summary.plan_text import plan_json
from judgecore.wire.chunking import chunk

MODEL = "claude-sonnet-4-6"
JOB = "abcdefgh234567ab"  # a `v2` job key (the ids not covering content)


def _lines(rows: list[dict]) -> list[bytes]:
    return [orjson.dumps(r) + b"\n" for r in rows]


row = st.builds(
    lambda k, n, mt, msgs, meta: {
        "id": f"i{k}" if k % 5 else f"odd id {k}!",  # some ids are not their custom_id's prefix
        **(
            {"messages": [{"role": "user", "content": "q" * n}, {"role": "assistant", "content": "a"}]}
            if msgs
            else {"prompt": "é" * n if k % 7 == 0 else "p" * n}
        ),
        **({"max_tokens": mt} if mt else {}),
        **({"metadata": {"k": k}} if meta else {}),
    },
    st.integers(0, 10**6),
    st.integers(1, 400),
    st.one_of(st.none(), st.integers(1, 3000)),
    st.booleans(),
    st.booleans(),
)


def _distinct(rows: list[dict]) -> list[dict]:
    return [dict(r, id=f"{r['id']}-{k}") for k, r in enumerate(rows)]


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(row, min_size=1, max_size=120).map(_distinct),
    chunk_ids=st.integers(1, 50),
    max_requests=st.integers(1, 40),
    max_bytes=st.integers(2_000, 20_000),
    rubric=st.sampled_from([None, "Grade it. " * 300]),
)
def test_a_tally_of_chunks_is_the_plan_of_the_whole_job(rows, chunk_ids, max_requests, max_bytes, rubric):
    lines = _lines(rows)
    items = parse_items(lines, hold_messages=False, digests=False, job=JOB, lazy_ids=True)
    sync, batch = request_templates(model=MODEL, max_tokens=1024, rubric=rubric)
    tally = PlanTally(
        batch,
        job=JOB,
        max_requests=max_requests,
        max_bytes=max_bytes,
        output_per_answer=EXPECTED_OUTPUT_TOKENS,
    )
    for part in parse_chunks(lines, chunk_ids=chunk_ids):
        tally.add(part)
    job = plan_job(items, model=MODEL, max_tokens=1024, rubric=rubric, max_batch_bytes=None)
    requests = job.requests
    largest = max(requests.sizes)
    k = list(requests.sizes).index(largest)
    too_large = tally.too_large(max_bytes)
    if largest + 15 > max_bytes:  # the envelope's 15 bytes: no sub-batch holds it
        assert too_large is not None
        assert (too_large.line, too_large.item_id, too_large.custom_id) == (
            items.lines[k],
            items.ids[k],
            items.custom_ids[k],
        )
        with pytest.raises(RequestTooLargeError) as whole:
            plan_job(items, model=MODEL, max_tokens=1024, rubric=rubric, max_batch_bytes=max_bytes)
        assert str(whole.value) == str(too_large)
        return
    assert too_large is None
    subs = chunk(requests, max_requests=max_requests, max_bytes=max_bytes)
    totals = tally.totals()
    assert totals.sub_batches == tuple((len(sb.requests), sb.size) for sb in subs)
    for path in ("batch", "sync"):
        chosen = route(len(requests), policy=RoutePolicy(), force=path)
        whole = plan(
            requests,
            route=chosen,
            sub_batches=subs if path == "batch" else (),
            template=job.template(path),
            rubric=rubric,
            max_batch_requests=max_requests,
            max_batch_bytes=max_bytes,
            budget=50.0,
        )
        told = tally.totals()
        told = told if path == "batch" else attrs.evolve(told, sub_batches=())
        tallied = plan_of_totals(
            told,
            route=chosen,
            template=sync if path == "sync" else batch,
            rubric=rubric,
            max_batch_requests=max_requests,
            max_batch_bytes=max_bytes,
            budget=50.0,
        )
        assert plan_json(tallied) == plan_json(whole)


def test_the_first_max_tokens_with_a_problem_is_kept_with_its_line():
    rows = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "x", "max_tokens": 5}]
    rows += [{"id": "c", "prompt": "x", "max_tokens": 9}, {"id": "d", "prompt": "x", "max_tokens": 7}]
    lines = [*_lines(rows[:2]), b"\n", *_lines(rows[2:])]
    _, batch = request_templates(model=MODEL, max_tokens=1024, rubric=None)
    tally = PlanTally(
        batch,
        job=JOB,
        max_requests=10,
        max_bytes=10**6,
        output_per_answer=100,
        problem=lambda mt: f"{mt} is odd and over 6" if mt % 2 and mt > 6 else None,
    )
    for part in parse_chunks(lines, chunk_ids=1):
        tally.add(part)
    assert tally.first_problem == (4, "c", "9 is odd and over 6")
    assert tally.totals().output_tokens == 100 + 5 + 9 + 7


@pytest.mark.parametrize("batch", [16, 1 << 18])  # the hashes cut into buckets, or never
def test_repeated_ids_are_named_by_both_lines_as_a_parse_names_them(monkeypatch, batch):
    monkeypatch.setattr(seen_module, "_BATCH", batch)
    monkeypatch.setattr(seen_module, "_FIRST_BATCH", batch)
    rows = [{"id": f"x{k}", "prompt": "p"} for k in range(40)]
    rows[33] = {"id": "x7", "prompt": "p"}
    rows[36] = {"id": "x2", "prompt": "p"}
    lines = _lines(rows)
    seen = SeenIds()
    for part in parse_chunks(lines, chunk_ids=8):
        seen.add(part.ids)
    assert len(seen) == 40
    repeats = seen.repeats()
    assert repeats == frozenset(id_hashes(["x7", "x2"]))
    found = first_repeat(((c.ids, c.lines) for c in parse_chunks(lines, chunk_ids=8)), repeats)
    with pytest.raises(DuplicateIdError) as parsed:
        parse_items(lines, hold_messages=False, digests=False, job=JOB, lazy_ids=True)
    assert found is not None
    assert (
        (found.line, found.reason)
        == (parsed.value.line, parsed.value.reason)
        == (
            34,
            "duplicate id 'x7'; first seen on line 8",
        )
    )


@pytest.mark.parametrize("batch", [1000, 1 << 18])
def test_distinct_ids_repeat_nothing_and_hashes_that_only_meet_are_no_repeat(monkeypatch, batch):
    monkeypatch.setattr(seen_module, "_BATCH", batch)
    monkeypatch.setattr(seen_module, "_FIRST_BATCH", batch)
    ids = [f"item-{k}" for k in range(50_000)]
    seen = SeenIds()
    for k in range(0, len(ids), 4096):
        seen.add(ids[k : k + 4096])
    assert seen.repeats() == frozenset()
    # two hashes said to meet (as two distinct ids' may): the ids read again, no repeat found
    suspects = frozenset(id_hashes(["item-5", "item-49999"]))
    assert first_repeat([(ids, range(1, len(ids) + 1))], suspects) is None


def test_a_request_too_large_names_the_first_of_the_largest():
    rows = [
        {"id": "s", "prompt": "x"},
        {"id": "big1", "prompt": "y" * 900},
        {"id": "big2", "prompt": "y" * 900},
    ]
    _, batch = request_templates(model=MODEL, max_tokens=1024, rubric=None)
    tally = PlanTally(batch, job=JOB, max_requests=10, max_bytes=600, output_per_answer=100)
    for part in parse_chunks(_lines(rows), chunk_ids=1):
        tally.add(part)
    err = tally.too_large(600)
    assert err is not None and (err.line, err.item_id) == (2, "big1")  # ids of one length: sizes equal
    assert err.custom_id == custom_id_for("big1", job=JOB)
    assert tally.too_large(10**6) is None


def test_custom_id_lengths_are_told_by_the_ids_whatever_the_key_covers():
    ids = ["odd id 1!", "plain", "_under_", "é" * 3, "x" * 80]
    contents = bytes(range(16)) * len(ids)  # a `v3` key's ids cover each request's content digest
    for job, digests in ((JOB, None), ("m" + JOB, contents)):
        made = custom_ids_for(ids, job=job, contents=digests)
        assert list(CustomIds(ids, job).lengths()) == list(map(len, made))
        assert list(custom_id_lengths_of(ids)) == list(map(len, made))
    for own in (["a", "b_c", "Z-9"], ["_a", "b"], ["a_", "b"], ["", "b"], ["x" * 39, "y" * 40]):
        assert list(custom_id_lengths_of(own)) == list(map(len, custom_ids_for(own, job=JOB)))
