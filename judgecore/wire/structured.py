"""Structured outputs: the JSON Schema a request carries, made from the user's schema.

Theory of operation. The API takes only a subset of JSON Schema in `output_config.format.schema`: every
object closed with `"additionalProperties": false`; no numeric bounds, string lengths, most array bounds;
`$ref` only to the schema's own `$defs`, never recursive. A request outside it is a 400. The SDK ships
the transform that makes a schema fit (`anthropic.transform_schema`): it closes every object and moves
each keyword it does not keep into the node's `description` (`{minimum: 1, maximum: 5}`), so the model
still reads it. `wire_schema` is that transform, rewritten here because the core may not import the
SDK; `tests/core/test_structured.py` proves the two equal, byte for byte, on generated schemas and fails
the day the installed SDK's transform changes.

The bounds the wire schema no longer says are the user's all the same: each answer is validated
against the user's **full** schema (`judgecore.results.verdicts.parse_verdict`), so a score of 7 on a 1-5 scale
is a verdict miss, not a score.

Two kinds of schema cannot be sent at all, and are refused before anything is (`UnsendableSchemaError`):
a schema the SDK's transform itself rejects (a node with no `type`, a `type` list, a boolean schema),
and one whose transform is still outside the subset (a `$ref` that does not point into the schema's
`$defs`, e.g. to `definitions`, which the transform does not keep; `$defs` that refer to themselves).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

#: The `type`s the SDK's transform knows (`SupportedTypes`).
SUPPORTED_TYPES: Final = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})

#: String formats the API enforces (`SupportedStringFormats`); any other moves into the description.
SUPPORTED_STRING_FORMATS: Final = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
)

_DEFS_PREFIX: Final = "#/$defs/"


class UnsendableSchemaError(ValueError):
    """A schema that no request can carry (one line: where in the schema, and what to write instead)."""


def _where(path: tuple[str, ...]) -> str:
    return "the schema" if not path else "schema/" + "/".join(path)


def _is_primitive(value: object) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _transform(node: object, path: tuple[str, ...]) -> dict[str, Any]:
    """One node of `anthropic.transform_schema`, step for step (the order of keys included)."""
    if not isinstance(node, Mapping):
        raise UnsendableSchemaError(
            f"{_where(path)} is {'a boolean schema' if isinstance(node, bool) else 'not an object'}, which "
            f'the SDK\'s transform does not take; write a schema object with a "type"'
        )
    out: dict[str, Any] = {}
    rest = dict(node)

    defs = rest.pop("$defs", None)
    if defs is not None:
        if not isinstance(defs, Mapping):
            raise UnsendableSchemaError(f'{_where(path)}: "$defs" must be an object of schemas')
        out["$defs"] = {name: _transform(sub, (*path, "$defs", str(name))) for name, sub in defs.items()}

    ref = rest.pop("$ref", None)
    if ref is not None:
        out["$ref"] = ref
        return out

    kind = rest.pop("type", None)
    any_of = rest.pop("anyOf", None)
    one_of = rest.pop("oneOf", None)
    all_of = rest.pop("allOf", None)

    enum = rest.get("enum")
    if isinstance(enum, list) and enum and all(_is_primitive(v) for v in enum):
        out["enum"] = list(rest.pop("enum"))
    if "const" in rest and _is_primitive(rest["const"]):
        out["const"] = rest.pop("const")
    has_literals = "enum" in out or "const" in out
    if has_literals:
        kind = None

    if isinstance(any_of, list):
        out["anyOf"] = [_transform(v, (*path, "anyOf", str(i))) for i, v in enumerate(any_of)]
    elif isinstance(one_of, list):
        out["anyOf"] = [_transform(v, (*path, "oneOf", str(i))) for i, v in enumerate(one_of)]
    elif isinstance(all_of, list):
        out["allOf"] = [_transform(v, (*path, "allOf", str(i))) for i, v in enumerate(all_of)]
    elif not has_literals:
        if kind is None:
            raise UnsendableSchemaError(
                f'{_where(path)} has no "type" (nor "anyOf", "oneOf", "allOf", "const" or a non-empty '
                f'"enum" of strings, numbers, booleans or null), which the SDK\'s transform requires'
            )
        out["type"] = kind

    description = rest.pop("description", None)
    if description is not None:
        out["description"] = description
    title = rest.pop("title", None)
    if title is not None:
        out["title"] = title

    if kind is not None and not (isinstance(kind, str) and kind in SUPPORTED_TYPES):
        if isinstance(kind, list):
            spelled = ", ".join(f'{{"type": "{k}"}}' for k in kind)
            raise UnsendableSchemaError(
                f'{_where(path)}: a "type" list is not taken by the SDK\'s transform; write "anyOf": [{spelled}]'
            )
        raise UnsendableSchemaError(f'{_where(path)}: "type" {kind!r} is not one the API takes')
    if kind == "object":
        props = rest.pop("properties", {})
        out["properties"] = {
            key: _transform(sub, (*path, "properties", str(key))) for key, sub in props.items()
        }
        rest.pop("additionalProperties", None)
        out["additionalProperties"] = False
        required = rest.pop("required", None)
        if required is not None:
            out["required"] = list(required) if isinstance(required, list) else required
    elif kind == "string":
        fmt = rest.pop("format", None)
        if fmt and fmt in SUPPORTED_STRING_FORMATS:
            out["format"] = fmt
        elif fmt:
            rest["format"] = fmt  # kept in the description
    elif kind == "array":
        items = rest.pop("items", None)
        if items is not None:
            out["items"] = _transform(items, (*path, "items"))
        min_items = rest.pop("minItems", None)
        # the SDK's test, precedence included: `a is not None and a == 0 or a == 1`
        if (min_items is not None and min_items == 0) or min_items == 1:
            out["minItems"] = min_items
        elif min_items is not None:
            rest["minItems"] = min_items  # kept in the description

    if rest:
        said = out.get("description")
        out["description"] = (
            (said + "\n\n" if said is not None else "")
            + "{"
            + ", ".join(f"{key}: {value}" for key, value in rest.items())
            + "}"
        )
    return out


def _refs(node: object, found: list[tuple[str, tuple[str, ...]]], path: tuple[str, ...]) -> None:
    """Every `$ref` under `node` with where it sits (the `$defs` of `node` itself are walked apart)."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            if key == "$ref" and isinstance(value, str):
                found.append((value, path))
            elif key in ("description", "title", "enum", "const", "required"):
                continue
            else:
                _refs(value, found, (*path, str(key)))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            _refs(value, found, (*path, str(i)))


