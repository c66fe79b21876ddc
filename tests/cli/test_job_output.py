"""The output is streamed from the checkpoint in input order, whatever order the checkpoint holds."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.checkpoint.records import iter_records
from adapters.checkpoint.store import OutcomeRow, Store
from adapters.files.writers import write_output_atomic
from judgecore.job.parsing import parse_item
from judgecore.results.outcomes import Outcome, Status
from judgecore.results.output_line import output_line

DONE = Outcome(status=Status.SUCCEEDED, failure=None, reason="ok", text="Score: 3")


def _items(ids: list[str]):
    return [parse_item(n, orjson.dumps({"id": i, "prompt": f"grade {i}"})) for n, i in enumerate(ids, 1)]


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.permutations([f"a{i}" for i in range(12)]), st.sets(st.sampled_from([f"a{i}" for i in range(12)])))
def test_records_follow_the_input_order_with_each_items_own_outcome(tmp_path_factory, order, done):
    """The checkpoint binds items in a first run's order; a rerun's input may list them in any order
    and add new ones: every record is its own item's, in the input's order."""
    state = tmp_path_factory.mktemp("s")
    first = _items([f"a{i}" for i in range(12)])
    store = Store.open(state)
    try:
        store.bind_job({"model": "m"}, ((i.custom_id, i.id, i.digest) for i in first))
        store.record_outcomes(
            OutcomeRow(custom_id=i.custom_id, outcome=DONE, route="batch", at=1.0)
            for i in first
            if i.id in done
        )
        now = _items([*order, "new-1"])
        store.bind_job({"model": "m"}, ((i.custom_id, i.id, i.digest) for i in now))
        records = list(iter_records(store, now))
    finally:
        store.close()
    assert [i.id for i in now] == [r["id"] for r in records]
    expected = {i: ("succeeded" if i in done else "pending") for i in order} | {"new-1": "pending"}
    assert expected == {r["id"]: r["status"] for r in records}
    assert all(r["custom_id"] == i.custom_id for r, i in zip(records, now, strict=True))


def test_the_output_is_written_atomically_from_the_stream(tmp_path: Path):
    items = _items(["x", "y"])
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"model": "m"}, ((i.custom_id, i.id, i.digest) for i in items))
        out = tmp_path / "deep" / "out.jsonl"
        write_output_atomic(out, (output_line(r) for r in iter_records(store, items)))
    finally:
        store.close()
    assert ["x", "y"] == [orjson.loads(line)["id"] for line in out.read_bytes().splitlines()]
    assert [] == [p.name for p in out.parent.iterdir() if p.name != "out.jsonl"]


def _finished(tmp_path: Path, ids: list[str]) -> tuple[Store, list]:
    items = _items(ids)
    store = Store.open(tmp_path / "s")
    store.bind_job({"model": "m"}, ((i.custom_id, i.id, i.digest) for i in items))
    store.record_outcomes(
        OutcomeRow(custom_id=i.custom_id, outcome=DONE, route="batch", at=1.0) for i in items
    )
    return store, items


def test_a_rerun_of_a_finished_job_leaves_the_output_it_wrote_and_rewrites_any_other(tmp_path: Path):
    """A no-op rerun keeps an output file that is exactly the one the last run wrote from this
    checkpoint; an edited file, another item order, a new outcome or another verdict spec rewrite it."""
    from adapters.files.output import write_output as _write_output
    from judgecore.results.verdicts import spec_from_json

    store, items = _finished(tmp_path, ["a", "b", "c"])
    out = tmp_path / "out.jsonl"
    try:
        first = _write_output(store, items, out, keep=False)
        inode = out.stat().st_ino
        again = _write_output(store, items, out, keep=False, reuse=True)
        assert inode == out.stat().st_ino, "an output the last run wrote is not rewritten"
        assert first.counts == again.counts
        assert 3 == again.counts["succeeded"]

        out.write_bytes(out.read_bytes() + b"x")  # edited by hand: rewritten from the checkpoint
        _write_output(store, items, out, keep=False, reuse=True)
        assert ["a", "b", "c"] == [orjson.loads(line)["id"] for line in out.read_bytes().splitlines()]

        reordered = [items[2], items[0], items[1]]
        _write_output(store, reordered, out, keep=False, reuse=True)
        assert ["c", "a", "b"] == [orjson.loads(line)["id"] for line in out.read_bytes().splitlines()]

        spec = spec_from_json({"pattern": r"Score: (?P<score>\d+)"})
        _write_output(store, reordered, out, keep=False, verdict=spec, reuse=True)
        assert all(orjson.loads(line)["verdict"] == {"score": 3} for line in out.read_bytes().splitlines())

        inode = out.stat().st_ino
        store.record_outcomes([OutcomeRow(custom_id=items[0].custom_id, outcome=DONE, route="sync", at=2.0)])
        _write_output(store, reordered, out, keep=False, verdict=spec, reuse=True)
        assert inode != out.stat().st_ino, "a new outcome rewrites the output"
    finally:
        store.close()


@given(
    st.lists(
        st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=12), max_size=40
    ),
    st.integers(1, 9),
)
def test_the_output_stamps_item_order_is_the_digest_of_the_whole_order_read_a_chunk_at_a_time(ids, chunk):
    """The stamp's `order` is hashed a chunk of custom_ids at a time (no text of them all is held), and
    is the digest of them all joined: an output stamped by an earlier run still counts as unchanged."""
    import hashlib

    from adapters.files.output import _hashing, _order_digest

    whole = hashlib.blake2b("\n".join(ids).encode(), digest_size=16).hexdigest()
    assert _order_digest(ids, chunk=chunk) == whole
    assert _order_digest(iter(ids), chunk=chunk) == whole
    # hashed on the way as the output's records read them: the same ids pass, the same digest is made
    h = hashlib.blake2b(digest_size=16)
    assert (ids, whole) == (list(_hashing(ids, h, chunk)), h.hexdigest())
