"""Hypothesis strategies shared by the core tests: ids, items, requests, batches, raw results, states."""

from __future__ import annotations

import string
from typing import TYPE_CHECKING

import orjson
from hypothesis import strategies as st

from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.polling import BatchSnapshot, PollPolicy, RequestCounts
from judgecore.decide.resume import JobState
from judgecore.decide.routing import RoutePolicy
from judgecore.job.items import Item
from judgecore.results.outcomes import FailureClass, RawResult, StopDetails, Usage
from judgecore.wire.requests import RequestTemplate

if TYPE_CHECKING:
    from judgecore.job.designs import Design

# --- item ids -------------------------------------------------------------------------------------

_SAFE = string.ascii_letters + string.digits + "_-"

#: ids as eval pipelines write them: "q17-s3", "mmlu/abstract_algebra/0042", "run 3:item#9", uuids.
realistic_item_ids = st.one_of(
    st.builds(
        lambda q, s, sep: f"q{q}{sep}s{s}",
        st.integers(0, 10**6),
        st.integers(0, 99),
        st.sampled_from(["-", "_", ":", "/", ".", " "]),
    ),
    st.builds(
        lambda parts, n: "/".join([*parts, f"{n:04d}"]),
        st.lists(st.text(string.ascii_lowercase + "_", min_size=1, max_size=12), min_size=1, max_size=3),
        st.integers(0, 9999),
    ),
    st.uuids().map(str),
    st.text(_SAFE + ".:/# ", min_size=1, max_size=80),
)

#: any item id the input may carry: non-empty unicode (surrogates excluded: input is UTF-8).
any_item_ids = st.text(min_size=1, max_size=120)

item_ids = st.one_of(realistic_item_ids, any_item_ids)

# --- items and requests ---------------------------------------------------------------------------

_texts = st.text(max_size=60)
_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), _texts)
json_values = st.recursive(
    _json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_texts, inner, max_size=4)),
    max_leaves=12,
)

messages = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": st.text(min_size=1, max_size=200)}
    ),
    min_size=1,
    max_size=4,
)


@st.composite
def items(draw: st.DrawFn, *, item_id: st.SearchStrategy[str] = item_ids, line: int = 1) -> Item:
    """One parsed item with unicode messages, an optional max_tokens and optional metadata."""
    msgs = draw(messages)
    metadata = draw(st.one_of(st.none(), json_values))
    return Item(
        id=draw(item_id),
        line=line,
        messages_json=orjson.dumps(msgs),
        max_tokens=draw(st.one_of(st.none(), st.integers(1, 64_000))),
        metadata_json=None if metadata is None else orjson.dumps(metadata),
    )


@st.composite
def item_lists(draw: st.DrawFn, *, min_size: int = 0, max_size: int = 40) -> tuple[Item, ...]:
    """Items with unique ids (and so unique custom_ids), numbered by line."""
    ids = draw(st.lists(realistic_item_ids, min_size=min_size, max_size=max_size, unique=True))
    return tuple(draw(items(item_id=st.just(i), line=n)) for n, i in enumerate(ids, start=1))


templates = st.builds(
    RequestTemplate.build,
    model=st.sampled_from(["claude-sonnet-4-6", "claude-haiku-4-5", "claude-opus-4-8", "modèle-β"]),
    max_tokens=st.integers(1, 64_000),
    rubric=st.one_of(st.none(), st.text(max_size=300)),
    path=st.sampled_from(["sync", "batch"]),
)

# --- policies -------------------------------------------------------------------------------------

route_policies = st.builds(
    RoutePolicy,
    base_threshold=st.integers(1, 10_000),
    reference_otpm=st.integers(1, 2_000_000),
    assumed_otpm=st.integers(1, 2_000_000),
)
otpms = st.integers(1, 100_000_000)

# Any finite float a user could give: fractions of a second up to a week.
poll_policies = st.builds(
    PollPolicy,
    interval=st.floats(min_value=1e-3, max_value=7 * 86_400, allow_nan=False, allow_infinity=False),
    grace=st.floats(min_value=0.0, max_value=7 * 86_400, allow_nan=False, allow_infinity=False),
)
backoff_policies = st.builds(
    lambda base, extra: BackoffPolicy(base=base, cap=base + extra),
    st.floats(min_value=1e-3, max_value=100.0),
    st.floats(min_value=0.0, max_value=3_600.0),
)
#: uniform draws in [0, 1), edges included.
unit_draws = st.one_of(
    st.floats(min_value=0.0, max_value=1.0, exclude_max=True),
    st.just(0.0),
    st.just(0.9999999999999999),
)

