"""The OpenAI request body, the batch input line, sub-batch caps, and the strict structured-output schema."""

from __future__ import annotations

import itertools
import string

import jsonschema
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.providers.openai.body import (
    MAX_FILE_BYTES,
    MAX_LINES,
    LineTooLargeError,
    OpenAITemplate,
    UnsendableMessageError,
    chat_messages,
    sub_batches,
)
from adapters.providers.openai.schema import drop_absent_nulls, response_format, strict_schema
from judgecore.wire.structured import UnsendableSchemaError
from tests.strategies import near_instances, verdict_schemas

MESSAGES = b'[{"role":"user","content":"Question: 2+2?\\nAnswer: 4"}]'
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "reason": {"type": "string", "maxLength": 200},
    },
    "required": ["score"],
}


def test_the_body_puts_the_rubric_first_and_asks_max_completion_tokens():
    template = OpenAITemplate.build(model="gpt-5-mini", max_completion_tokens=512, rubric="Grade 1-5.")
    assert {
        "model": "gpt-5-mini",
        "max_completion_tokens": 512,
        "messages": [
            {"role": "system", "content": "Grade 1-5."},
            {"role": "user", "content": "Question: 2+2?\nAnswer: 4"},
        ],
    } == orjson.loads(template.body(None, MESSAGES))


def test_no_body_carries_max_tokens_or_temperature():
    template = OpenAITemplate.build(model="o3", max_completion_tokens=64, rubric="r", schema=SCHEMA)
    params = template.params(2000, MESSAGES)
    assert set() == {"max_tokens", "temperature"} & set(params)
    assert 2000 == params["max_completion_tokens"]


def test_without_a_rubric_the_items_messages_are_the_whole_conversation():
    template = OpenAITemplate.build(model="gpt-4.1", max_completion_tokens=10, rubric=None)
    assert orjson.loads(MESSAGES) == orjson.loads(template.body(None, MESSAGES))["messages"]


def test_a_verdict_schema_goes_as_a_strict_response_format():
    template = OpenAITemplate.build(model="gpt-5-mini", max_completion_tokens=10, rubric="r", schema=SCHEMA)
    fmt = orjson.loads(template.body(None, MESSAGES))["response_format"]
    assert {
        "type": "json_schema",
        "json_schema": {"name": "verdict", "schema": strict_schema(SCHEMA), "strict": True},
    } == fmt


def test_a_batch_line_is_the_body_under_its_custom_id_with_a_newline():
    template = OpenAITemplate.build(model="gpt-5-mini", max_completion_tokens=512, rubric="Grade.")
    line = template.line("job1-item7", 300, MESSAGES)
    assert line.endswith(b"}\n") and line.count(b"\n") == 1
    assert {
        "custom_id": "job1-item7",
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": orjson.loads(template.body(300, MESSAGES)),
    } == orjson.loads(line)


_texts = st.text(max_size=40)
_cids = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=64)


@given(
    rubric=st.one_of(st.none(), st.text(min_size=1, max_size=60)),
    contents=st.lists(_texts.filter(bool), min_size=1, max_size=4),
    custom_id=_cids,
    max_tokens=st.one_of(st.none(), st.integers(1, 128_000)),
    model=st.sampled_from(["gpt-5-mini", "o3", "Qwen/Qwen3-32B", 'a"b\\c']),
)
def test_a_lines_bytes_are_orjsons_and_its_size_is_known_from_the_sizes(
    rubric, contents, custom_id, max_tokens, model
):
    messages = [{"role": "user" if i % 2 == 0 else "assistant", "content": c} for i, c in enumerate(contents)]
    mj = orjson.dumps(messages)
    template = OpenAITemplate.build(model=model, max_completion_tokens=777, rubric=rubric)
    body = {"model": model, "max_completion_tokens": max_tokens or 777, "messages": messages}
    if rubric:
        body["messages"] = [{"role": "system", "content": rubric}, *messages]
    expected = (
        orjson.dumps({"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body})
        + b"\n"
    )
    assert expected == template.line(custom_id, max_tokens, mj)
    assert len(expected) == template.line_size(custom_id, max_tokens, len(mj))


def test_a_file_is_streamed_from_its_lines_pieces():
    template = OpenAITemplate.build(model="gpt-5-mini", max_completion_tokens=10, rubric="r")
    requests = [("a", None), ("b", 20)]
    joined = b"".join(template.lines(requests, [MESSAGES, MESSAGES]))
    assert template.line("a", None, MESSAGES) + template.line("b", 20, MESSAGES) == joined


def test_string_messages_are_sent_as_the_very_same_bytes():
    assert MESSAGES is chat_messages(MESSAGES)


def test_content_blocks_become_content_parts():
    blocks = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:", "cache_control": {"type": "ephemeral"}},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ]
    assert [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
            ],
        },
        {"role": "assistant", "content": "ok"},
    ] == orjson.loads(chat_messages(orjson.dumps(blocks)))


def test_a_block_openai_cannot_carry_is_refused_naming_its_type():
    doc = [{"role": "user", "content": [{"type": "document", "source": {}}]}]
    with pytest.raises(UnsendableMessageError, match="'document'"):
        chat_messages(orjson.dumps(doc))


# -- sub-batches -------------------------------------------------------------------------------


@given(
    sizes=st.lists(st.integers(1, 100), max_size=200),
    max_lines=st.integers(1, 30),
    max_bytes=st.integers(100, 1000),
)
def test_sub_batches_partition_the_lines_in_order_within_both_caps(sizes, max_lines, max_bytes):
    parts = sub_batches(sizes, max_lines=max_lines, max_bytes=max_bytes)
    assert list(range(len(sizes))) == [i for r in parts for i in r]
    for r in parts:
        assert 1 <= len(r) <= max_lines
        assert sum(sizes[i] for i in r) <= max_bytes
    for before, after in itertools.pairwise(parts):  # each as full as the caps allow
        assert len(before) == max_lines or sum(sizes[i] for i in before) + sizes[after.start] > max_bytes


