"""The output is written from the checkpoint's columns, without an `Outcome` per item: every line is
the same bytes as the one made from the outcome that was recorded."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st
from strategies import items, raw_results

from adapters.checkpoint.store import OutcomeRow, Store
from adapters.files.output import write_output
from judgecore.job.items import Items
from judgecore.results.outcomes import classify
from judgecore.results.output_line import output_line, record_for
from judgecore.results.verdicts import spec_from_json

PATTERN = spec_from_json({"pattern": r"^Score: (?P<score>\d+)"})


@given(
    st.lists(st.tuples(items(), st.lists(raw_results, max_size=3)), min_size=1, max_size=4),
    st.booleans(),
    st.sampled_from(["sync", "batch"]),
)
def test_each_output_line_is_the_bytes_of_its_recorded_outcome(cases, with_verdict, route) -> None:
    """For any items and answers recorded for them (several each, in turn), the output file holds, line
    by line, `output_line(record_for(...))` of each item's winning outcome."""
    verdict = PATTERN if with_verdict else None
    unique = list({item.id: (item, raws) for item, raws in cases}.values())
    job = Items.of(item for item, _ in unique)
    expected = []
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "s")
        try:
            store.bind_job(
                {"model": "m"}, [(cid, i, "d") for cid, i in zip(job.custom_ids, job.ids, strict=True)]
            )
            for n, (item, raws) in enumerate(unique):
                cid = job.custom_ids[n]
                outcomes = [classify(raw) for raw in raws]
                store.record_outcomes(
                    OutcomeRow(custom_id=cid, outcome=o, route=route, at=float(k), attempts=k + 1)
                    for k, o in enumerate(outcomes)
                )
                finals = [o for o in outcomes if o.final]
                winner = finals[-1] if finals else (outcomes[-1] if outcomes else None)
                used = sum(range(1, len(outcomes) + 1))
                record = record_for(
                    item.id,
                    cid,
                    item.metadata_json,
                    winner,
                    route=route if winner is not None else "sync",
                    batch_id=None,
                    attempts=used,
                    verdict_spec=verdict,
                )
                expected.append(output_line(record))
            out = Path(tmp) / "out.jsonl"
            write_output(store, job, out, keep=False, verdict=verdict)
            got = out.read_bytes()
        finally:
            store.close()
    assert b"".join(expected) == got
    assert len(unique) == len([orjson.loads(line) for line in got.splitlines()])


def test_the_checkpoint_s_row_is_read_by_the_names_of_the_one_record_s_columns(tmp_path: Path) -> None:
    """`Store.latest_rows` gives the columns `LatestRow` names, in its order: a recorded answer read
    back by name is the answer, and its output object is the one `record_for` makes of it."""
    from judgecore.results.output_line import LatestRow, record_of_row
    from judgecore.results.resultlines import line_outcome

    answer = line_outcome(
        {
            "type": "succeeded",
            "message": {
                "content": [{"type": "text", "text": "Score: 7"}],
                "stop_reason": "end_turn",
                "model": "m1",
                "usage": {"input_tokens": 5, "output_tokens": 2},
            },
        }
    )
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"model": "m"}, [("c-1", "q1", "d")])
        store.record_outcomes(
            [OutcomeRow(custom_id="c-1", outcome=answer, route="batch", at=1.0, attempts=1)]
        )
        row = LatestRow(*next(iter(store.latest_rows())))
    finally:
        store.close()
    assert (row.custom_id, row.status, row.text, row.model, row.route, row.attempts) == (
        "c-1", "succeeded", "Score: 7", "m1", "batch", 1,
    )  # fmt: skip
    made = record_of_row(row, item_id="q1", metadata_json=None, default_route="sync", verdict_spec=PATTERN)
    assert made == record_for(
        "q1", "c-1", None, answer, route="batch", batch_id=None, attempts=1, verdict_spec=PATTERN
    )
    assert made["verdict"] == {"score": 7} and made["usage"]["input_tokens"] == 5
