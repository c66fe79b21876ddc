"""Judge designs: how many requests an item asks, and how their answers fold back into one verdict.

A `Design` is what the user asked of each item: a user-turn `template` over the row's fields, `samples`
(K requests alike), `pairwise` (two answers, judged in both orders) and `judges` (a panel of models).
An item expands into one request per `RequestKey` (judge x sample x order), in `Design.request_keys()` order.
Each request is an item of its own to the rest of the pipeline (checkpoint, resume, routing, chunking,
budget, breaker, plan): its id is `request_id(item id, key)` and its custom_id is derived from that
id with the job's key (`judgecore.ids`), so a custom_id is a function of (job, item, judge, sample,
order). A one-request design (no flags, or a template alone) keeps the item's id as the request's id,
so its custom_ids, and its output, are exactly those of a job without a design.

The output folds an item's requests back into one line (`fold`), final only when all its requests
are. The fold reads each request's answer by its key, never by arrival, so a complete set of answers
gives the same line whatever order it came in.
"""

from __future__ import annotations

import statistics
import string
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs
import orjson

from judgecore.errors import InputError
from judgecore.ids import check_unique, custom_ids_for
from judgecore.items import Items

MAX_SAMPLES = 20
#: the separator between an item's id and its request's tag: the tag never holds one
TAG_SEP = "#"
#: what the judge may answer for each position of a pairwise prompt (matched without regard to case)
DEFAULT_LABELS: Mapping[str, str] = {"first": "A", "second": "B", "tie": "tie"}
TIE = "tie"
#: the template's names for the two answers of a pairwise item
FIRST, SECOND = "first", "second"


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


@attrs.frozen(order=True)
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
            parts.append(str(self.judge))
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
    if len(set(judges)) != len(judges):
        raise DesignError(f"--judge names a model twice ({', '.join(judges)})")
    return judges


@attrs.frozen(kw_only=True)
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
            out["judges"] = list(self.judges)
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
        if name not in row:
            raise InputError(line, f"item {item!r}: no field {name!r}, which the template names")
        if row[name] is None:
            raise InputError(line, f"item {item!r}: field {name!r} is null, and the template names it")
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


@attrs.frozen
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
    cids = custom_ids_for(ids, job=job)
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


# -- folding answers ---------------------------------------------------------------------------------


Scalar = int | float | str | bool


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def consensus(values: Sequence[Any]) -> Any:
    """The median of `values` when all are numbers, else the majority (ties: the first seen); None
    for no values. `values` come in sample (or judge) order, never in arrival order."""
    vs = [v for v in values if v is not None]
    if not vs:
        return None
    if all(_is_number(v) for v in vs):
        m = statistics.median(vs)
        return int(m) if float(m).is_integer() and all(isinstance(v, int) for v in vs) else m
    counts: dict[Any, int] = {}
    for v in vs:
        k = _hashable(v)
        counts[k] = counts.get(k, 0) + 1
    best = max(counts.values())
    return next(v for v in vs if counts[_hashable(v)] == best)


def _hashable(v: Any) -> Any:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS) if isinstance(v, (dict, list)) else v


def position_of(choice: Any, labels: Mapping[str, str]) -> str | None:
    """`first`, `second` or `tie` for the judge's word (matched without regard to case), else None."""
    if choice is None:
        return None
    word = str(choice).strip().lower()
    for position in (FIRST, SECOND, TIE):
        if str(labels.get(position, DEFAULT_LABELS[position])).strip().lower() == word:
            return position
    return None


def pairwise_vote(design: Design, choices: Sequence[Any], labels: Mapping[str, str]) -> dict[str, Any] | None:
    """One judge's pairwise verdict from its two orders' choices (order 0 then 1): orders that agree
    name the winner, orders that disagree are a tie, not consistent (Zheng et al. 2023). None unless
    both orders have a choice the labels map."""
    assert design.pairwise is not None
    a, b = design.pairwise
    orders = []
    for order, choice in enumerate(choices):
        first, second = (a, b) if order == 0 else (b, a)
        pos = position_of(choice, labels)
        if pos is None:
            return None
        orders.append({"first": first, "choice": first if pos == FIRST else second if pos == SECOND else TIE})
    c0, c1 = orders[0]["choice"], orders[1]["choice"]
    consistent = c0 == c1
    return {"winner": c0 if consistent else TIE, "consistent": consistent, "orders": orders}


