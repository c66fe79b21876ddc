"""Verdicts: what a judge's answer concluded, read from its text by a spec the user gives.

Theory of operation. A `VerdictSpec` is one of two kinds:

- `schema`: the requests carry `output_config.format` with this JSON Schema (structured outputs), so the
  answer is a JSON object; it is parsed and validated with `jsonschema`, and the verdict is that object.
  What a request carries is the schema *as sent* (`wire_schema`: the API's subset, made by
  `judgecore.wire.structured.wire_schema` exactly as the SDK's `transform_schema` makes it: objects closed,
  bounds moved into descriptions); each answer is validated against the user's **full** schema, so an
  answer the API let through but the user's bounds refuse (7 on a 1-5 scale) is `Unscored`. The
  schema changes what a request asks, so its digest (of the user's schema, not the one sent) is part
  of the job's manifest.
- `pattern`: a regular expression searched in the answer text (multiline); the **last** match counts
  (judges reason first and conclude last); its named groups are the verdict's fields, and a group whose
  text is a number becomes a number. It changes nothing that is sent, so it may change after a run.

`score` names the field that summaries aggregate (default `"score"`). `parse_verdict(text, spec)` returns a
`Verdict`, or `Unscored(reason)` when the answer holds no verdict the spec accepts. The shell applies it
when the output is built from the checkpoint: the stored outcome stays `succeeded` (final, never resent),
and the output line becomes a `miss` of class `VERDICT_UNPARSED`, text kept.

`jsonschema` takes half a second to import (355 M instructions, as much as a whole dry run at bc825e4),
so it is imported only where a schema is used: the one library deferred by name (bench/deferred_imports.py).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any, Literal

import attrs
import orjson

from judgecore.job.designs import DEFAULT_LABELS
from judgecore.wire.structured import UnsendableSchemaError, wire_schema

#: The `error.class` of a succeeded answer whose verdict cannot be parsed or validated.
VERDICT_UNPARSED = "VERDICT_UNPARSED"

DEFAULT_SCORE_FIELD = "score"

_NUMBER = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER = re.compile(r"[+-]?\d+")


class VerdictSpecError(ValueError):
    """A verdict spec that cannot be used (one line, said before anything is sent)."""


@attrs.frozen
class VerdictSpec:
    """How to read a verdict from an answer: a JSON Schema or a regex, and the field that is the score.

    `source` is the schema as canonical JSON text (sorted keys), or the regex itself.
    """

    kind: Literal["schema", "pattern"]
    source: str
    score: str = DEFAULT_SCORE_FIELD
    #: a pairwise job's words for each position (`first`, `second`, `tie`: `judgecore.job.designs`);
    #: None: the default, A, B and tie
    labels: tuple[tuple[str, str], ...] | None = None

    @property
    def label_map(self) -> dict[str, str]:
        """The words of each position, the defaults where the spec names none."""

        return {**DEFAULT_LABELS, **dict(self.labels or ())}

    @property
    def schema(self) -> dict[str, Any] | None:
        return orjson.loads(self.source) if self.kind == "schema" else None

    @property
    def scale(self) -> tuple[float, float] | None:
        """The score's scale as the schema declares it: the score property's `minimum` and `maximum`, or
        the least and the greatest of a numeric `enum`; None for a pattern, a label, or a scale with
        either end undeclared (the summary then clips no interval)."""
        props = (self.schema or {}).get("properties")
        node = props.get(self.score) if isinstance(props, dict) else None
        if not isinstance(node, dict):
            return None

        def number(v: Any) -> bool:
            return type(v) in (int, float) and math.isfinite(v)

        enum = node.get("enum")
        if isinstance(enum, list) and enum:
            if not all(number(v) for v in enum):
                return None
            lo, hi = min(enum), max(enum)
        else:
            lo, hi = node.get("minimum"), node.get("maximum")
        return (float(lo), float(hi)) if number(lo) and number(hi) and lo < hi else None

    @property
    def schema_digest(self) -> str | None:
        """A digest of the schema (part of the manifest); None for a pattern (not part of it)."""
        if self.kind != "schema":
            return None
        return hashlib.sha256(self.source.encode()).hexdigest()[:32]

    @property
    def wire_schema(self) -> dict[str, Any] | None:
        """The schema as every request carries it (the API's subset of the user's schema); None for a
        pattern. `spec_from_json` has checked that it can be made."""
        if self.kind != "schema":
            return None
        return orjson.loads(_wire_source(self.source))

    def output_config(self) -> dict[str, Any] | None:
        """The `output_config` every request carries for a schema spec (the schema as sent); None for
        a pattern."""
        schema = self.wire_schema
        if schema is None:
            return None
        return {"format": {"type": "json_schema", "schema": schema}}

    def to_json(self) -> dict[str, Any]:
        """The spec as its file would say it (kept in the checkpoint so `summary` can re-read answers)."""
        body: Any = self.schema if self.kind == "schema" else self.source
        out = {self.kind: body, "score": self.score}
        if self.labels is not None:
            out["labels"] = dict(self.labels)
        return out


@functools.lru_cache(maxsize=16)
def _wire_source(source: str) -> bytes:
    """The wire schema of a canonical schema source, serialized in the transform's key order."""
    return orjson.dumps(wire_schema(orjson.loads(source)))