# --- batches --------------------------------------------------------------------------------------

epoch_times = st.floats(min_value=0.0, max_value=4e9, allow_nan=False, allow_infinity=False)

request_counts = st.builds(
    RequestCounts,
    processing=st.integers(0, 100_000),
    succeeded=st.integers(0, 100_000),
    errored=st.integers(0, 100_000),
    canceled=st.integers(0, 100_000),
    expired=st.integers(0, 100_000),
)


@st.composite
def batch_snapshots(draw: st.DrawFn, *, status: st.SearchStrategy[str] | None = None) -> BatchSnapshot:
    """A batch as the API reports it; `expires_at` may already be in the past."""
    created = draw(epoch_times)
    return BatchSnapshot(
        id=draw(st.from_regex(r"msgbatch_[A-Za-z0-9]{4,24}", fullmatch=True)),
        status=draw(st.sampled_from(["in_progress", "canceling", "ended"]) if status is None else status),
        created_at=created,
        expires_at=created + draw(st.floats(min_value=0.0, max_value=2 * 86_400)),
        counts=draw(request_counts),
    )


# --- raw results ----------------------------------------------------------------------------------

usages = st.builds(
    Usage,
    input_tokens=st.integers(0, 10**6),
    output_tokens=st.integers(0, 10**5),
    cache_creation_input_tokens=st.integers(0, 10**5),
    cache_read_input_tokens=st.integers(0, 10**5),
)
retry_afters = st.one_of(st.none(), st.floats(min_value=0.0, max_value=7_200.0))

succeeded_results = st.builds(
    RawResult,
    kind=st.just("succeeded"),
    text=st.one_of(st.none(), st.text(max_size=50)),
    stop_reason=st.sampled_from(["end_turn", "stop_sequence", "max_tokens", "tool_use", "refusal", None]),
    model=st.just("claude-sonnet-4-6"),
    usage=st.one_of(st.none(), usages),
    stop_details=st.one_of(
        st.none(),
        st.builds(
            StopDetails,
            category=st.one_of(st.none(), st.sampled_from(["cyber", "bio", "general_harms"])),
            explanation=st.one_of(st.none(), st.text(max_size=30)),
        ),
    ),
)
#: error_codes that change nothing about whether a run goes on (a rate, a slow body, one unknown)
_RUNNING_CODES = st.one_of(
    st.none(), st.sampled_from(["ramp_limit_exceeded", "request_body_timeout", "brand_new_code"])
)
errored_results = st.builds(
    RawResult,
    kind=st.just("errored"),
    error_type=st.sampled_from(
        ["invalid_request_error", "api_error", "overloaded_error", "timeout_error", "rate_limit_error"]
    ),
    message=st.one_of(st.none(), st.text(max_size=60), st.just("prompt is too long: 210000 tokens")),
    retry_after=retry_afters,
    error_code=_RUNNING_CODES,
)
not_run_results = st.builds(RawResult, kind=st.sampled_from(["canceled", "expired"]))
http_error_results = st.builds(
    RawResult,
    kind=st.just("http_error"),
    status=st.sampled_from([400, 408, 409, 413, 422, 429, 500, 502, 503, 504, 529]),
    error_type=st.one_of(st.none(), st.sampled_from(["invalid_request_error", "api_error"])),
    message=st.one_of(st.none(), st.text(max_size=60)),
    retry_after=retry_afters,
    error_code=_RUNNING_CODES,
)
connection_results = st.builds(
    RawResult, kind=st.just("connection_error"), message=st.sampled_from(["connection reset", "timed out"])
)
fatal_results = st.one_of(
    st.builds(RawResult, kind=st.just("http_error"), status=st.sampled_from([401, 403, 404])),
    st.builds(
        RawResult,
        kind=st.just("errored"),
        error_type=st.sampled_from(["authentication_error", "permission_error", "not_found_error"]),
    ),
    # an account state: the API refused the account (the run stops; the item stays pending)
    st.builds(
        RawResult,
        kind=st.sampled_from(["http_error", "errored"]),
        status=st.sampled_from([400, 402, 429]),
        error_type=st.sampled_from(["invalid_request_error", "rate_limit_error", "billing_error"]),
        error_code=st.sampled_from(
            [
                "organization_on_hold",
                "enforced_spend_limit_reached",
                "contract_spend_limit_reached",
                "linked_organization_spend_limit_reached",
                "linked_organization_billing_unavailable",
            ]
        ),
        message=st.one_of(st.none(), st.text(max_size=40)),
    ),
)

#: every answer a request can get except the ones that stop the run.
non_fatal_results = st.one_of(
    succeeded_results, errored_results, not_run_results, http_error_results, connection_results
)
raw_results = st.one_of(non_fatal_results, fatal_results)

