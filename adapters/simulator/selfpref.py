"""Self-preference: a judge that favours answers written by its own model family (the `self_preference`
knob of `Scenario`, on both wires).

`self_preference` maps a model id or a family (`claude`, `gpt`, `qwen`, ...; see
`openai_scenario.family_of`) to a strength P in 0..1. A judge whose model is named, or whose family is,
is biased: when the last user message (the item, with any metadata the prompt shows, such as
`Model: gpt-4o` or `"model": "claude-opus-4-8"`) names the judge's own family as a word prefix, a seeded
share P of those answers (by content) give the best verdict on the rubric's scale instead of the one the
content decides: the top of a numeric scale, or the first of the labels the rubric lists (rubrics list
the best first: `PASS, FAIL`). A structured answer's first scored field moves the same way (its
`maximum` or the first of its `enum`). Answers whose prompt names another family, or none, are left as
they are, so the bias shows as a higher mean for own-family answers than the other judges give them.

A demo: `judgecore simulator --self-preference gpt=0.8` and a panel of a Claude and a GPT judge over
answers whose metadata names their authors: the GPT judge rates GPT-written answers higher.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import attrs
import orjson

from . import answers
from .openai_scenario import family_of
from .rubric_format import judge_format
from .verdict_lines import format_lines
from .wire import unit_float


def strength(preference: Mapping[str, float], model: str) -> float:
    """How strongly `model` prefers its own family (0 when the knob names neither it nor its family)."""
    return max(preference.get(model, 0.0), preference.get(family_of(model), 0.0))


def names_family(text: str, family: str) -> bool:
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(family)}", text, re.I) is not None


def bias(
    reply: answers.Answer, params: Mapping[str, Any], *, seed: int, preference: Mapping[str, float]
) -> answers.Answer:
    """`reply`, or (for a biased judge and an answer by its own family, a seeded share) the same answer
    with the best verdict."""
    model = str(params.get("model"))
    p = strength(preference, model)
    if p <= 0 or reply.stop_reason != "end_turn" or not reply.text:
        return reply
    if not names_family(answers.last_user_text(params), family_of(model)):
        return reply
    if unit_float(seed, "self-preference", answers.content_digest(params)) >= p:
        return reply
    schema = answers._schema_of(params)
    if schema is not None:
        return _bias_structured(reply, schema, params)
    rubric = answers.system_text(params)
    lines = format_lines(rubric)
    if lines is not None:
        line = next(x for x in lines if x.kind != "text")
        field, labels, candidates = line.field, line.labels, line.candidates()
    else:
        fmt = judge_format(rubric)
        field, labels, candidates = fmt.field, fmt.labels, fmt.candidates()
    best = labels[0] if labels else candidates[-1]
    pattern = re.compile(rf"^{re.escape(field)}: [^\n]*$", re.M)
    if pattern.search(reply.text) is None:
        return reply
    text = pattern.sub(f"{field}: {best}", reply.text, count=1)
    return _refit(reply, text, params, best if labels else int(best))


def _bias_structured(reply: answers.Answer, schema: Any, params: Mapping[str, Any]) -> answers.Answer:
    try:
        value = orjson.loads(reply.text)
    except orjson.JSONDecodeError:
        return reply
    props = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(value, dict) or not isinstance(props, Mapping):
        return reply
    for key, prop in props.items():
        if not isinstance(prop, Mapping) or key not in value:
            continue
        if isinstance(prop.get("enum"), list) and prop["enum"]:
            value[key] = prop["enum"][0]
        elif prop.get("type") in ("integer", "number"):
            value[key] = answers._bounds(answers._said(prop))[1]
        else:
            continue
        return _refit(reply, orjson.dumps(value).decode(), params, value[key])
    return reply


def _refit(reply: answers.Answer, text: str, params: Mapping[str, Any], score: int | str) -> answers.Answer:
    fitted = answers._fit(text, int(params["max_tokens"]) - reply.thinking_tokens, False, score)
    return attrs.evolve(
        reply,
        text=fitted.text,
        output_tokens=fitted.output_tokens + reply.thinking_tokens,
        stop_reason=fitted.stop_reason,
        score=score,
    )