def test_the_default_caps_are_8000_lines_and_190_mb():
    assert (8_000, 190_000_000) == (MAX_LINES, MAX_FILE_BYTES)
    assert [range(0, 8000), range(8000, 8001)] == sub_batches([10] * 8001)
    assert [range(0, 1), range(1, 2)] == sub_batches([100_000_000, 100_000_000])


def test_a_line_over_the_byte_cap_alone_is_an_error():
    with pytest.raises(LineTooLargeError, match="request 1"):
        sub_batches([10, 200], max_bytes=100)


# -- the strict schema -------------------------------------------------------------------------


def _nodes(schema):
    yield schema
    for key in ("properties", "$defs"):
        for sub in (schema.get(key) or {}).values():
            yield from _nodes(sub)
    for sub in schema.get("anyOf", ()):
        yield from _nodes(sub)
    if isinstance(schema.get("items"), dict):
        yield from _nodes(schema["items"])


_ALLOWED = {
    "type", "description", "title", "enum", "const", "anyOf", "$ref", "$defs", "properties", "required",
    "additionalProperties", "items", "pattern", "format", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "multipleOf", "minItems", "maxItems",
}  # fmt: skip


def test_unsupported_keywords_move_into_the_description_and_optional_ones_become_nullable():
    assert {
        "type": "object",
        "properties": {
            "score": {"type": "integer", "maximum": 5, "minimum": 1},
            "reason": {"type": ["string", "null"], "description": "{maxLength: 200}"},
        },
        "required": ["score", "reason"],
        "additionalProperties": False,
    } == strict_schema(SCHEMA)


def _filled(value, schema, defs):
    """`value` as the strict schema has the model give it: every absent optional property null; None
    when it holds a key the schema does not name (outside what the strict schema can say)."""
    if "$ref" in schema:
        schema = defs[schema["$ref"].rsplit("/", 1)[1]]
    if isinstance(value, dict) and "properties" in schema:
        if set(value) - set(schema["properties"]):
            return None
        out = {}
        for key, sub in schema["properties"].items():
            if key in value:
                inner = _filled(value[key], sub, defs)
                if inner is None and value[key] is not None:
                    return None
                out[key] = inner
            else:
                out[key] = None
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        inner = [_filled(v, schema["items"], defs) for v in value]
        return None if any(i is None and v is not None for i, v in zip(inner, value, strict=True)) else inner
    if isinstance(value, dict | list) and "anyOf" in schema:  # the branch the value is valid in
        for variant in schema["anyOf"]:
            if jsonschema.Draft202012Validator({**variant, "$defs": defs}).is_valid(value):
                inner = _filled(value, variant, defs)
                if inner is not None:
                    return inner
        return None
    return value


@given(st.data())
def test_the_strict_schema_is_closed_and_a_valid_answer_fits_it_and_reads_back_as_itself(data):
    """Every object of the strict schema is closed and requires every property, no keyword outside the
    subset left. What the user's schema takes, the strict one takes (nulls for the absent); dropping
    those nulls gives the answer back, which the full schema then validates as before."""
    schema = data.draw(verdict_schemas())
    wire = strict_schema(schema)
    jsonschema.Draft202012Validator.check_schema(wire)
    for node in _nodes(wire):
        assert set() == set(node) - _ALLOWED
        if "properties" in node:
            assert (False, list(node["properties"])) == (node["additionalProperties"], node["required"])
    full, strict = jsonschema.Draft202012Validator(schema), jsonschema.Draft202012Validator(wire)
    answers = data.draw(st.lists(near_instances(schema), min_size=20, max_size=20))
    pairs = [(a, _filled(a, schema, schema.get("$defs", {}))) for a in answers if full.is_valid(a)]
    for answer, filled in pairs:
        if filled is not None:
            assert strict.is_valid(filled)
            assert answer == drop_absent_nulls(filled, schema)


def test_the_read_back_law_is_checked_on_answers_that_exist():
    """The generated answers above include valid ones with optional properties left out."""
    schema = SCHEMA
    filled = _filled({"score": 4}, schema, {})
    assert {"score": 4, "reason": None} == filled
    assert jsonschema.Draft202012Validator(strict_schema(schema)).is_valid(filled)
    assert {"score": 4} == drop_absent_nulls(filled, schema)


def test_a_null_the_users_schema_allows_is_kept():
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer"}, "note": {"type": ["string", "null"]}},
    }
    assert {"score": 3, "note": None} == drop_absent_nulls({"score": 3, "note": None}, schema)
    assert {"score": 3} == drop_absent_nulls(
        {"score": 3, "note": None},
        {**schema, "properties": {**schema["properties"], "note": {"type": "string"}}},
    )


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        ({"type": "array", "items": {"type": "integer"}}, "root must be"),
        ({"type": "object", "properties": {"a": True}}, "boolean schema"),
        (
            {"type": "object", "properties": {"a": {"allOf": [{"type": "string"}, {"maxLength": 3}]}}},
            '"allOf" of 2',
        ),
        ({"type": "object", "properties": {"a": {"description": "anything"}}}, 'has no "type"'),
        ({"type": "object", "properties": {"a": {"type": "date"}}}, "'date' is not one OpenAI takes"),
    ],
)
def test_a_schema_no_request_can_carry_is_refused_naming_where(schema, says):
    with pytest.raises(UnsendableSchemaError, match=says):
        response_format(schema)
