"""The output is streamed from the checkpoint in input order, whatever order the checkpoint holds."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.job import iter_records, write_output_atomic
from adapters.store import OutcomeRow, Store
from judgecore import Outcome, Status, output_line, parse_item

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
