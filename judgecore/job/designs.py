"""Judge designs: how many requests an item asks, and how their answers fold back into one verdict.

A `Design` is what the user asked of each item: a user-turn `template` over the row's fields, `samples`
(K requests alike), `pairwise` (two answers, judged in both orders) and `judges` (a panel of models).
An item expands into one request per `RequestKey` (judge x sample x order), in `Design.request_keys()` order.
Each request is an item of its own to the rest of the pipeline (checkpoint, resume, routing, chunking,
budget, breaker, plan): its id is `request_id(item id, key)` and its custom_id is derived from that
id with the job's key (`judgecore.job.ids`), so a custom_id is a function of (job, item, judge, sample,
order). A one-request design (no flags, or a template alone) keeps the item's id as the request's id,
so its custom_ids, and its output, are exactly those of a job without a design.

The output folds an item's requests back into one line (`judgecore.job.consensus.fold`), final only when all
its requests are.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from judgecore.job.errors import InputError
from judgecore.job.ids import check_unique, covers_content, job_custom_ids
from judgecore.job.items import Items, raw_digest
from judgecore.job.knobs import MAX_SAMPLES  # the one table of knobs holds the range
from judgecore.values import frozen

#: the separator between an item's id and its request's tag: the tag never holds one
TAG_SEP = "#"
#: what the judge may answer for each position of a pairwise prompt (matched without regard to case)
DEFAULT_LABELS: Mapping[str, str] = {"first": "A", "second": "B", "tie": "tie"}
TIE = "tie"
#: the template's names for the two answers of a pairwise item
FIRST, SECOND = "first", "second"


def judge_identity(judge: str) -> str:
    """A judge's identity in custom_ids, the manifest and the output: its name as given, less a served
    model's `@URL` (`served:MODEL@URL` is `served:MODEL`: moving the server changes no custom_id and no
    manifest; `judgecore.wire.providers.Judge.key` says the same)."""
    if judge.startswith("served:") and "@" in judge:
        return judge.rpartition("@")[0]
    return judge


class DesignError(ValueError):
    """A design that cannot run (one line, said before anything is sent)."""


def template_fields(template: str) -> tuple[str, ...]:
    """The row fields a template names, in order of first use; `DesignError` for a template Python's
    format syntax refuses, that names a field by position (`{}`, `{0}`) or looks inside one (`{a.b}`,
    `{a[0]}`: a field is filled in as its text); a conversion (`{response!r}`) is allowed."""
    names: list[str] = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise DesignError(f"not a valid template ({exc}; write {{{{ for a literal brace)") from None
    for _text, name, spec, conv in parsed:
        if name is None:
            continue
        base = name.split(".", 1)[0].split("[", 1)[0]
        if not base or base.isdigit():
            raise DesignError(f"a placeholder must name a field, e.g. {{question}}, not {{{name}}}")
        if base != name:  # `{a.b}`, `{a[0]}`: a field is shown as its text, never looked inside
            raise DesignError(f"a placeholder names a whole field, e.g. {{{base}}}, not {{{name}}}")
        if conv not in (None, "r", "s", "a"):  # Python's own parse leaves this to the fill, row by row
            raise DesignError(f"unknown conversion !{conv} in {{{name}!{conv}}} (Python's are !r, !s and !a)")
        if spec and "{" in spec:
            raise DesignError(f"nested placeholders in a format spec are not supported ({{{name}:{spec}}})")
        if base not in names:
            names.append(base)
    if not names:
        raise DesignError("the template names no field; write e.g. {question} where the row's text goes")
    return tuple(names)


@frozen(order=True)
class RequestKey:
    """Which request of an item: the judge (None: the job's model), the sample (0-based), and for a
    pairwise item the order (0: the first field shown first, 1: the second field shown first)."""

    judge: str | None = None
    sample: int = 0
    order: int | None = None

    def tag(self, design: Design) -> str:
        """The part of the request id after `TAG_SEP` (empty for a one-request design)."""
        parts = []
        if design.judges:
            parts.append(judge_identity(str(self.judge)))
        if design.samples > 1:
            parts.append(f"s{self.sample + 1}")
        if design.pairwise is not None:
            parts.append("ab" if self.order == 0 else "ba")
        return ".".join(parts)


def _samples(value: int) -> int:
    if type(value) is not int or not 1 <= value <= MAX_SAMPLES:
        raise DesignError(f"--samples must be a whole number in 1..{MAX_SAMPLES}, got {value!r}")
    return value


def _pairwise(value: Sequence[str] | None) -> tuple[str, str] | None:
    if value is None:
        return None
    pair = tuple(value)
    if len(pair) != 2 or not all(isinstance(p, str) and p.strip() for p in pair):
        raise DesignError(f"--pairwise takes two field names, A,B; got {value!r}")
    a, b = (p.strip() for p in pair)
    if a == b:
        raise DesignError(f"--pairwise needs two different fields, got {a!r} twice")
    if TIE in (a.lower(), b.lower()) or "id" in (a, b):
        raise DesignError(f"--pairwise fields may not be named 'id' or 'tie' (got {a!r}, {b!r})")
    return (a, b)


def _judges(value: Sequence[str]) -> tuple[str, ...]:
    judges = tuple(value)
    for j in judges:
        if not isinstance(j, str) or not j.strip() or TAG_SEP in j:
            raise DesignError(f"--judge must be a model id, got {j!r}")
        if any(c.isspace() for c in j):
            raise DesignError(f"--judge {j!r}: a model id has no spaces")
    if len({judge_identity(j) for j in judges}) != len(judges):
        raise DesignError(f"--judge names a model twice ({', '.join(judges)})")
    return judges


@frozen(kw_only=True)
class Design:
    """What each item asks (see the module docstring); the defaults are one request per item."""

    template: str | None = None
    samples: int = attrs.field(default=1, converter=_samples)
    pairwise: tuple[str, str] | None = attrs.field(default=None, converter=_pairwise)
    judges: tuple[str, ...] = attrs.field(default=(), converter=_judges)

    def __attrs_post_init__(self) -> None:
        if self.template is not None:
            names = template_fields(self.template)
            if self.pairwise is not None and not {FIRST, SECOND} <= set(names):
                raise DesignError("with --pairwise, the template names the two answers {first} and {second}")
        elif self.pairwise is not None:
            raise DesignError("--pairwise needs --template FILE naming the two answers {first} and {second}")

    @property
    def fields(self) -> tuple[str, ...]:
        """The row fields the template names (the pairwise names stand for the two fields)."""
        if self.template is None:
            return ()
        names = tuple(
            n for n in template_fields(self.template) if n not in (FIRST, SECOND) or not self.pairwise
        )
        return names + (self.pairwise or ())

    def request_keys(self) -> tuple[RequestKey, ...]:
        """The requests of one item, in the order they are sent, checkpointed and folded."""
        orders: tuple[int | None, ...] = (0, 1) if self.pairwise is not None else (None,)
        return tuple(
            RequestKey(judge=j, sample=s, order=o)
            for j in (self.judges or (None,))
            for s in range(self.samples)
            for o in orders
        )

    @property
    def per_item(self) -> int:
        """Requests per item."""
        return max(1, len(self.judges)) * self.samples * (2 if self.pairwise is not None else 1)

    @property
    def single(self) -> bool:
        """One request per item whose id is the item's (no samples, pairwise or panel)."""
        return self.samples == 1 and self.pairwise is None and not self.judges

    def request_id(self, item_id: str, key: RequestKey) -> str:
        """The id of an item's request (its custom_id is derived from it): the item's id for a
        one-request design, else `<item id>#<tag>`."""
        return item_id if self.single else f"{item_id}{TAG_SEP}{key.tag(self)}"

    def manifest(self, template_digest: str | None) -> dict[str, Any]:
        """The design's part of a job's manifest: only what is set, so a job without flags keeps its
        manifest (and its state dir) exactly."""
        out: dict[str, Any] = {}
        if template_digest is not None:
            out["template_sha256"] = template_digest
        if self.samples > 1:
            out["samples"] = self.samples
        if self.pairwise is not None:
            out["pairwise"] = list(self.pairwise)
        if self.judges:
            out["judges"] = [judge_identity(j) for j in self.judges]
        return out

    def to_json(self) -> dict[str, Any]:
        """What `summary` needs to fold a checkpoint's requests (the template's text is not kept)."""
        return {
            "samples": self.samples,
            "pairwise": list(self.pairwise) if self.pairwise else None,
            "judges": list(self.judges),
        }

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Design:
        p = raw.get("pairwise")
        return cls(
            template="{first}{second}" if p else None,
            samples=int(raw.get("samples", 1)),
            pairwise=tuple(p) if p else None,
            judges=tuple(raw.get("judges") or ()),
        )


# -- rendering rows ----------------------------------------------------------------------------------


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else orjson.dumps(value).decode()


def render(design: Design, line: int, row: Mapping[str, Any], order: int | None) -> str:
    """The user turn of one request: the template filled from `row` (pairwise: `first`/`second` are
    the two fields in `order`); `InputError` naming the line for a missing or null field."""
    assert design.template is not None
    values: dict[str, Any] = {}
    item = row.get("id")
    for name in design.fields:
        who = "--pairwise" if design.pairwise is not None and name in design.pairwise else "the template"
        if name not in row:
            raise InputError(line, f"item {item!r}: no field {name!r}, which {who} names")
        if row[name] is None:
            raise InputError(line, f"item {item!r}: field {name!r} is null, and {who} names it")
        values[name] = row[name]
    if design.pairwise is not None:
        a, b = design.pairwise
        first, second = (a, b) if order == 0 else (b, a)
        values[FIRST], values[SECOND] = values[first], values[second]
    shown = {
        k: v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else _text_of(v)
        for k, v in values.items()
    }
    try:
        text = design.template.format_map(shown)
    except (KeyError, IndexError, AttributeError, TypeError, ValueError) as exc:
        raise InputError(
            line, f"item {item!r}: the template cannot be filled from this row ({exc})"
        ) from None
    if not text.strip():
        raise InputError(line, f"item {item!r}: the template filled from this row is empty")
    return text


def metadata_of(design: Design, row: Mapping[str, Any]) -> dict[str, Any] | None:
    """A templated row's metadata: its fields the template does not name (None when there are none)."""
    used = {"id", *design.fields}
    meta = {k: v for k, v in row.items() if k not in used}
    return meta or None


@frozen
class ExpandedRow:
    """One item's requests: `(request id, messages_json)` in `Design.request_keys()` order, and its metadata."""

    item_id: str
    line: int
    requests: tuple[tuple[str, bytes], ...]
    max_tokens: int | None
    metadata_json: bytes | None


_HEAD = b'[{"role":"user","content":'
_TAIL = b"}]"


def expand_templated(design: Design, line: int, row: Any) -> ExpandedRow:
    """A row under a template: `id` plus any fields, one request per key."""
    if type(row) is not dict:
        raise InputError(line, f"expected a JSON object, got {type(row).__name__}")
    item_id = row.get("id")
    if type(item_id) is not str or not item_id:
        raise InputError(line, "'id' must be a non-empty string")
    rendered: dict[int | None, bytes] = {}
    reqs = []
    for key in design.request_keys():
        if key.order not in rendered:
            rendered[key.order] = _HEAD + orjson.dumps(render(design, line, row, key.order)) + _TAIL
        reqs.append((design.request_id(item_id, key), rendered[key.order]))
    meta = metadata_of(design, row)
    return ExpandedRow(item_id, line, tuple(reqs), None, orjson.dumps(meta) if meta is not None else None)


def expand_item(
    design: Design,
    item_id: str,
    line: int,
    messages_json: bytes,
    max_tokens: int | None,
    metadata_json: bytes | None,
) -> ExpandedRow:
    """A row in the plain input format (no template): the same messages for every key."""
    reqs = tuple((design.request_id(item_id, key), messages_json) for key in design.request_keys())
    return ExpandedRow(item_id, line, reqs, max_tokens, metadata_json)


def design_items(design: Design, rows: Iterable[ExpandedRow], *, job: str | None) -> Items:
    """The job's requests as the `Items` the pipeline runs (one per request, an item's requests
    together in key order), with each request's model for a panel; `DuplicateIdError` for an item
    id given twice (naming both lines) or a custom_id collision."""
    ids: list[str] = []
    lines: list[int] = []
    messages: list[bytes] = []
    max_tokens: list[int | None] = []
    metadata: list[bytes | None] = []
    item_ids: list[str] = []
    item_lines: list[int] = []
    for row in rows:
        item_ids.append(row.item_id)
        item_lines.append(row.line)
        for rid, mj in row.requests:
            ids.append(rid)
            lines.append(row.line)
            messages.append(mj)
            max_tokens.append(row.max_tokens)
            metadata.append(row.metadata_json)
    check_unique(item_ids, item_ids, item_lines)
    contents = b"".join(map(raw_digest, messages, max_tokens)) if covers_content(job) else None
    cids = job_custom_ids(ids, job=job, contents=contents)
    check_unique(ids, cids, lines)
    models = None
    if design.judges:
        per_item = tuple(k.judge for k in design.request_keys())
        models = per_item * len(item_ids)
    return Items(
        tuple(ids),
        tuple(lines),
        tuple(messages),
        tuple(max_tokens),
        tuple(metadata),
        cids,
        job=job,
        models=models,
    )


def item_of_request(design: Design, request_id: str) -> tuple[str, RequestKey] | None:
    """The item id and key of a request id of this design (None: not one of its ids)."""
    if design.single:
        return request_id, design.request_keys()[0]
    item_id, sep, tag = request_id.rpartition(TAG_SEP)
    if not sep:
        return None
    key = _tags(design).get(tag)
    return (item_id, key) if key is not None else None


def _tags(design: Design) -> dict[str, RequestKey]:
    return {k.tag(design): k for k in design.request_keys()}


__all__ = [
    "DEFAULT_LABELS",
    "MAX_SAMPLES",
    "Design",
    "DesignError",
    "ExpandedRow",
    "RequestKey",
    "design_items",
    "expand_item",
    "expand_templated",
    "item_of_request",
    "judge_identity",
    "metadata_of",
    "render",
    "template_fields",
]
