"""output_record: one shape for both routes; anything not final is pending."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st
from strategies import items, raw_results

from judgecore.job.ids import custom_id_for
from judgecore.job.parsing import parse_item
from judgecore.results.outcomes import RawResult, Usage, classify
from judgecore.results.output_line import output_line, output_record
from judgecore.results.verdicts import spec_from_json

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
    "verdict",
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
    # a line carries stop_details only when the answer had them (a refusal): others keep their shape
    with_details = outcome is not None and outcome.stop_details is not None
    assert KEYS + (["stop_details"] if with_details else []) == list(parsed)
    expected_status = str(outcome.status) if outcome is not None and outcome.final else "pending"
    assert expected_status == parsed["status"]
    assert (None if item.metadata_json is None else orjson.loads(item.metadata_json)) == parsed["metadata"]
    assert (parsed["status"] == "succeeded") == (parsed["error"] is None)


ITEM = parse_item(1, b'{"id": "a", "prompt": "p", "metadata": {"model": "m1"}}')
PATTERN = spec_from_json({"pattern": r"^Score: (?P<score>\d+)"})


def _answer(text, stop_reason="end_turn"):
    usage = Usage(input_tokens=10, output_tokens=5)
    return classify(RawResult(kind="succeeded", text=text, stop_reason=stop_reason, usage=usage))


def _record(outcome, **kw):
    kw.setdefault("batch_id", None)
    return output_record(ITEM, "cid", outcome, route="sync", attempts=1, **kw)


def test_without_a_verdict_spec_the_verdict_is_null():
    assert None is _record(_answer("Score: 4"))["verdict"]


def test_a_readable_verdict_is_on_the_line():
    rec = _record(_answer("Fine.\nScore: 4"), verdict_spec=PATTERN)
    assert ("succeeded", {"score": 4}, None) == (rec["status"], rec["verdict"], rec["error"])


def test_an_unreadable_verdict_is_a_miss_with_its_text_kept():
    rec = _record(_answer("I decline to grade."), verdict_spec=PATTERN)
    expected_error = {
        "class": "VERDICT_UNPARSED",
        "type": "pattern",
        "message": "no match for the verdict pattern",
    }
    assert ("miss", expected_error, "I decline to grade.", None) == (
        rec["status"],
        rec["error"],
        rec["text"],
        rec["verdict"],
    )


def test_truncation_stays_model_truncation_whatever_the_text_holds():
    rec = _record(_answer("Score: 4 because", stop_reason="max_tokens"), verdict_spec=PATTERN)
    assert ("miss", "MODEL_TRUNCATION", None) == (rec["status"], rec["error"]["class"], rec["verdict"])


def test_a_pending_item_in_a_live_batch_names_it():
    rec = _record(None, waiting_in="msgbatch_1")
    assert ("pending", "msgbatch_1", "PENDING") == (rec["status"], rec["batch_id"], rec["error"]["class"])
    assert rec["error"]["message"].startswith("waiting in batch msgbatch_1")


def test_a_pending_item_never_sent_says_so():
    rec = _record(None)
    assert (None, "not answered yet; rerun the same command to resume") == (
        rec["batch_id"],
        rec["error"]["message"],
    )
