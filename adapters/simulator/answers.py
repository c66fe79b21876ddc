"""Deterministic stand-ins for the model: token counts, answers, markers and params validation.

Everything here is a pure function of the request params (and the scenario seed).

- Tokens: `ceil(utf-8 bytes / 4)` per content block (text blocks count their text; other blocks and tool
  definitions count their canonical JSON without `cache_control`), plus 3 per message of framing.
- Answer: `"Score: N\\nRationale: ..."` with N in 1..10 and the rationale length both taken from a digest
  of (model, system, messages); output tokens = ceil(bytes / 4), never over `max_tokens`.
- Markers in the text of the last user message force an outcome, e.g. `[[sim:max_tokens]]`;
  `[[sim:NAME*]]` applies on every attempt where the plain form applies to the first attempt only.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

import attrs
import orjson

from judgecore.values import frozen

from .rubric_format import judge_format
from .subset import output_config_problem
from .verdict_lines import answer_lines, format_lines
from .wire import unit_float

#: Marker name -> batch outcome name (see scenario.BATCH_OUTCOMES).
MARKERS: Final = {
    "max_tokens": "max_tokens",
    "invalid": "invalid_request",
    "context": "context_overflow",
    "api_error": "api_error",
    "overloaded": "overloaded_error",
    "rate_limit": "rate_limit_error",
    "canceled": "canceled",
    "expired": "expired",
    "refusal": "refusal",
}
#: Outcomes that are a property of the request itself: they apply on every attempt.
PERMANENT: Final = frozenset({"max_tokens", "invalid_request", "context_overflow", "refusal"})

_MARKER_RE: Final = re.compile(r"\[\[sim:([a-z_]+)(\*?)\]\]")
CONTEXT_WINDOW: Final = 200_000

_WORDS: Final = [
    "the",
    "answer",
    "addresses",
    "the",
    "question",
    "directly",
    "and",
    "cites",
    "the",
    "key",
    "facts",
    "with",
    "adequate",
    "precision",
    "but",
    "omits",
    "one",
    "step",
    "of",
    "the",
    "reasoning",
    "that",
    "a",
    "careful",
    "grader",
    "would",
    "expect",
    "to",
    "see",
    "stated",
    "plainly",
    "while",
    "the",
    "tone",
    "stays",
    "clear",
    "concise",
    "and",
    "appropriate",
    "for",
    "the",
    "intended",
    "audience",
    "overall",
]


def tokens_of_text(text: str) -> int:
    return math.ceil(len(text.encode()) / 4)


def _strip_cache_control(block: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "cache_control"}


def block_tokens(block: object) -> int:
    if isinstance(block, str):
        return tokens_of_text(block)
    if isinstance(block, Mapping):
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            return tokens_of_text(block["text"])
        data = orjson.dumps(_strip_cache_control(block), option=orjson.OPT_SORT_KEYS)
        return math.ceil(len(data) / 4)
    return math.ceil(len(orjson.dumps(block)) / 4)


@frozen
class Block:
    """One cacheable unit of the prompt prefix, in tools -> system -> messages order."""

    key: bytes  # canonical bytes of the block without cache_control, tagged with where it sits
    tokens: int
    ttl: float | None  # seconds if this block carries cache_control, else None


def _ttl_of(block: object) -> float | None:
    if not isinstance(block, Mapping):
        return None
    cc = block.get("cache_control")
    if not isinstance(cc, Mapping):
        return None
    return 3600.0 if cc.get("ttl") == "1h" else 300.0


def prompt_blocks(params: Mapping[str, Any]) -> tuple[tuple[Block, ...], int]:
    """The prompt as ordered blocks, plus the framing tokens that sit outside any block."""
    blocks: list[Block] = []

    def add(where: str, block: object) -> None:
        canon = _strip_cache_control(block) if isinstance(block, Mapping) else block
        key = where.encode() + b"\x00" + orjson.dumps(canon, option=orjson.OPT_SORT_KEYS)
        blocks.append(Block(key, block_tokens(block), _ttl_of(block)))

    for tool in params.get("tools") or ():
        add("tool", tool)
    system = params.get("system")
    if isinstance(system, str):
        if system:
            add("system", system)
    elif isinstance(system, Sequence):
        for block in system:
            add("system", block)
    messages = params.get("messages") or ()
    for message in messages:
        if not isinstance(message, Mapping):
            continue
        role = str(message.get("role"))
        content = message.get("content")
        if isinstance(content, str):
            add(role, content)
        elif isinstance(content, Sequence):
            for block in content:
                add(role, block)
    top = params.get("cache_control")
    if blocks and isinstance(top, Mapping) and blocks[-1].ttl is None:
        last = blocks[-1]
        blocks[-1] = Block(last.key, last.tokens, 3600.0 if top.get("ttl") == "1h" else 300.0)
    return tuple(blocks), 3 * len(messages)


def count_input_tokens(params: Mapping[str, Any]) -> int:
    blocks, framing = prompt_blocks(params)
    return sum(b.tokens for b in blocks) + framing


def last_user_text(params: Mapping[str, Any]) -> str:
    for message in reversed(params.get("messages") or ()):
        if isinstance(message, Mapping) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            if isinstance(content, Sequence):
                return "\n".join(
                    str(b.get("text", ""))
                    for b in content
                    if isinstance(b, Mapping) and b.get("type") == "text"
                )
            return ""
    return ""


def forced_outcome(params: Mapping[str, Any], attempt: int) -> str | None:
    """The outcome a marker forces on this attempt (1-based), or None."""
    for name, star in _MARKER_RE.findall(last_user_text(params)):
        outcome = MARKERS.get(name)
        if outcome is None:
            continue
        if outcome in PERMANENT or star or attempt == 1:
            return outcome
    return None


def _without_cache_control(value: Any) -> Any:
    """`value` with every `cache_control` marker removed: a caching hint is not part of the question."""
    if isinstance(value, Mapping):
        return {k: _without_cache_control(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(v) for v in value]
    return value


def content_digest(params: Mapping[str, Any]) -> str:
    """Hex digest of what the model is asked: model, tools, system and messages (cache markers aside,
    so the same item gets the same answer on the sync path's 5-minute TTL and the batch path's 1 hour)."""
    canon = {k: _without_cache_control(params.get(k)) for k in ("model", "tools", "system", "messages")}
    return hashlib.sha256(orjson.dumps(canon, option=orjson.OPT_SORT_KEYS)).hexdigest()


def validate_params(params: object) -> str | None:
    """Why `params` is not a valid Messages request, or None. (Model existence is checked apart.)"""
    if not isinstance(params, Mapping):
        return "params: Input should be an object"
    if not isinstance(params.get("model"), str) or not params.get("model"):
        return "model: Field required"
    if "max_tokens" not in params:
        return "max_tokens: Field required"
    max_tokens = params["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        return "max_tokens: Input should be a valid integer"
    if max_tokens < 1:
        return "max_tokens: Input should be greater than or equal to 1"
    messages = params.get("messages")
    if not isinstance(messages, list):
        return "messages: Field required"
    if not messages:
        return "messages: at least one message is required"
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
            return f"messages.{i}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        if not isinstance(content, str | list):
            return f"messages.{i}.content: Input should be a valid string or list"
        if isinstance(content, str) and not content:
            return f"messages.{i}: all messages must have non-empty content"
    if messages[0].get("role") != "user":
        return 'messages: first message must use the "user" role'
    if params.get("stream"):
        return "stream: streaming is not supported by the simulator"
    if "output_config" in params and (problem := output_config_problem(params["output_config"])):
        return problem
    return _thinking_shape_problem(params.get("thinking", None), max_tokens, "thinking" in params)


THINKING_TYPES: Final = ("adaptive", "enabled", "disabled", "between_tools")


def _thinking_shape_problem(thinking: object, max_tokens: int, given: bool) -> str | None:
    """Why a `thinking` parameter is malformed, whatever the model (the SDK's `ThinkingConfigParam`:
    `budget_tokens` of an `enabled` one is at least 1,024 and below `max_tokens`), or None."""
    if not given:
        return None
    if not isinstance(thinking, Mapping) or thinking.get("type") not in THINKING_TYPES:
        return "thinking.type: Input should be 'adaptive', 'enabled', 'disabled' or 'between_tools'"
    if thinking["type"] != "enabled":
        return None
    budget = thinking.get("budget_tokens")
    if isinstance(budget, bool) or not isinstance(budget, int):
        return "thinking.enabled.budget_tokens: Field required"
    if budget < 1024:
        return "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
    if budget >= max_tokens:
        return "`max_tokens` must be greater than `thinking.budget_tokens`"
    return None


def thinking_type_problem(params: Mapping[str, Any], accepts: frozenset[str]) -> str | None:
    """Why the model (which takes `accepts`) refuses the request's `thinking.type`, as the API words it."""
    thinking = params.get("thinking")
    if not isinstance(thinking, Mapping) or thinking.get("type") in accepts:
        return None
    return (
        f'"thinking.type.{thinking.get("type")}" is not supported for this model. Use '
        '"thinking.type.adaptive" and "output_config.effort" to control thinking behavior.'
    )