failure_classes = st.one_of(st.none(), st.sampled_from(list(FailureClass)))

# --- resume state ---------------------------------------------------------------------------------


@st.composite
def jobs_and_states(draw: st.DrawFn, *, max_ids: int = 60) -> tuple[tuple[str, ...], JobState, int]:
    """A job's custom_ids (input order), a checkpoint state about them (plus strays), and max_attempts."""
    ids = tuple(draw(st.lists(st.from_regex(r"[a-z0-9]{1,6}", fullmatch=True), max_size=max_ids)))
    strays = draw(st.lists(st.from_regex(r"stray[0-9]{1,3}", fullmatch=True), max_size=5))
    pool = sorted({*ids, *strays})
    if pool:
        final = draw(st.frozensets(st.sampled_from(pool)))
        in_flight = draw(st.frozensets(st.sampled_from(pool)))
        attempts = draw(st.dictionaries(st.sampled_from(pool), st.integers(0, 6)))
    else:
        final, in_flight, attempts = frozenset(), frozenset(), {}
    max_attempts = draw(st.integers(1, 5))
    return ids, JobState(final=final, in_flight=in_flight, attempts=attempts), max_attempts


# --- verdict schemas (structured outputs) -----------------------------------------------------------

_names = st.text(string.ascii_lowercase + "_", min_size=1, max_size=8)
_descriptions = st.one_of(st.none(), st.sampled_from(["How good it is.", "Why.", "a {brace} b", ""]))
_formats = st.sampled_from(["date", "email", "uuid", "uri", "color", "hex"])


def _with_description(schema: dict, description: str | None, title: str | None = None) -> dict:
    if description is not None:
        schema["description"] = description
    if title is not None:
        schema["title"] = title
    return schema


@st.composite
def _numeric_schemas(draw: st.DrawFn) -> dict:
    kind = draw(st.sampled_from(["integer", "number"]))
    schema: dict = {"type": kind}
    lo = draw(st.one_of(st.none(), st.integers(-5, 5)))
    if lo is not None:
        schema[draw(st.sampled_from(["minimum", "exclusiveMinimum"]))] = lo
    hi = draw(st.one_of(st.none(), st.integers(6, 12)))
    if hi is not None:
        schema[draw(st.sampled_from(["maximum", "exclusiveMaximum"]))] = hi
    if draw(st.booleans()) and kind == "integer":
        schema["multipleOf"] = draw(st.sampled_from([1, 2]))
    return _with_description(schema, draw(_descriptions))


