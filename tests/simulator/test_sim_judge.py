"""The simulator answers like a judge: the rubric's format, a schema's shape, seeded scores and misses."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import validate

from adapters.simulator.answers import NO_VERDICT, answer
from adapters.simulator.rubric_format import JudgeFormat, judge_format

SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "label": {"enum": ["good", "bad", 3]},
        "ok": {"type": "boolean"},
        "why": {"type": "string", "maxLength": 12},
        "tags": {"type": "array", "items": {"type": "string"}, "minItems": 2},
    },
    "required": ["score", "label", "ok", "why", "tags"],
    "additionalProperties": False,
}


def params(text: str, *, system: str | None = None, schema: dict | None = None) -> dict:
    p: dict = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 400,
        "messages": [{"role": "user", "content": text}],
    }
    if system is not None:
        p["system"] = [{"type": "text", "text": system}]
    if schema is not None:
        p["output_config"] = {"format": {"type": "json_schema", "schema": schema}}
    return p


def test_the_rubric_names_the_format():
    assert JudgeFormat(field="Verdict", labels=("PASS", "FAIL")) == judge_format(
        'End with one line "Verdict: X", where X is one of PASS or FAIL.'
    )
    assert JudgeFormat(field="Rating", lo=1, hi=5) == judge_format(
        'Grade on a 1-5 scale; end with "Rating: N".'
    )
    assert JudgeFormat() == judge_format("Be fair.")


@given(st.integers(0, 10_000))
def test_a_label_rubric_is_answered_with_one_of_its_labels(i):
    a = answer(params(f"item {i}", system='Say "Verdict: X" with X one of PASS, FAIL, UNSURE.'), seed=3)
    first = a.text.splitlines()[0]
    assert first in {"Verdict: PASS", "Verdict: FAIL", "Verdict: UNSURE"}


@given(st.integers(0, 10_000), st.integers(0, 5))
def test_a_schema_answer_validates_against_it(i, seed):
    validate(orjson.loads(answer(params(f"item {i}", schema=SCHEMA), seed=seed).text), SCHEMA)


def test_score_weights_shape_the_distribution():
    system = "Rate on a 1-5 scale."
    got = {answer(params(f"q{i}", system=system), seed=1, score_weights={"4": 1.0}).score for i in range(50)}
    assert {4} == got


def test_the_unparseable_rate_is_a_seeded_share_of_requests():
    texts = [answer(params(f"q{i}"), seed=9, unparseable_rate=0.25).text for i in range(800)]
    share = sum(t == NO_VERDICT for t in texts) / len(texts)
    assert 0.18 < share < 0.32
    assert texts == [answer(params(f"q{i}"), seed=9, unparseable_rate=0.25).text for i in range(800)]


def test_a_pairwise_prompt_under_a_schema_is_answered_in_the_schemas_json():
    """Structured outputs constrain the answer to the schema: a pairwise prompt's `Winner: A` line
    must not be written before (or instead of) the JSON object, whatever the design knobs."""
    from adapters.simulator.logic import Simulator
    from adapters.simulator.scenario import Scenario
    from adapters.simulator.transport import sim_client

    schema = {
        "type": "object",
        "properties": {"choice": {"enum": ["A", "B", "tie"]}},
        "required": ["choice"],
        "additionalProperties": False,
    }
    client = sim_client(Simulator(Scenario(position_bias=0.5, sample_spread=0.5)), async_=False)
    for i in range(12):
        prompt = (
            f"[The Start of Assistant A's Answer]\nanswer {i}\n[The End of Assistant A's Answer]\n"
            f"[The Start of Assistant B's Answer]\nother {i}\n[The End of Assistant B's Answer]\n"
        )
        message = client.messages.create(  # type: ignore[call-overload]
            model="claude-sonnet-4-6",
            max_tokens=300,
            messages=[{"role": "user", "content": prompt}],
            output_config={"format": {"type": "json_schema", "schema": schema}},
        )
        validate(orjson.loads(message.content[0].text), schema)


def test_a_pairwise_prompt_is_judged_as_one_when_the_judge_thinks():
    """With thinking on, the judge still answers the pairwise prompt (`Winner: X`, the position bias
    applied), after its thinking block; the text had been the rubric's generic `Score: N`, so a
    pairwise job with `--thinking` read no verdict at all."""
    from adapters.simulator.logic import Simulator
    from adapters.simulator.scenario import Scenario
    from adapters.simulator.transport import sim_client

    client = sim_client(Simulator(Scenario(position_bias=1.0)), async_=False)
    for i in range(6):
        prompt = (
            f"[The Start of Assistant A's Answer]\nanswer {i}\n[The End of Assistant A's Answer]\n"
            f"[The Start of Assistant B's Answer]\nother {i}\n[The End of Assistant B's Answer]\n"
            'Reply "Winner: A", "Winner: B" or "Winner: tie".'
        )
        message = client.messages.create(  # type: ignore[call-overload]
            model="claude-sonnet-4-6",
            max_tokens=16_000,
            thinking={"type": "adaptive"},
            messages=[{"role": "user", "content": prompt}],
        )
        kinds = [block.type for block in message.content]
        assert ["thinking", "text"] == kinds
        assert message.content[1].text.startswith("Winner: A\n")  # the first position, always
        assert message.usage.output_tokens > 600  # the thinking's tokens are billed with the text's
