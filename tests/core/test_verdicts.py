"""Verdict specs and parse_verdict: a schema or a regex reads the verdict; anything else is Unscored."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgecore.results.verdicts import Unscored, Verdict, VerdictSpecError, parse_verdict, spec_from_json

SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "why": {"type": "string"}},
    "required": ["score", "why"],
    "additionalProperties": False,
}
PATTERN = spec_from_json(b'{"pattern": "^Score:\\\\s*(?P<score>\\\\S+)"}')


def test_the_last_match_counts_and_numeric_groups_become_numbers():
    text = "Score: 3 would be harsh.\nOn reflection:\nScore: 4\n"
    assert Verdict((("score", 4),), 4) == parse_verdict(text, PATTERN)
    assert {"score": 7.5} == parse_verdict("Score: 7.5", PATTERN).as_dict()  # type: ignore[union-attr]


def test_a_label_stays_text_and_is_the_score():
    spec = spec_from_json({"pattern": r"Verdict: (?P<verdict>[A-Z]+)", "score": "verdict"})
    assert Verdict((("verdict", "PASS"),), "PASS") == parse_verdict("Verdict: FAIL\nVerdict: PASS", spec)


def test_no_match_is_unscored_with_a_reason():
    assert Unscored("no match for the verdict pattern") == parse_verdict("I cannot grade this.", PATTERN)
    assert Unscored("the answer has no text") == parse_verdict(None, PATTERN)


def test_a_schema_answer_is_validated():
    spec = spec_from_json({"schema": SCHEMA})
    good = orjson.dumps({"score": 2, "why": "thin"}).decode()
    assert Verdict((("score", 2), ("why", "thin")), 2) == parse_verdict(good, spec)
    bad = parse_verdict('{"score": 9, "why": "x"}', spec)
    assert isinstance(bad, Unscored) and "at score" in bad.reason and "maximum" in bad.reason
    assert parse_verdict("Score: 2", spec).reason.startswith("not valid JSON")  # type: ignore[union-attr]


#: SCHEMA as the SDK's transform makes it: the bounds move into the description (sorted, as the spec
#: keeps the schema's keys), the object stays closed.
SCHEMA_AS_SENT = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "description": "{maximum: 5, minimum: 1}"},
        "why": {"type": "string"},
    },
    "additionalProperties": False,
    "required": ["score", "why"],
}


def test_schema_spec_sends_the_subset_and_keeps_the_full_schema_for_validation_and_digest():
    """output_config carries the schema as sent; the spec's schema (validation, digest) is the user's."""
    spec = spec_from_json({"schema": SCHEMA})
    assert {"format": {"type": "json_schema", "schema": SCHEMA_AS_SENT}} == spec.output_config()
    assert SCHEMA == spec.schema
    assert spec.schema_digest == spec_from_json({"schema": dict(reversed(SCHEMA.items()))}).schema_digest
    assert (None, None) == (PATTERN.output_config(), PATTERN.schema_digest)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (b"{not json", "not valid JSON"),
        (b'{"schema": {"type": "object"}, "pattern": "(?P<score>x)"}', "exactly one"),
        (b"{}", "exactly one"),
        (b'{"pattern": "(?P<score>"}', "does not compile"),
        (b'{"pattern": "Score: (\\\\d+)"}', "no named group"),
        (b'{"pattern": "(?P<grade>\\\\d+)"}', "no group named 'score'"),
        (
            b'{"schema": {"type": "object", "properties": {"score": {"type": "nonsense"}}}}',
            "not a valid JSON Schema",
        ),
        (b'{"schema": {"type": "integer"}}', "must describe an object"),
        (b'{"schema": {"type": "object", "properties": {"grade": {}}}}', "no property 'score'"),
        (b'{"pattern": "(?P<score>x)", "scor": "x"}', "unknown key"),
    ],
)
def test_a_bad_spec_is_refused_with_one_line(raw, says):
    with pytest.raises(VerdictSpecError) as exc:
        spec_from_json(raw)
    assert says in str(exc.value) and "\n" not in str(exc.value)


@given(st.lists(st.integers(0, 100), min_size=1, max_size=8), st.text(alphabet="abc \n", max_size=20))
def test_whatever_precedes_it_the_last_score_line_wins(scores, noise):
    text = noise + "\n" + "\n".join(f"Score: {s}" for s in scores)
    assert scores[-1] == parse_verdict(text, PATTERN).score  # type: ignore[union-attr]


@given(st.sampled_from(["sync", "batch"]), st.one_of(st.none(), st.text(min_size=1, max_size=40)))
def test_a_schema_rides_every_request_byte_for_byte(path, rubric):
    """The pre-serialized output_config piece: body == the params dict serialized, size exact."""
    from judgecore.job.parsing import parse_item
    from judgecore.wire.requests import RequestTemplate, build_requests

    spec = spec_from_json({"schema": SCHEMA})
    template = RequestTemplate.build(
        model="claude-sonnet-4-6", max_tokens=64, rubric=rubric, path=path, output_config=spec.output_config()
    )
    item = parse_item(1, b'{"id": "x", "prompt": "p"}')
    (request,) = build_requests([item], template)
    body = request.body(template, item.messages_json)
    params = request.params(template, item.messages_json)
    assert len(body) == request.size
    assert {"custom_id": request.custom_id, "params": params} == orjson.loads(body)
    assert spec.output_config() == params["output_config"]


@pytest.mark.parametrize(
    ("schema", "where"),
    [
        (
            {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score", "reason"]},
            "",
        ),
        (
            {
                "type": "object",
                "properties": {
                    "score": {"type": "integer"},
                    "detail": {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
                },
            },
            "properties/detail/",
        ),
    ],
)
def test_a_schema_that_requires_a_key_it_does_not_list_is_refused_before_anything_is_sent(schema, where):
    """Every object is sent closed, so a required key missing from `properties` (a typo) can never be
    answered: each answer, paid for, was VERDICT_UNPARSED. It is a bad spec instead, naming the path."""
    with pytest.raises(VerdictSpecError, match=f'\\(schema/{where}required\\), which its "properties" lack'):
        spec_from_json({"schema": schema})
    assert spec_from_json({"schema": schema}, sendable=False).kind == "schema"  # answers still readable


@pytest.mark.parametrize(
    ("score", "scale"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 5}, (1.0, 5.0)),
        ({"type": "number", "minimum": 0, "maximum": 1}, (0.0, 1.0)),
        ({"type": "integer", "enum": [0, 1, 2, 3]}, (0.0, 3.0)),
        ({"type": "integer", "enum": [-2, 2, 0]}, (-2.0, 2.0)),
        ({"type": "integer", "minimum": 1}, None),  # one end: no scale
        ({"type": "integer"}, None),
        ({"type": "string", "enum": ["PASS", "FAIL"]}, None),  # a label has shares, not a scale
        ({"type": "integer", "enum": [3]}, None),
    ],
)
def test_a_schema_declares_the_scores_scale_by_its_bounds_or_its_enum(score, scale):
    schema = {"type": "object", "properties": {"score": score}, "required": ["score"]}
    assert scale == spec_from_json({"schema": schema}).scale


def test_a_pattern_declares_no_scale():
    assert spec_from_json({"pattern": r"Score: (?P<score>\d)"}).scale is None
