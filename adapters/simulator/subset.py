"""The structured-outputs subset the API accepts in `output_config.format.schema`, as the API checks it.

Written from the API's documentation ("JSON Schema limitations") and the 400s users report, not from
the client's transform (`judgecore.wire.structured`), so the two can disagree and a test can see it:

- supported: the types object, array, string, integer, number, boolean, null (or a list of them);
  `enum` of strings, numbers, booleans and null; `const`; `anyOf`; `allOf`; `$ref` to the schema's own
  `$defs` (or `definitions`); `default`; `description`; `title`; for objects `properties`, `required`
  and `additionalProperties`, which must be `false`; for arrays `items` and `minItems` 0 or 1; for
  strings `pattern` and the formats date-time, time, date, duration, email, hostname, uri, ipv4, ipv6,
  uuid.
- refused: anything else, in particular `minimum`, `maximum`, `exclusiveMinimum`, `exclusiveMaximum`,
  `multipleOf`, `minLength`, `maxLength`, `maxItems`, `minItems` over 1, `uniqueItems`, `oneOf`, `not`,
  `patternProperties`; an object without `"additionalProperties": false`; a `$ref` that does not
  resolve inside the schema; recursive definitions.

The wording follows the API's where users have quoted it ("For 'integer' type, property 'minimum' is
not supported"; "For 'object' type, 'additionalProperties' must be explicitly set to false"; "For
'array' type, 'minItems' values other than 0 or 1 are not supported"; "Circular reference detected in
schema definitions: a -> a. ..."); the rest is ours and marked so in the code.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

PREFIX: Final = "output_config.format.schema: "

TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})
FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)
_COMMON: Final = frozenset(
    {
        "type",
        "description",
        "title",
        "enum",
        "const",
        "default",
        "anyOf",
        "allOf",
        "$ref",
        "$defs",
        "definitions",
    }
)
#: Keywords each type takes besides the common ones.
_BY_TYPE: Final[Mapping[str, frozenset[str]]] = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "array": frozenset({"items", "minItems"}),
    "string": frozenset({"format", "pattern"}),
    "integer": frozenset(),
    "number": frozenset(),
    "boolean": frozenset(),
    "null": frozenset(),
}


class _Refused(Exception):
    pass


def _types_of(node: Mapping[str, Any]) -> tuple[str, ...]:
    kind = node.get("type")
    if kind is None:
        return ()
    kinds = kind if isinstance(kind, list) else [kind]
    for k in kinds:
        if not isinstance(k, str) or k not in TYPES:
            raise _Refused(f"type {k!r} is not supported")  # our wording
    return tuple(kinds)


def _check(node: object, root: Mapping[str, Any], stack: tuple[str, ...]) -> None:
    if not isinstance(node, Mapping):
        # the API's wording for a schema that is not draft 2020-12 JSON Schema
        raise _Refused("JSON schema is invalid. It must match JSON Schema draft 2020-12")
    kinds = _types_of(node)
    allowed = set(_COMMON)
    for k in kinds:
        allowed |= _BY_TYPE[k]
    unsupported = sorted(set(node) - allowed)
    if unsupported:
        label = f"For '{kinds[0]}' type, " if len(kinds) == 1 else "For this schema, "
        if len(unsupported) == 1:
            raise _Refused(f"{label}property '{unsupported[0]}' is not supported")
        raise _Refused(f"{label}properties {', '.join(unsupported)} are not supported")
    if "object" in kinds:
        extra = node.get("additionalProperties", None)
        if "additionalProperties" not in node:
            raise _Refused("For 'object' type, 'additionalProperties' must be explicitly set to false")
        if extra is not False:
            raise _Refused(
                f"For 'object' type, 'additionalProperties: {_json(extra)}' is not supported. "
                "Please set 'additionalProperties' to false"
            )
        props = node.get("properties", {})
        if not isinstance(props, Mapping):
            raise _Refused("'properties' must be an object")  # our wording
        for sub in props.values():
            _check(sub, root, stack)
    if "array" in kinds:
        if "minItems" in node:
            n = node["minItems"]
            if isinstance(n, bool) or not isinstance(n, int | float) or n not in (0, 1):
                raise _Refused("For 'array' type, 'minItems' values other than 0 or 1 are not supported")
        if "items" in node:
            _check(node["items"], root, stack)
    if "string" in kinds and "format" in node and node["format"] not in FORMATS:
        raise _Refused(f"For 'string' type, format '{node['format']}' is not supported")  # our wording
    if "enum" in node:
        enum = node["enum"]
        if not isinstance(enum, list) or not enum:
            raise _Refused("'enum' must be a non-empty list")  # our wording
        if not all(v is None or isinstance(v, str | int | float | bool) for v in enum):
            raise _Refused("enum values must be strings, numbers, booleans or null")  # our wording
    if "const" in node and not (node["const"] is None or isinstance(node["const"], str | int | float | bool)):
        raise _Refused("const must be a string, number, boolean or null")  # our wording
    for key in ("anyOf", "allOf"):
        if key in node:
            variants = node[key]
            if not isinstance(variants, list) or not variants:
                raise _Refused(f"'{key}' must be a non-empty list")  # our wording
            for sub in variants:
                _check(sub, root, stack)
    for key in ("$defs", "definitions"):
        if key in node:
            defs = node[key]
            if not isinstance(defs, Mapping):
                raise _Refused(f"'{key}' must be an object")  # our wording
            for sub in defs.values():
                _check(sub, root, stack)
    if "$ref" in node:
        _follow(node["$ref"], root, stack)


def _follow(ref: object, root: Mapping[str, Any], stack: tuple[str, ...]) -> None:
    """Resolve a local `$ref` and check what it names; a reference back into `stack` is a cycle."""
    if not isinstance(ref, str):
        raise _Refused("'$ref' must be a string")  # our wording
    name = None
    for key in ("$defs", "definitions"):
        prefix = f"#/{key}/"
        if ref.startswith(prefix):
            defs = root.get(key)
            name = ref[len(prefix) :]
            if not isinstance(defs, Mapping) or name not in defs:
                raise _Refused(f"$ref '{ref}' could not be resolved in the schema")  # our wording
            if name in stack:
                trail = " -> ".join([*stack[stack.index(name) :], name])
                raise _Refused(
                    f"Circular reference detected in schema definitions: {trail}. "
                    "Self-referencing or mutually-referencing definitions are not supported."
                )
            _check(defs[name], root, (*stack, name))
            return
    raise _Refused(f"$ref '{ref}' is not supported: only references to the schema's own definitions are")


def _json(value: object) -> str:
    if value is True:
        return "true"
    if value is None:
        return "null"
    return "a schema" if isinstance(value, Mapping) else str(value)


def schema_problem(schema: object) -> str | None:
    """Why the API refuses `schema` as `output_config.format.schema` (a 400 message), or None."""
    if not isinstance(schema, Mapping):
        return PREFIX + "Input should be an object"
    try:
        _check(schema, schema, ())
    except _Refused as exc:
        return PREFIX + str(exc)
    return None


def output_config_problem(output_config: object) -> str | None:
    """Why the API refuses a request's `output_config`, or None."""
    if not isinstance(output_config, Mapping):
        return "output_config: Input should be an object"
    unknown = sorted(set(output_config) - {"format", "effort"})
    if unknown:
        return f"output_config.{unknown[0]}: Extra inputs are not permitted"
    fmt = output_config.get("format")
    if fmt is None:
        return None
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return "output_config.format.type: Input should be 'json_schema'"
    if "schema" not in fmt:
        return "output_config.format.schema: Field required"
    return schema_problem(fmt["schema"])
