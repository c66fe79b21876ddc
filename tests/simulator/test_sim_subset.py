"""The simulator refuses a structured-output schema outside the API's subset, as the API does: a 400 on
the sync route, an errored line in a batch, with the API's wording; and whatever schema a user may give,
the schema judgecore sends is inside it, while judgecore's verdicts agree with jsonschema on the
user's full schema."""

from __future__ import annotations

import anthropic
import orjson
import pytest
from hypothesis import given
from jsonschema.validators import validator_for
from strategies import near_instances, verdict_schemas

from adapters.simulator.answers import answer
from adapters.simulator.subset import schema_problem
from adapters.simulator.transport import sim_client
from judgecore.results.verdicts import Verdict, parse_verdict, spec_from_json

from .support import params

README_SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "rationale": {"type": "string"},
    },
    "required": ["score", "rationale"],
}
P = "output_config.format.schema: "
CLOSED = {"additionalProperties": False}


def _obj(**props: dict) -> dict:
    return {"type": "object", "properties": props, **CLOSED}


REFUSED = [
    pytest.param(
        _obj(score={"type": "integer", "minimum": 1}),
        P + "For 'integer' type, property 'minimum' is not supported",
        id="minimum",
    ),
    pytest.param(
        _obj(score={"type": "integer", "minimum": 1, "maximum": 5}),
        P + "For 'integer' type, properties maximum, minimum are not supported",
        id="both-bounds",
    ),
    pytest.param(
        _obj(x={"type": "number", "exclusiveMaximum": 1}),
        P + "For 'number' type, property 'exclusiveMaximum' is not supported",
        id="exclusiveMaximum",
    ),
    pytest.param(
        _obj(x={"type": "integer", "multipleOf": 2}),
        P + "For 'integer' type, property 'multipleOf' is not supported",
        id="multipleOf",
    ),
    pytest.param(
        _obj(x={"type": "string", "maxLength": 9}),
        P + "For 'string' type, property 'maxLength' is not supported",
        id="maxLength",
    ),
    pytest.param(
        _obj(x={"type": "string", "minLength": 1}),
        P + "For 'string' type, property 'minLength' is not supported",
        id="minLength",
    ),
    pytest.param(
        _obj(x={"type": "array", "items": {"type": "string"}, "minItems": 2}),
        P + "For 'array' type, 'minItems' values other than 0 or 1 are not supported",
        id="minItems-2",
    ),
    pytest.param(
        _obj(x={"type": "array", "items": {"type": "string"}, "maxItems": 3}),
        P + "For 'array' type, property 'maxItems' is not supported",
        id="maxItems",
    ),
    pytest.param(
        README_SCHEMA,
        P + "For 'object' type, 'additionalProperties' must be explicitly set to false",
        id="readme-schema-verbatim",
    ),
    pytest.param(
        _obj(inner={"type": "object", "properties": {}}),
        P + "For 'object' type, 'additionalProperties' must be explicitly set to false",
        id="nested-open-object",
    ),
    pytest.param(
        {"type": "object", "properties": {}, "additionalProperties": True},
        P + "For 'object' type, 'additionalProperties: true' is not supported. "
        "Please set 'additionalProperties' to false",
        id="additionalProperties-true",
    ),
    pytest.param(
        {**_obj(t={"$ref": "#/$defs/n"}), "$defs": {"n": _obj(k={"$ref": "#/$defs/n"})}},
        P + "Circular reference detected in schema definitions: n -> n. "
        "Self-referencing or mutually-referencing definitions are not supported.",
        id="recursive",
    ),
    pytest.param(
        _obj(x={"$ref": "#/$defs/missing"}),
        P + "$ref '#/$defs/missing' could not be resolved in the schema",
        id="dangling-ref",
    ),
    pytest.param(
        _obj(x={"oneOf": [{"type": "string"}]}),
        P + "For this schema, property 'oneOf' is not supported",
        id="oneOf",
    ),
    pytest.param(
        _obj(x={"type": "string", "format": "color"}),
        P + "For 'string' type, format 'color' is not supported",
        id="format",
    ),
]

ACCEPTED = [
    pytest.param(
        {
            **_obj(
                score={"type": "integer", "description": "{maximum: 5, minimum: 1}"},
                label={"enum": ["good", "bad", 3, None]},
                when={"type": "string", "format": "date-time", "pattern": "^2"},
                tags={"type": "array", "items": {"type": "string"}, "minItems": 1},
                either={"anyOf": [{"type": "string"}, {"type": "null"}]},
                ref={"$ref": "#/$defs/r"},
                maybe={"type": ["integer", "null"]},
            ),
            "required": ["score"],
            "$defs": {"r": _obj(k={"const": "x"})},
        },
        id="the-subset",
    ),
    pytest.param(anthropic.transform_schema(README_SCHEMA), id="readme-schema-transformed"),
]