def spec_from_json(raw: bytes | str | Mapping[str, Any], *, sendable: bool = True) -> VerdictSpec:
    """A `VerdictSpec` from a spec file's bytes (or its parsed object); `VerdictSpecError` otherwise,
    including (unless `sendable=False`) for a schema no request can carry (`judgecore.wire.structured`).
    `sendable=False` is for reading answers only: a spec kept by a checkpoint made before the subset
    was sent may hold a schema the transform refuses, and its answers can still be read."""
    if isinstance(raw, Mapping):
        obj: Any = dict(raw)
    else:
        try:
            obj = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise VerdictSpecError(f"not valid JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise VerdictSpecError('expected a JSON object: {"schema": {...}} or {"pattern": "REGEX"}')
    unknown = sorted(set(obj) - {"schema", "pattern", "score", "labels"})
    if unknown:
        raise VerdictSpecError(
            f"unknown key(s) {', '.join(unknown)}; expected schema or pattern, and score (and labels)"
        )
    labels = _labels(obj.get("labels"))
    if ("schema" in obj) == ("pattern" in obj):
        raise VerdictSpecError('give exactly one of "schema" or "pattern"')
    score = obj.get("score", DEFAULT_SCORE_FIELD)
    if not isinstance(score, str) or not score:
        raise VerdictSpecError('"score" must be a non-empty string (the field to aggregate)')
    if "pattern" in obj:
        pattern = obj["pattern"]
        if not isinstance(pattern, str) or not pattern:
            raise VerdictSpecError('"pattern" must be a non-empty string (a regular expression)')
        try:
            groups = re.compile(pattern, re.MULTILINE).groupindex
        except re.error as exc:
            raise VerdictSpecError(f'"pattern" does not compile: {exc}') from None
        if not groups:
            raise VerdictSpecError('"pattern" has no named group, e.g. (?P<score>\\d+)')
        if score not in groups:
            raise VerdictSpecError(
                f'"pattern" has no group named {score!r} (the score field); it has {", ".join(groups)}'
            )
        return VerdictSpec("pattern", pattern, score, labels)
    schema = obj["schema"]
    if not isinstance(schema, dict):
        raise VerdictSpecError('"schema" must be a JSON Schema object')
    if schema.get("type") != "object":
        raise VerdictSpecError('"schema" must describe an object ("type": "object"): the verdict\'s fields')
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise VerdictSpecError(f'"schema" is not a valid JSON Schema: {exc.message}') from None
    props = schema.get("properties")
    if isinstance(props, dict) and props and score not in props:
        raise VerdictSpecError(f'"schema" has no property {score!r} (the score field)')
    spec = VerdictSpec("schema", orjson.dumps(schema, option=orjson.OPT_SORT_KEYS).decode(), score, labels)
    if not sendable:
        return spec
    try:
        _wire_source(spec.source)
    except UnsendableSchemaError as exc:
        raise VerdictSpecError(f'"schema" cannot be sent as a structured output: {exc}') from None
    unanswerable = _required_not_a_property(schema, ())
    if unanswerable is not None:
        raise VerdictSpecError(unanswerable)
    return spec


def _required_not_a_property(node: Any, path: tuple[str, ...]) -> str | None:
    """Why no answer can be valid: an object whose `required` names a key its `properties` lack. Every
    object is sent closed (`"additionalProperties": false`), so the model cannot write that key, and
    every answer, paid for, would be `VERDICT_UNPARSED`. None when there is no such object."""
    if isinstance(node, list):
        for i, sub in enumerate(node):
            if (why := _required_not_a_property(sub, (*path, str(i)))) is not None:
                return why
        return None
    if not isinstance(node, Mapping):
        return None
    props, required = node.get("properties"), node.get("required")
    plain = not any(k in node for k in ("$ref", "anyOf", "oneOf", "allOf"))
    if node.get("type") == "object" and plain and isinstance(required, list):
        have = props if isinstance(props, Mapping) else {}
        lacking = [r for r in required if isinstance(r, str) and r not in have]
        if lacking:
            where = "/".join(("schema", *path, "required"))
            return (
                f'"schema" requires {", ".join(map(repr, lacking))} ({where}), which its "properties" '
                f'lack: every object is sent closed ("additionalProperties": false), so no answer '
                f'could hold it; add it to "properties" or drop it from "required"'
            )
    for key in ("properties", "$defs", "definitions"):
        sub = node.get(key)
        if isinstance(sub, Mapping):
            for name, value in sub.items():
                if (why := _required_not_a_property(value, (*path, key, str(name)))) is not None:
                    return why
    for key in ("items", "anyOf", "oneOf", "allOf"):
        if key in node and (why := _required_not_a_property(node[key], (*path, key))) is not None:
            return why
    return None


def _labels(raw: Any) -> tuple[tuple[str, str], ...] | None:
    """A spec's `"labels"`: the judge's word for `first`, `second` and `tie` (pairwise jobs)."""
    if raw is None:
        return None
    if not isinstance(raw, dict) or not raw or not set(raw) <= {"first", "second", "tie"}:
        raise VerdictSpecError(
            '"labels" maps "first", "second" and "tie" to the judge\'s words, e.g. {"first": "A"}'
        )
    if not all(isinstance(v, str) and v.strip() for v in raw.values()):
        raise VerdictSpecError('"labels" values must be non-empty strings')
    words = [v.strip().lower() for v in raw.values()]
    if len(set(words)) != len(words):
        raise VerdictSpecError('"labels" gives one word to two positions')
    return tuple((k, raw[k]) for k in ("first", "second", "tie") if k in raw)


Scalar = int | float | str | bool


@attrs.frozen
class Verdict:
    """The fields of one verdict, in order, and the score (a number or a label)."""

    fields: tuple[tuple[str, Any], ...]
    score: Scalar

    def as_dict(self) -> dict[str, Any]:
        return dict(self.fields)


@attrs.frozen
class Unscored:
    """An answer that holds no verdict the spec accepts, and why."""

    reason: str


def _number(text: str) -> int | float | str:
    """A group's text as a number when it is one (surrounding spaces aside), else the text itself."""
    s = text.strip()
    if _INTEGER.fullmatch(s):
        return int(s)
    if _NUMBER.fullmatch(s):
        value = float(s)
        if math.isfinite(value):
            return value
    return text


@functools.lru_cache(maxsize=16)
def _pattern(source: str) -> re.Pattern[str]:
    return re.compile(source, re.MULTILINE)


@functools.lru_cache(maxsize=16)
def _validator(source: str) -> Any:
    from jsonschema.validators import validator_for

    schema = orjson.loads(source)
    return validator_for(schema)(schema)


def _score_of(fields: Mapping[str, Any], name: str) -> Scalar | Unscored:
    value = fields.get(name)
    if value is None:
        return Unscored(f"the verdict has no {name!r}")
    if isinstance(value, float) and not math.isfinite(value):
        return Unscored(f"{name!r} is not a finite number")
    if not isinstance(value, int | float | str | bool):
        return Unscored(f"{name!r} is not a number or a label")
    return value


def parse_verdict(text: str | None, spec: VerdictSpec) -> Verdict | Unscored:
    """The verdict in an answer's text, by `spec` (see the module docstring), or `Unscored(reason)`."""
    if text is None or not text.strip():
        return Unscored("the answer has no text")
    if spec.kind == "pattern":
        last = None
        for last in _pattern(spec.source).finditer(text):  # noqa: B007 - the last match counts
            pass
        if last is None:
            return Unscored("no match for the verdict pattern")
        fields = tuple((k, None if v is None else _number(v)) for k, v in last.groupdict().items())
    else:
        try:
            obj = orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            return Unscored(f"not valid JSON ({exc})")
        error = next(iter(_validator(spec.source).iter_errors(obj)), None)
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            return Unscored(f"does not match the schema{f' at {where}' if where else ''}: {error.message}")
        fields = tuple(obj.items())
    score = _score_of(dict(fields), spec.score)
    if isinstance(score, Unscored):
        return score
    return Verdict(fields, score)


def reads_none(spec: VerdictSpec, texts: Iterable[str | None]) -> int | None:
    """How many answers `spec` was tried on when it reads a verdict from none of `texts` (the succeeded
    answers' text); None when it reads at least one, or there is none to read (a spec that matches
    nothing is a warning, not a job's new spec: `judgecore run --verdict`). Stops at the first read."""
    n = 0
    for text in texts:
        n += 1
        if not isinstance(parse_verdict(text, spec), Unscored):
            return None
    return n or None