def merge_pairwise(votes: Sequence[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Several pairwise verdicts (samples or judges, in their order) as one: the majority winner,
    consistent only when every one is, and every order they saw."""
    vs = [v for v in votes if v is not None]
    if not vs:
        return None
    if len(vs) == 1:
        return vs[0]
    return {
        "winner": consensus([v["winner"] for v in vs]),
        "consistent": all(v["consistent"] for v in vs),
        "orders": [o for v in vs for o in v["orders"]],
    }


_USAGE_SUMMED = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _sum_usage(usages: Iterable[Mapping[str, Any] | None]) -> dict[str, Any] | None:
    total: dict[str, Any] = {}
    seen = False
    for u in usages:
        if not u:
            continue
        seen = True
        for k, v in u.items():
            if _is_number(v):
                total[k] = total.get(k, 0) + v
    if not seen:
        return None
    return {k: total.get(k, 0) for k in _USAGE_SUMMED} | {
        k: v for k, v in total.items() if k not in _USAGE_SUMMED
    }


def fold(
    design: Design,
    records: Mapping[RequestKey, Mapping[str, Any]],
    *,
    score: str | None,
    labels: Mapping[str, str] = DEFAULT_LABELS,
) -> dict[str, Any]:
    """One item's output line from its requests' output objects, by key (`records` has every key of
    the design). `score`: the verdict spec's score field (None: no verdicts). The line is `pending`
    while any request is; `id`, `metadata`, `route`, `batch_id` and `text` are the first request's;
    `attempts` and `usage` are summed over the requests."""
    keys = design.request_keys()
    rs = [records[k] for k in keys]
    first = rs[0]
    item_id = str(first["id"]).rsplit(TAG_SEP, 1)[0] if not design.single else first["id"]

    def value(r: Mapping[str, Any]) -> Any:
        v = r.get("verdict")
        if score is None or v is None or r["status"] != "succeeded":
            return None
        return v.get(score)

    # votes: one per (judge, sample), each a verdict value (pairwise: a pairwise verdict)
    judges = design.judges or (None,)
    votes: dict[str | None, list[Any]] = {j: [] for j in judges}
    sample_entries: list[dict[str, Any]] = []
    for j in judges:
        for s in range(design.samples):
            if design.pairwise is not None:
                pair = [records[RequestKey(judge=j, sample=s, order=o)] for o in (0, 1)]
                vote = pairwise_vote(design, [value(r) for r in pair], labels) if score is not None else None
                status = _pair_status([r["status"] for r in pair], vote is not None or score is None)
                entry = {"status": status, "text": [r["text"] for r in pair], "verdict": vote}
            else:
                r = records[RequestKey(judge=j, sample=s)]
                vote = value(r)
                entry = {"status": r["status"], "text": r["text"], "verdict": r.get("verdict")}
            if design.judges:
                entry = {"judge": j, **entry}
            votes[j].append(vote)
            sample_entries.append(entry)

    def combine(vs: Sequence[Any]) -> Any:
        return merge_pairwise(vs) if design.pairwise is not None else consensus(vs)

    per_judge = {j: combine(votes[j]) for j in judges}
    overall = combine([per_judge[j] for j in judges]) if design.judges else per_judge[None]

    def wrap(v: Any) -> Any:
        if v is None or design.pairwise is not None:
            return v
        return {score: v}

    statuses = [r["status"] for r in rs]
    if "pending" in statuses:
        status = "pending"
    elif overall is not None or (score is None and "succeeded" in statuses):
        status = "succeeded"
    else:
        status = next((st for st in statuses if st != "succeeded"), "miss")
    if status == "pending":  # nothing is decided until every request of the item is final
        overall, per_judge = None, dict.fromkeys(judges)
    lead = next((r for r in rs if r["status"] == status), first) if status != "succeeded" else first
    error = None if status == "succeeded" else lead["error"]
    if status == "miss" and error is None:
        error = {
            "class": "VERDICT_UNPARSED",
            "type": "design",
            "message": "no request of the item has a verdict",
        }
    out: dict[str, Any] = {
        "id": item_id,
        "custom_id": first["custom_id"],
        "status": status,
        "route": first["route"],
        "text": first["text"],
        "stop_reason": first["stop_reason"],
        "model": first["model"],
        "usage": _sum_usage(r["usage"] for r in rs),
        "error": error,
        "batch_id": first["batch_id"],
        "attempts": sum(int(r["attempts"] or 0) for r in rs),
        "metadata": first["metadata"],
        "verdict": wrap(overall),
    }
    if design.samples > 1:
        out["samples"] = sample_entries
        all_votes = [v for j in judges for v in votes[j] if v is not None]
        if overall is None or not all_votes:
            out["agreement"] = None
        else:
            target = overall["winner"] if design.pairwise is not None else overall
            got = [v["winner"] if design.pairwise is not None else v for v in all_votes]
            out["agreement"] = sum(1 for v in got if v == target) / len(got)
    if design.judges:
        out["judges"] = {str(j): wrap(per_judge[j]) for j in judges}
    return out


def _pair_status(statuses: Sequence[str], readable: bool) -> str:
    if "pending" in statuses:
        return "pending"
    if readable and all(st == "succeeded" for st in statuses):
        return "succeeded"
    return next((st for st in statuses if st != "succeeded"), "miss")


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
    "consensus",
    "design_items",
    "expand_item",
    "expand_templated",
    "fold",
    "item_of_request",
    "merge_pairwise",
    "metadata_of",
    "pairwise_vote",
    "position_of",
    "render",
    "template_fields",
]