@pytest.mark.parametrize(("schema", "message"), REFUSED)
def test_a_schema_outside_the_subset_is_a_400_on_the_sync_route(make_sim, schema, message):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    output_config = {"format": {"type": "json_schema", "schema": schema}}
    with pytest.raises(anthropic.BadRequestError) as info:
        client.messages.create(**params(), output_config=output_config)  # type: ignore[arg-type]
    assert (400, "invalid_request_error", message) == (
        info.value.status_code,
        info.value.body["error"]["type"],  # type: ignore[index]
        info.value.body["error"]["message"],  # type: ignore[index]
    )
    assert not sim.billed


def test_a_schema_outside_the_subset_is_an_errored_line_in_a_batch(make_sim, clock):
    """The create is accepted (params are checked as each request runs); every line says why."""
    sim = make_sim()
    client = sim_client(sim, async_=False)
    requests = [
        {
            "custom_id": f"r{i}",
            "params": {
                **params(),
                "output_config": {"format": {"type": "json_schema", "schema": p.values[0]}},
            },
        }
        for i, p in enumerate(REFUSED)
    ]
    batch = client.messages.batches.create(requests=requests)  # type: ignore[arg-type]
    clock.advance(2)
    by_id = {r.custom_id: r.result for r in client.messages.batches.results(batch.id)}
    for i, p in enumerate(REFUSED):
        got = by_id[f"r{i}"]
        assert ("errored", "invalid_request_error", p.values[1]) == (
            got.type,
            got.error.error.type,  # type: ignore[union-attr]
            got.error.error.message,  # type: ignore[union-attr]
        )


@pytest.mark.parametrize("schema", ACCEPTED)
def test_a_schema_inside_the_subset_is_answered_on_both_routes(make_sim, clock, schema):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    output_config = {"format": {"type": "json_schema", "schema": schema}}
    message = client.messages.create(**params(), output_config=output_config)  # type: ignore[arg-type]
    assert isinstance(orjson.loads(message.content[0].text), dict)  # type: ignore[union-attr]
    batch = client.messages.batches.create(
        requests=[{"custom_id": "a", "params": {**params(), "output_config": output_config}}]  # type: ignore[list-item]
    )
    clock.advance(2)
    (line,) = client.messages.batches.results(batch.id)
    assert "succeeded" == line.result.type


@given(verdict_schemas())
def test_for_any_schema_a_user_may_give_the_schema_sent_is_inside_the_subset(schema):
    """judgecore's request never meets the simulator's 400: the wire schema passes its subset check."""
    assert schema_problem(spec_from_json({"schema": schema}).wire_schema) is None


@given(verdict_schemas().flatmap(lambda s: near_instances(s).map(lambda i: (s, i))))
def test_a_verdict_is_accepted_exactly_when_jsonschema_finds_the_answer_valid_for_the_full_schema(pair):
    """Local validation is against the user's full schema: bounds the API never saw still count."""
    schema, instance = pair
    spec = spec_from_json({"schema": schema})
    valid = validator_for(schema)(schema).is_valid(instance)
    assert valid == isinstance(parse_verdict(orjson.dumps(instance).decode(), spec), Verdict)


def test_an_answer_to_the_schema_as_sent_keeps_to_the_bounds_its_description_states():
    """The simulated judge reads the bounds the transform moved into descriptions."""
    spec = spec_from_json({"schema": README_SCHEMA})
    p = {**params(), "output_config": spec.output_config()}
    for i in range(200):
        p["messages"] = [{"role": "user", "content": f"item {i}"}]
        assert isinstance(parse_verdict(answer(p, seed=i % 3).text, spec), Verdict)


def test_the_out_of_range_rate_is_a_seeded_share_of_numbers_just_outside_the_stated_bounds():
    spec = spec_from_json({"schema": README_SCHEMA})
    scores = []
    for i in range(400):
        p = {**params(f"item {i}"), "output_config": spec.output_config()}
        scores.append(orjson.loads(answer(p, seed=4, out_of_range_rate=0.25).text)["score"])
    outside = [s for s in scores if not 1 <= s <= 5]
    assert {6} == set(outside)
    assert 0.18 < len(outside) / len(scores) < 0.32
