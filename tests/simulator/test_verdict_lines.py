"""The simulator answers every verdict line a rubric spells out: several lines, labels in their own case
and length, the repo's own `examples/rubric.txt`; a run through the real SDK reads every one."""

from __future__ import annotations

import re

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from adapters.simulator.answers import answer
from adapters.simulator.scenario import Scenario
from adapters.simulator.verdict_lines import FormatLine, format_lines
from tests.integration.conftest import ROOT, read_output, served, write_items

__all__ = ["served"]  # the fixture, shared with the integration tests


def _ask(rubric: str, k: int) -> str:
    params = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 400,
        "system": [{"type": "text", "text": rubric}],
        "messages": [{"role": "user", "content": f"item {k}"}],
    }
    return answer(params, seed=3).text


EXAMPLE = (ROOT / "examples" / "rubric.txt").read_text()


def test_the_example_rubric_is_answered_line_by_line_in_its_own_scale_and_labels():
    assert (
        FormatLine("Helpfulness", "number", lo=0, hi=5),
        FormatLine("Refusal", "label", labels=("appropriate", "unneeded", "n/a")),
        FormatLine("Rationale", "text"),
    ) == format_lines(EXAMPLE)
    texts = [_ask(EXAMPLE, k) for k in range(60)]
    shape = re.compile(r"\AHelpfulness: ([0-5])\nRefusal: (appropriate|unneeded|n/a)\nRationale: \S.*\Z")
    assert all(shape.match(t) for t in texts), texts[:3]
    assert {str(v) for v in range(6)} == {shape.match(t).group(1) for t in texts}


def test_score_and_verdict_lines_are_both_answered_with_a_rationale_after_them():
    text = _ask("Answer in this format:\nScore: <1-5>\nVerdict: pass/FAIL/Needs Work\n", 1)
    assert re.fullmatch(r"Score: [1-5]\nVerdict: (pass|FAIL|Needs Work)\nRationale: .+", text)


def test_a_free_text_line_is_not_a_label_list_and_a_rubric_without_a_block_keeps_one_line():
    assert (
        FormatLine("Winner", "label", labels=("A", "B", "tie")),
        FormatLine("Why", "text"),
    ) == format_lines("Answer:\nWinner: A, B or tie\nWhy: one or two sentences\n")
    assert format_lines("Grade on a 1-5 scale; end with 'Score: N'.") is None
    assert format_lines("Refusals: if the candidate refuses, say so.\nBe fair.") is None


label = st.text(st.characters(whitelist_categories=("Lu", "Ll")), min_size=1, max_size=14)


@settings(max_examples=30, deadline=None)
@given(st.lists(label, min_size=2, max_size=5, unique=True), st.sampled_from([" | ", "/"]))
def test_labels_of_any_case_and_length_come_back_as_written(labels, sep):
    rubric = f"Reply exactly so:\nScore: N\nLabel: {sep.join(labels)}\n"
    text = _ask(rubric, len(labels))
    m = re.fullmatch(r"Score: (\d+)\nLabel: (.+)\nRationale: .+", text)
    assert m is not None, text
    assert m.group(2) in labels


@pytest.mark.integration
def test_a_job_with_the_example_rubric_reads_every_answer(served, tmp_path):
    """Through the real SDK: the example rubric's own verdict file (`examples/helpfulness.json`, the
    README's) reads both lines of every answer: nothing unparsed."""
    s = served(Scenario(seed=5))
    rows = [
        orjson.loads(line) for line in (ROOT / "examples" / "completions.jsonl").read_bytes().splitlines()
    ]
    items = write_items(tmp_path / "items.jsonl", rows)
    spec = ROOT / "examples" / "helpfulness.json"
    out = tmp_path / "out.jsonl"
    res = s.cli(
        [
            "run",
            str(items),
            "--state",
            str(tmp_path / "st"),
            "--rubric",
            str(ROOT / "examples" / "rubric.txt"),
            "--verdict",
            str(spec),
            "--out",
            str(out),
            "--otpm",
            "400000",
        ]
    )
    assert 0 == res.returncode, res.stderr
    got = read_output(out)
    assert len(rows) == len(got)
    assert all(
        r["status"] == "succeeded" and r["verdict"]["refusal"] in ("appropriate", "unneeded", "n/a")
        for r in got
    )
    assert all(0 <= r["verdict"]["helpfulness"] <= 5 for r in got)
    assert {r["verdict"]["helpfulness"] for r in got} != {0}  # a number read, not a default
