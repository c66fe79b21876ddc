"""The schema as sent: judgecore's transform is the SDK's `transform_schema`, byte for byte, and a schema
that cannot be sent at all is refused when the verdict spec is read.

These tests import the installed SDK (the core does not): they fail the day its transform changes."""

from __future__ import annotations

import hashlib

import anthropic
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import property_schemas, verdict_schemas

from judgecore.results.verdicts import VerdictSpecError, spec_from_json
from judgecore.wire.structured import UnsendableSchemaError, wire_schema


def _sdk(schema: dict) -> bytes | type[BaseException]:
    """The SDK's transform of `schema`, serialized in its key order; the exception's type when it raises."""
    try:
        return orjson.dumps(anthropic.transform_schema(schema))
    except Exception as exc:  # any failure of the SDK's transform is the answer
        return type(exc)


@given(verdict_schemas())
def test_the_schema_sent_is_what_the_sdks_transform_makes_of_any_verdict_schema(schema):
    """Same keys, same order, same descriptions: the wire schema is `anthropic.transform_schema`'s."""
    spec = spec_from_json({"schema": schema})
    assert _sdk(spec.schema) == orjson.dumps(spec.wire_schema)
    assert _sdk(schema) == orjson.dumps(wire_schema(schema))


@given(property_schemas)
def test_each_node_is_transformed_as_the_sdk_transforms_it(schema):
    assert _sdk(schema) == orjson.dumps(wire_schema(schema))


@pytest.mark.parametrize(
    ("node", "says"),
    [
        ({"type": ["integer", "null"]}, '"anyOf": [{"type": "integer"}, {"type": "null"}]'),
        ({"description": "a score"}, 'has no "type"'),
        ({"enum": []}, 'has no "type"'),
        ({"properties": {"a": {"type": "string"}}}, 'has no "type"'),
        (True, "a boolean schema"),
        ({"type": "array", "items": True}, "a boolean schema"),
    ],
)
def test_a_node_the_sdks_transform_refuses_is_refused_with_a_way_out(node, says):
    """Where the SDK's transform raises, so does ours, with one line saying where and what to write."""
    schema = {"type": "object", "properties": {"score": {"type": "integer"}, "x": node}}
    assert isinstance(_sdk(schema), type)
    with pytest.raises(UnsendableSchemaError) as exc:
        wire_schema(schema)
    assert says in str(exc.value) and "schema/properties/x" in str(exc.value)
    with pytest.raises(VerdictSpecError, match="cannot be sent as a structured output"):
        spec_from_json({"schema": schema})


RECURSIVE = {
    "type": "object",
    "properties": {"score": {"type": "integer"}, "tree": {"$ref": "#/$defs/node"}},
    "$defs": {
        "node": {
            "type": "object",
            "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
        }
    },
}
OLD_DEFINITIONS = {
    "type": "object",
    "properties": {"score": {"$ref": "#/definitions/grade"}},
    "definitions": {"grade": {"type": "integer", "minimum": 1, "maximum": 5}},
}


@pytest.mark.parametrize(
    ("schema", "says"),
    [
        (RECURSIVE, "refer to themselves (node -> node)"),
        (OLD_DEFINITIONS, '"$ref" \'#/definitions/grade\' does not name one of the schema\'s own "$defs"'),
    ],
    ids=["recursive", "definitions"],
)
def test_a_schema_whose_transform_the_api_still_refuses_cannot_be_a_verdict_spec(schema, says):
    """The SDK's transform lets these through; the API would refuse every request: refused up front."""
    assert not isinstance(_sdk(schema), type)
    with pytest.raises(VerdictSpecError) as exc:
        spec_from_json({"schema": schema})
    assert says in str(exc.value) and "\n" not in str(exc.value)


def test_defs_that_refer_to_each_other_without_a_cycle_are_sent():
    schema = {
        "type": "object",
        "properties": {"score": {"$ref": "#/$defs/grade"}},
        "$defs": {"grade": {"anyOf": [{"$ref": "#/$defs/n"}]}, "n": {"type": "integer", "minimum": 0}},
    }
    assert _sdk(schema) == orjson.dumps(spec_from_json({"schema": schema}).wire_schema)


@given(verdict_schemas())
def test_the_manifest_digest_is_still_the_users_schema(schema):
    """A state dir made before the subset was sent keeps matching: the digest is of the user's schema."""
    canonical = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    assert hashlib.sha256(canonical).hexdigest()[:32] == spec_from_json({"schema": schema}).schema_digest


@given(verdict_schemas(), st.sampled_from(["sync", "batch"]))
def test_every_request_carries_the_schema_as_sent(schema, path):
    from judgecore.job.parsing import parse_item
    from judgecore.wire.requests import RequestTemplate, build_requests

    spec = spec_from_json({"schema": schema})
    template = RequestTemplate.build(
        model="claude-sonnet-4-6", max_tokens=64, rubric=None, path=path, output_config=spec.output_config()
    )
    item = parse_item(1, b'{"id": "x", "prompt": "p"}')
    (request,) = build_requests([item], template)
    sent = orjson.loads(request.body(template, item.messages_json))["params"]["output_config"]
    assert {"format": {"type": "json_schema", "schema": anthropic.transform_schema(spec.schema)}} == sent