def _unsendable_reason(wire: Mapping[str, Any]) -> str | None:
    """Why the transformed schema is still outside the API's subset, or None: every `$ref` must name
    one of the root's `$defs` (`#/$defs/NAME`), and no definition may reach itself."""
    defs = wire.get("$defs") if isinstance(wire.get("$defs"), Mapping) else {}
    assert isinstance(defs, Mapping)
    found: list[tuple[str, tuple[str, ...]]] = []
    _refs(wire, found, ())
    for ref, path in found:
        name = ref[len(_DEFS_PREFIX) :] if ref.startswith(_DEFS_PREFIX) else None
        if name is None or name not in defs:
            hint = (
                ' (the SDK\'s transform keeps "$defs" only: move "definitions" there)'
                if ref.startswith("#/definitions/")
                else ""
            )
            return (
                f'{_where(path)}: "$ref" {ref!r} does not name one of the schema\'s own "$defs", '
                f"the only references the API takes{hint}"
            )
    edges: dict[str, list[str]] = {}
    for name, sub in defs.items():
        inner: list[tuple[str, tuple[str, ...]]] = []
        _refs(sub, inner, ())
        edges[str(name)] = [r[len(_DEFS_PREFIX) :] for r, _ in inner]
    for start in edges:
        trail = _cycle_from(start, edges)
        if trail is not None:
            return (
                f'the schema\'s "$defs" refer to themselves ({" -> ".join(trail)}): the API takes no '
                f"recursive schema"
            )
    return None


def _cycle_from(start: str, edges: Mapping[str, list[str]]) -> list[str] | None:
    """A path of references from `start` back to `start`, or None."""
    stack: list[tuple[str, list[str]]] = [(start, [start])]
    seen: set[str] = set()
    while stack:
        name, trail = stack.pop()
        for nxt in edges.get(name, ()):
            if nxt == start:
                return [*trail, nxt]
            if nxt not in seen:
                seen.add(nxt)
                stack.append((nxt, [*trail, nxt]))
    return None


def wire_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as a request carries it: what `anthropic.transform_schema(schema)` returns, with
    the same keys in the same order. `UnsendableSchemaError` for a schema the transform rejects, or
    whose transform the API would still refuse (see the module docstring)."""
    wire = _transform(schema, ())
    reason = _unsendable_reason(wire)
    if reason is not None:
        raise UnsendableSchemaError(reason)
    return wire