@st.composite
def _string_schemas(draw: st.DrawFn) -> dict:
    schema: dict = {"type": "string"}
    if draw(st.booleans()):
        schema["minLength"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        schema["maxLength"] = draw(st.integers(3, 12))
    if draw(st.integers(0, 4)) == 0:
        schema["format"] = draw(_formats)
    if draw(st.integers(0, 4)) == 0:
        schema["pattern"] = "^[a-z ]*$"
    return _with_description(schema, draw(_descriptions))


_enum_schemas = st.builds(
    lambda values, typed, d: _with_description({"enum": values, **({"type": "string"} if typed else {})}, d),
    st.lists(st.sampled_from(["good", "bad", "ok", "PASS", "FAIL"]), min_size=1, max_size=4, unique=True),
    st.booleans(),
    _descriptions,
)
_leaf_schemas = st.one_of(
    _numeric_schemas(),
    _string_schemas(),
    _enum_schemas,
    st.builds(lambda d: _with_description({"type": "boolean"}, d), _descriptions),
    st.builds(lambda v: {"const": v}, st.sampled_from(["x", 1, True])),
)


@st.composite
def _object_schemas(draw: st.DrawFn, children: st.SearchStrategy[dict]) -> dict:
    props = draw(st.dictionaries(_names, children, min_size=1, max_size=4))
    schema: dict = {"type": "object", "properties": props}
    required = draw(st.lists(st.sampled_from(sorted(props)), unique=True))
    if required:
        schema["required"] = required
    extra = draw(st.sampled_from(["absent", True, False, "schema"]))
    if extra != "absent":
        schema["additionalProperties"] = {"type": "string"} if extra == "schema" else extra
    if draw(st.integers(0, 5)) == 0:
        schema["minProperties"] = 1
    return _with_description(schema, draw(_descriptions), draw(st.one_of(st.none(), _names)))


@st.composite
def _array_schemas(draw: st.DrawFn, children: st.SearchStrategy[dict]) -> dict:
    schema: dict = {"type": "array", "items": draw(children)}
    if draw(st.booleans()):
        schema["minItems"] = draw(st.integers(0, 3))
    if draw(st.booleans()):
        schema["maxItems"] = draw(st.integers(3, 5))
    if draw(st.integers(0, 4)) == 0:
        schema["uniqueItems"] = False
    return _with_description(schema, draw(_descriptions))


def _nested(children: st.SearchStrategy[dict]) -> st.SearchStrategy[dict]:
    return st.one_of(
        _object_schemas(children),
        _array_schemas(children),
        st.builds(lambda vs: {"anyOf": vs}, st.lists(children, min_size=1, max_size=3)),
    )


property_schemas = st.recursive(_leaf_schemas, _nested, max_leaves=8)

_score_schemas = st.one_of(_numeric_schemas(), _enum_schemas, st.just({"type": "boolean"}))


@st.composite
def verdict_schemas(draw: st.DrawFn) -> dict:
    """A verdict schema a user may write: an object whose `score` (required) is a number, a label or a
    boolean, beside fields of any kind (bounds, lengths, formats, nesting, `anyOf`, a `$ref` to
    `$defs`), objects open, closed or unsaid; every node of a kind the SDK's transform takes."""
    props = {"score": draw(_score_schemas)}
    props.update(draw(st.dictionaries(_names.filter(lambda n: n != "score"), property_schemas, max_size=4)))
    schema: dict = {"type": "object", "properties": props}
    others = sorted(set(props) - {"score"})
    schema["required"] = [
        "score",
        *draw(st.lists(st.sampled_from(others), unique=True) if others else st.just([])),
    ]
    if draw(st.booleans()):
        schema["additionalProperties"] = draw(st.sampled_from([True, False]))
    if draw(st.integers(0, 3)) == 0:
        schema["$defs"] = {"reason": draw(_string_schemas())}
        schema["properties"]["because"] = {"$ref": "#/$defs/reason"}
    return _with_description(schema, draw(_descriptions))


def _near_value(draw: st.DrawFn, schema: dict, defs: dict, depth: int = 0) -> object:
    """A value shaped by `schema`, often valid, sometimes just outside it (a bound, a length, a type)."""
    if draw(st.integers(0, 12)) == 0 or depth > 6:
        return draw(st.sampled_from([None, "x", 3, 7.5, [], {}]))
    if "$ref" in schema:
        return _near_value(draw, defs[schema["$ref"].rsplit("/", 1)[1]], defs, depth + 1)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return draw(st.sampled_from([*schema["enum"], "other"]))
    if "anyOf" in schema:
        return _near_value(draw, draw(st.sampled_from(schema["anyOf"])), defs, depth + 1)
    kind = schema.get("type")
    if kind in ("integer", "number"):
        n = draw(st.integers(-8, 15))
        return n + 0.5 if kind == "number" and draw(st.booleans()) else n
    if kind == "boolean":
        return draw(st.booleans())
    if kind == "string":
        return draw(
            st.sampled_from(["", "ab", "a b c", "good", "2026-12-01", "someone@example.com", "x" * 14])
        )
    if kind == "array":
        n = draw(st.integers(0, 6))
        return [_near_value(draw, schema.get("items", {}), defs, depth + 1) for _ in range(n)]
    if kind == "object":
        out = {}
        for key, sub in schema.get("properties", {}).items():
            if draw(st.integers(0, 8)) > 0:
                out[key] = _near_value(draw, sub, defs, depth + 1)
        if draw(st.integers(0, 8)) == 0:
            out["extra"] = "x"
        return out
    return draw(st.sampled_from([None, "x", 1]))


@st.composite
def near_instances(draw: st.DrawFn, schema: dict) -> object:
    """An answer a judge may give for `schema`: valid, or near it (out of bounds, missing, extra)."""
    return _near_value(draw, schema, schema.get("$defs", {}))


# --- judge designs --------------------------------------------------------------------------------

_judge_ids = st.sampled_from(["claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-6", "claude-opus-4-8"])


@st.composite
def designs(draw: st.DrawFn, *, max_samples: int = 4) -> Design:
    """Any judge design: K samples, pairwise or not, a panel of 0 to 3 judges (with a template when
    pairwise, which needs one)."""
    from judgecore.job.designs import Design

    pairwise = draw(st.booleans())
    judges = draw(st.lists(_judge_ids, max_size=3, unique=True))
    return Design(
        template="Q: {question}\nA: {first}\nB: {second}" if pairwise else None,
        samples=draw(st.integers(1, max_samples)),
        pairwise=("a", "b") if pairwise else None,
        judges=tuple(judges),
    )
