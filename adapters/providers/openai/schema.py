"""Structured outputs on OpenAI: the user's JSON Schema cut down to OpenAI's strict subset, and back.

Theory of operation. `response_format: {"type": "json_schema", "json_schema": {"name", "schema",
"strict": true}}` takes only a subset of JSON Schema (OpenAI's structured-outputs guide): the root an
object; every object closed (`"additionalProperties": false`) with **every** property required; `anyOf`
but no `oneOf` (read as `anyOf` here), `allOf`, `not`, `if`; per type only some keywords (`STRICT_KEEPS`).
`strict_schema` makes a schema fit as Anthropic's transform (`judgecore.wire.structured.wire_schema`) does:
it closes every object, and moves each keyword the subset does not take into the node's `description`
(`{minLength: 3}`), so the model still reads it. A property the user left optional is made nullable and
listed as required (the subset's own way of saying optional): the model answers `null` for it.

So an answer is read back in two steps: `drop_absent_nulls(answer, schema)` removes the `null`s the
model gave for the user's optional properties (they were absent, not null, in the user's terms), then
the existing verdict code validates it against the user's **full** schema (`judgecore.results.verdicts`): a
bound that only the description says is the user's all the same.

A schema that no request can carry (`judgecore.wire.structured.UnsendableSchemaError`, one line naming where):
a root that is not an object, a boolean schema, an `allOf` of more than one schema.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from judgecore.wire.structured import UnsendableSchemaError

#: The types the strict subset takes.
STRICT_TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})

#: String formats the strict subset enforces; any other moves into the description.
STRICT_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"}
)

#: Keywords kept on a node of each type (besides `type`, `description`, `title`, `enum`, `const`).
STRICT_KEEPS: Final[Mapping[str, frozenset[str]]] = {
    "string": frozenset({"pattern", "format"}),
    "number": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "integer": frozenset({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"}),
    "array": frozenset({"minItems", "maxItems"}),
}

#: What `response_format.json_schema.name` is when the job gives none (`^[a-zA-Z0-9_-]{1,64}$`).
SCHEMA_NAME: Final = "verdict"


def _where(path: tuple[str, ...]) -> str:
    return "the schema" if not path else "schema/" + "/".join(path)


def _types(kind: Any) -> tuple[str, ...]:
    if isinstance(kind, str):
        return (kind,)
    if isinstance(kind, list) and kind and all(isinstance(k, str) for k in kind):
        return tuple(kind)
    return ()


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """`node` also allowing null: a type list where the node has plain types, else an `anyOf`."""
    kinds = _types(node.get("type"))
    if "null" in kinds:
        return node
    if kinds and "enum" not in node and "const" not in node:
        return {**node, "type": [*kinds, "null"]}
    if "anyOf" in node and len(node) == 1:
        variants = node["anyOf"]
        if any(v == {"type": "null"} for v in variants):
            return node
        return {"anyOf": [*variants, {"type": "null"}]}
    return {"anyOf": [node, {"type": "null"}]}


def _node(node: object, path: tuple[str, ...]) -> dict[str, Any]:
    if not isinstance(node, Mapping):
        what = "a boolean schema" if isinstance(node, bool) else "not an object"
        raise UnsendableSchemaError(
            f'{_where(path)} is {what}, which OpenAI\'s strict schemas do not take; write a schema object with a "type"'
        )
    rest = dict(node)
    out: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        defs = rest.pop(key, None)
        if defs is not None:
            if not isinstance(defs, Mapping):
                raise UnsendableSchemaError(f'{_where(path)}: "{key}" must be an object of schemas')
            out[key] = {str(n): _node(sub, (*path, key, str(n))) for n, sub in defs.items()}
    ref = rest.pop("$ref", None)
    if ref is not None:
        out["$ref"] = ref  # the subset takes a `$ref` with nothing beside it
        return out
    all_of = rest.pop("allOf", None)
    if isinstance(all_of, list):
        if len(all_of) != 1:
            raise UnsendableSchemaError(
                f'{_where(path)}: "allOf" of {len(all_of)} schemas is not taken by OpenAI\'s strict schemas; '
                "merge them into one"
            )
        merged = {**(dict(all_of[0]) if isinstance(all_of[0], Mapping) else {}), **rest}
        return {**out, **_node(merged, path)}
    variants = rest.pop("anyOf", None)
    one_of = rest.pop("oneOf", None)
    if variants is None:
        variants = one_of
    elif one_of is not None:
        rest["oneOf"] = one_of  # kept in the description
    if isinstance(variants, list):
        out["anyOf"] = [_node(v, (*path, "anyOf", str(i))) for i, v in enumerate(variants)]
    kind = rest.pop("type", None)
    kinds = _types(kind)
    if kind is not None:
        if not kinds or not set(kinds) <= STRICT_TYPES:
            raise UnsendableSchemaError(f'{_where(path)}: "type" {kind!r} is not one OpenAI takes')
        out["type"] = kind
    for literal in ("enum", "const"):
        if literal in rest:
            out[literal] = rest.pop(literal)
    if kind is None and "anyOf" not in out and "enum" not in out and "const" not in out:
        raise UnsendableSchemaError(
            f'{_where(path)} has no "type" (nor "anyOf", "oneOf", "enum" or "const"), which OpenAI\'s strict schemas require'
        )
    for text in ("description", "title"):
        if isinstance(rest.get(text), str):
            out[text] = rest.pop(text)
    if "object" in kinds:
        props = rest.pop("properties", None)
        props = props if isinstance(props, Mapping) else {}
        required = rest.pop("required", None)
        needed = set(required) if isinstance(required, list) else set()
        out["properties"] = {}
        for key, sub in props.items():
            made = _node(sub, (*path, "properties", str(key)))
            out["properties"][str(key)] = made if key in needed else _nullable(made)
        out["required"] = list(out["properties"])
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
    if "array" in kinds:
        items = rest.pop("items", None)
        if items is not None:
            out["items"] = _node(items, (*path, "items"))
    keeps = frozenset().union(*(STRICT_KEEPS.get(k, frozenset()) for k in kinds))
    for key in sorted(keeps):
        if key in rest and not (key == "format" and rest[key] not in STRICT_FORMATS):
            out[key] = rest.pop(key)
    if rest:
        said = out.get("description")
        words = "{" + ", ".join(f"{k}: {v}" for k, v in rest.items()) + "}"
        out["description"] = f"{said}\n\n{words}" if said else words
    return out


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The user's schema as OpenAI's strict structured outputs take it (see the module docstring)."""
    if not isinstance(schema, Mapping) or "object" not in _types(schema.get("type")):
        raise UnsendableSchemaError(
            'the schema\'s root must be {"type": "object", ...} for OpenAI\'s structured outputs'
        )
    return _node(schema, ())


