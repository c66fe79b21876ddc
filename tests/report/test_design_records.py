"""A design's answers in a real checkpoint, recorded in any order: the output lines (`iter_records`)
and what `summary` reads (`records_from_store`) fold them into the same one line per item."""

from __future__ import annotations

import tempfile
from pathlib import Path

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.checkpoint.records import iter_records, records_from_store
from adapters.checkpoint.store import Store
from adapters.run.planning_run import record_for_summary
from adapters.run.settings import JobSettings
from judgecore.decide.planning import JobPlan
from judgecore.job.designs import design_items, expand_item
from judgecore.job.parsing import parse_items
from judgecore.results.outcomes import RawResult, Usage, classify
from judgecore.results.verdicts import spec_from_json
from judgecore.wire.requests import RequestTemplate, build_requests

SHM = Path("/dev/shm")
VERDICT = spec_from_json({"pattern": r"Score: (?P<score>\d+)"})
SETTINGS = JobSettings(samples=3, judges=("claude-haiku-4-5", "claude-opus-4-6"), verdict=VERDICT)
TEMPLATE = RequestTemplate.build(model="claude-haiku-4-5", max_tokens=64, rubric=None, path="batch")


def _job(n: int) -> JobPlan:
    design = SETTINGS.design
    lines = [orjson.dumps({"id": f"q{i}", "prompt": f"answer {i}", "metadata": {"k": i}}) for i in range(n)]
    rows = [
        expand_item(design, it.id, it.line, it.messages_json, None, it.metadata_json)
        for it in parse_items(lines)
    ]
    items = design_items(design, rows, job=None)
    return JobPlan(
        items=items, requests=build_requests(items, TEMPLATE), sync_template=TEMPLATE, batch_template=TEMPLATE
    )


@settings(max_examples=15)
@given(n=st.integers(1, 3), data=st.data())
def test_answers_recorded_in_any_order_fold_into_the_same_lines(n: int, data: st.DataObject) -> None:
    job = _job(n)
    cids = list(job.items.custom_ids)
    scores = {c: data.draw(st.integers(1, 9)) for c in cids}
    orders = [cids, data.draw(st.permutations(cids))]
    seen = []
    for order in orders:
        with tempfile.TemporaryDirectory(dir=SHM if SHM.is_dir() else None) as tmp:
            store = Store.open(Path(tmp) / "s")
            try:
                store.bind_job(SETTINGS.manifest(None), job.items.bindings())
                record_for_summary(store, job, SETTINGS)
                with store.writer() as w:
                    for t, c in enumerate(order):
                        result = RawResult(
                            kind="succeeded",
                            text=f"Score: {scores[c]}",
                            stop_reason="end_turn",
                            model="m",
                            usage=Usage(input_tokens=5, output_tokens=2),
                        )
                        w.add_outcome(c, classify(result), route="batch", at=float(t))
                lines = list(iter_records(store, job.items, VERDICT, SETTINGS.design))
                assert lines == records_from_store(store, VERDICT)
                seen.append(lines)
            finally:
                store.close()
    assert seen[0] == seen[1]
    assert n == len(seen[0])
    for line in seen[0]:
        assert {"claude-haiku-4-5", "claude-opus-4-6"} == set(line["judges"])
        assert 6 == len(line["samples"])
        assert {"input_tokens": 30, "output_tokens": 12} == {
            k: line["usage"][k] for k in ("input_tokens", "output_tokens")
        }