def thinking_on(params: Mapping[str, Any], by_default: bool) -> bool:
    """Whether the answer thinks: asked (`adaptive`, `enabled`), or omitted on a model that thinks by
    default."""
    thinking = params.get("thinking")
    if isinstance(thinking, Mapping):
        return thinking.get("type") in ("adaptive", "enabled")
    return by_default


@frozen
class Answer:
    text: str
    output_tokens: int  # thinking tokens included, as the API counts them
    stop_reason: str
    score: int | str
    #: The thinking block's text, None when the answer did not think; its tokens.
    thinking: str | None = None
    thinking_tokens: int = 0


# -- the simulator as a judge ------------------------------------------------------------------------


def system_text(params: Mapping[str, Any]) -> str:
    system = params.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, Sequence):
        return "\n".join(str(b.get("text", "")) for b in system if isinstance(b, Mapping))
    return ""


def _pick(candidates: Sequence[str], weights: Mapping[str, float], n: int, u: float) -> str:
    """One candidate: by `weights` where they name any candidate (drawn with `u`), else `n` mod count."""
    ws = [max(0.0, weights.get(c, 0.0)) for c in candidates]
    total = sum(ws)
    if total <= 0:
        return candidates[n % len(candidates)]
    acc = 0.0
    for c, w in zip(candidates, ws, strict=True):
        acc += w / total
        if u < acc:
            return c
    return candidates[-1]