def response_format(schema: Mapping[str, Any], name: str = SCHEMA_NAME) -> dict[str, Any]:
    """The `response_format` parameter of a request asking for answers in `schema`."""
    return {
        "type": "json_schema",
        "json_schema": {"name": name, "schema": strict_schema(schema), "strict": True},
    }


def drop_absent_nulls(answer: Any, schema: Mapping[str, Any]) -> Any:
    """`answer` less the `null` values it gives for properties the user's `schema` left optional (the
    strict subset made them required and nullable); everything else as it is. Follows `properties`,
    `items` and local `$ref`s of `$defs`."""
    defs = schema.get("$defs") if isinstance(schema.get("$defs"), Mapping) else {}

    def walk(value: Any, node: Any) -> Any:
        if not isinstance(node, Mapping):
            return value
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            node = defs.get(ref[len("#/$defs/") :], {})  # type: ignore[union-attr]
        if isinstance(value, dict) and isinstance(node.get("properties"), Mapping):
            props = node["properties"]
            required = node.get("required") if isinstance(node.get("required"), list) else []
            return {
                k: walk(v, props.get(k))
                for k, v in value.items()
                if not (v is None and k in props and k not in required and not _allows_null(props[k]))
            }
        if isinstance(value, list) and isinstance(node.get("items"), Mapping):
            return [walk(v, node["items"]) for v in value]
        variants = node.get("anyOf", node.get("oneOf"))
        if isinstance(variants, list) and isinstance(value, dict | list):
            for variant in variants:
                if _fits(value, variant, defs):
                    return walk(value, variant)
        return value

    return walk(answer, schema)


def _fits(value: Any, node: Any, defs: Mapping[str, Any]) -> bool:
    """Whether an `anyOf` variant is the one a container value was made by: an object schema naming every
    key of an object, an array schema for a list."""
    if (
        isinstance(node, Mapping)
        and isinstance(node.get("$ref"), str)
        and node["$ref"].startswith("#/$defs/")
    ):
        node = defs.get(node["$ref"][len("#/$defs/") :])
    if not isinstance(node, Mapping):
        return False
    variants = node.get("anyOf", node.get("oneOf"))
    if isinstance(variants, list):  # a nested union: the value fits it when it fits one of its variants
        return any(_fits(value, variant, defs) for variant in variants)
    if isinstance(value, dict):
        props = node.get("properties")
        return isinstance(props, Mapping) and set(value) <= set(props)
    return "array" in _types(node.get("type"))


def _allows_null(node: Any) -> bool:
    """Whether the user's own schema for a property already takes `null` (then a null is theirs)."""
    if not isinstance(node, Mapping):
        return True
    if "null" in _types(node.get("type")):
        return True
    if isinstance(node.get("enum"), list) and None in node["enum"]:
        return True
    return any(_allows_null(v) for v in node.get("anyOf", ()) if isinstance(v, Mapping))


__all__ = ["SCHEMA_NAME", "STRICT_KEEPS", "drop_absent_nulls", "response_format", "strict_schema"]
