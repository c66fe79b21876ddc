"""output_record: one shape for both routes; anything not final is pending."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st
from strategies import items, raw_results

from judgecore import classify, custom_id_for, output_line, output_record

KEYS = [
    "id",
    "custom_id",
    "status",
    "route",
    "text",
    "stop_reason",
    "model",
    "usage",
    "error",
    "batch_id",
    "attempts",
    "metadata",
]


@given(items(), st.one_of(st.none(), raw_results), st.sampled_from(["sync", "batch"]), st.integers(0, 5))
def test_output_line_has_the_contract_shape(item, raw, route, attempts):
    outcome = None if raw is None else classify(raw)
    record = output_record(
        item, custom_id_for(item.id), outcome, route=route, batch_id=None, attempts=attempts
    )
    line = output_line(record)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    parsed = orjson.loads(line)
    assert KEYS == list(parsed)
    expected_status = str(outcome.status) if outcome is not None and outcome.final else "pending"
    assert expected_status == parsed["status"]
    assert (None if item.metadata_json is None else orjson.loads(item.metadata_json)) == parsed["metadata"]
    assert (parsed["status"] == "succeeded") == (parsed["error"] is None)