#: `key: number` pairs of keywords the SDK's transform moved into a description (`{minimum: 1, ...}`).
_SAID: Final = re.compile(
    r"\b(minimum|maximum|exclusiveMinimum|exclusiveMaximum|minLength|maxLength|minItems|maxItems)"
    r":\s*(-?\d+(?:\.\d+)?)"
)


def _said(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The node's keywords as a model reads them: those its description states (where the SDK's
    transform moved them), then those the node carries itself (which win)."""
    said: dict[str, Any] = {}
    description = schema.get("description")
    if isinstance(description, str):
        for key, number in _SAID.findall(description):
            value = float(number)
            said[key] = int(value) if value.is_integer() else value
    return {**said, **schema}


def _instance(schema: Any, name: str, draw: Any, stray: Any, root: Any = None, depth: int = 0) -> Any:
    """A value valid against `schema` (the common keywords, `$ref` into the root's `$defs` resolved),
    honouring the bounds its description states; drawn by `draw(name, candidates)`. Where
    `stray(name)` says so, a number falls just outside the bounds the description states (the API
    cannot enforce them; a model may miss them)."""
    root = schema if root is None else root
    if not isinstance(schema, Mapping) or depth > 8:
        return None
    if isinstance(schema.get("$ref"), str):
        for key in ("$defs", "definitions"):
            prefix = f"#/{key}/"
            defs = root.get(key) if isinstance(root, Mapping) else None
            if schema["$ref"].startswith(prefix) and isinstance(defs, Mapping):
                target = defs.get(schema["$ref"][len(prefix) :])
                return _instance(target, name, draw, stray, root, depth + 1)
        return None
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        spelled = [v if isinstance(v, str) else orjson.dumps(v).decode() for v in schema["enum"]]
        return schema["enum"][spelled.index(draw(name, spelled))]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return _instance(schema[key][0], name, draw, stray, root, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    said = _said(schema)
    if kind == "object" or "properties" in schema:
        props = schema.get("properties") or {}
        return {k: _instance(v, k, draw, stray, root, depth + 1) for k, v in props.items()}
    if kind in ("integer", "number"):
        lo, hi = _bounds(said)
        if stray(name):
            if "maximum" in said or "exclusiveMaximum" in said:
                return hi + 1
            if "minimum" in said or "exclusiveMinimum" in said:
                return lo - 1
        return int(draw(name, [str(v) for v in range(lo, hi + 1)]))
    if kind == "boolean":
        return draw(name, ["true", "false"]) == "true"
    if kind == "array":
        n = max(1, int(said.get("minItems", 1)))
        return [
            _instance(schema.get("items", {}), f"{name}.{i}", draw, stray, root, depth + 1) for i in range(n)
        ]
    if kind == "null":
        return None
    text = " ".join(_WORDS[(i + len(name)) % len(_WORDS)] for i in range(6))
    if isinstance(said.get("minLength"), int) and len(text) < said["minLength"]:
        text = (text + " ") * (said["minLength"] // len(text) + 1)
    return text[: said["maxLength"]] if isinstance(said.get("maxLength"), int) else text


def _bounds(schema: Mapping[str, Any]) -> tuple[int, int]:
    """The whole numbers a numeric schema allows (1..10 when it does not say; at most 1,001 of them)."""
    lo = schema.get("minimum")
    if lo is None and isinstance(schema.get("exclusiveMinimum"), int | float):
        lo = math.floor(schema["exclusiveMinimum"]) + 1
    lo = 1 if lo is None else math.ceil(lo)
    hi = schema.get("maximum")
    if hi is None and isinstance(schema.get("exclusiveMaximum"), int | float):
        hi = math.ceil(schema["exclusiveMaximum"]) - 1
    hi = lo + 9 if hi is None else math.floor(hi)
    return lo, max(lo, min(hi, lo + 1000))


def _schema_of(params: Mapping[str, Any]) -> Any:
    oc = params.get("output_config")
    fmt = oc.get("format") if isinstance(oc, Mapping) else None
    if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema":
        return fmt.get("schema")
    return None


#: What a judge says when it gives no verdict at all (the `unparseable_rate` knob).
NO_VERDICT: Final = "I cannot assign a grade to this answer: the candidate response is ambiguous."


def answer(
    params: Mapping[str, Any],
    *,
    seed: int,
    truncate: bool = False,
    score_weights: Mapping[str, float] | None = None,
    unparseable_rate: float = 0.0,
    thinks: bool = False,
    out_of_range_rate: float = 0.0,
) -> Answer:
    """The deterministic reply to `params`; `truncate` forces a `max_tokens` stop. With `thinks`, the
    answer thinks first: 600 to 2,000 tokens (at most an `enabled` budget), out of `max_tokens`, so a
    small `max_tokens` ends the answer as a `max_tokens` stop with little or no text.

    Like a judge: with `output_config.format` a JSON object valid against its schema; otherwise the
    verdict line the rubric asks for (`judge_format`), then a rationale. Scores are drawn per request
    content (seeded) from `score_weights` (value -> weight; uniform where they name no candidate), and a
    share `unparseable_rate` of requests gets an answer with no verdict in it. A schema's numbers keep
    to the bounds its description states (where the SDK's transform moved them), but for a seeded
    share `out_of_range_rate` of them, which fall just outside.
    """
    digest = content_digest(params)
    n = int(digest[:16], 16) ^ seed
    weights = dict(score_weights or {})
    words = 8 + (n >> 8) % 33
    rationale = " ".join(_WORDS[(i + (n >> 16)) % len(_WORDS)] for i in range(words))
    schema = _schema_of(params)
    score: int | str
    if unparseable_rate > 0 and unit_float(seed, "unparseable", digest) < unparseable_rate:
        text, score = NO_VERDICT, ""
    elif schema is not None:
        drawn: dict[str, str] = {}

        def draw(name: str, candidates: Sequence[str]) -> str:
            drawn[name] = _pick(
                candidates, weights, n >> (len(drawn) % 32), unit_float(seed, "v", digest, name)
            )
            return drawn[name]

        def stray(name: str) -> bool:
            if out_of_range_rate > 0 and unit_float(seed, "out_of_range", digest, name) < out_of_range_rate:
                drawn.setdefault(name, "out of range")
                return True
            return False

        value = _instance(schema, "", draw, stray)
        text = orjson.dumps(value).decode()
        score = next(iter(drawn.values()), "")
    elif (lines := format_lines(system_text(params))) is not None:  # the rubric's answer lines, each

        def pick(candidates: Sequence[str], field: str) -> str:
            first = field == next(x.field for x in lines if x.kind != "text")
            u = unit_float(seed, "score", digest) if first else unit_float(seed, "line", digest, field)
            return _pick(candidates, weights if first else {}, n if first else int(u * 2**32), u)

        text, score = answer_lines(lines, pick=pick, rationale=f"{rationale.capitalize()}.")
    else:
        fmt = judge_format(system_text(params))
        picked = _pick(fmt.candidates(), weights, n, unit_float(seed, "score", digest))
        score = picked if fmt.labels else int(picked)
        text = f"{fmt.field}: {score}\nRationale: {rationale.capitalize()}."
    max_tokens = int(params["max_tokens"])
    thought, spent = _thinking_of(params, n) if thinks else (None, 0)
    if spent >= max_tokens:  # the thinking used up max_tokens: no text at all
        return Answer("", max_tokens, "max_tokens", score, thought, max_tokens)
    reply = _fit(text, max_tokens - spent, truncate, score)
    return attrs.evolve(
        reply, output_tokens=reply.output_tokens + spent, thinking=thought, thinking_tokens=spent
    )


def _fit(text: str, max_tokens: int, truncate: bool, score: int | str) -> Answer:
    """The answer's text within `max_tokens` (a `max_tokens` stop when it does not fit, or forced)."""
    full = tokens_of_text(text)
    if truncate:
        keep = min(max_tokens * 4, max(4, len(text.encode()) // 2))
        return Answer(text.encode()[:keep].decode(errors="ignore"), max_tokens, "max_tokens", score)
    if full > max_tokens:
        cut = text.encode()[: max_tokens * 4].decode(errors="ignore")
        return Answer(cut, max_tokens, "max_tokens", score)
    return Answer(text, full, "end_turn", score)


def _thinking_of(params: Mapping[str, Any], n: int) -> tuple[str, int]:
    """The thinking of an answer (a few words) and the tokens it spent (seeded by the content)."""
    spent = 600 + (n >> 24) % 1401
    thinking = params.get("thinking")
    if isinstance(thinking, Mapping) and thinking.get("type") == "enabled":
        spent = min(spent, int(thinking.get("budget_tokens", spent)))
    return "Weighing the answer against the rubric before giving the verdict.", spent


def context_overflow_message(params: Mapping[str, Any]) -> str:
    n = max(count_input_tokens(params), CONTEXT_WINDOW + 1 + int(content_digest(params)[:4], 16))
    return f"prompt is too long: {n} tokens > {CONTEXT_WINDOW} maximum"
