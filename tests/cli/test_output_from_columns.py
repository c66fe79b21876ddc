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
