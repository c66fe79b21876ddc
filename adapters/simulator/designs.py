"""The simulator as the judge of a design (judgecore's `--pairwise`, `--samples`): two knobs.

- **A pairwise prompt** is recognised by the two answers MT-Bench's judge prompt marks (Zheng et al.
  2023), in the last user message:

      [The Start of Assistant A's Answer]
      ...the answer shown first...
      [The End of Assistant A's Answer]
      [The Start of Assistant B's Answer]
      ...the answer shown second...
      [The End of Assistant B's Answer]

  The judge answers `Winner: A`, `Winner: B` or `Winner: tie`, then a rationale. By content, the
  better answer is the one whose text has the larger seeded digest (the same answer in both orders;
  identical texts are a tie). With `position_bias` P, a share P of pairwise answers (a seeded draw per
  request: each order and each sample draws on its own) name the first position, `A`, whatever the
  content. Judged in both orders, an item is then consistent with probability 1 - P. Under a
  schema (`output_config`) the answer is the JSON object the schema asks for, as the API's is: the
  pairwise shaping leaves it alone.
- **Samples that disagree**: with `sample_spread` S, a share S of answers (a seeded draw per request,
  so the K samples of an item draw apart) give a verdict drawn afresh instead of the one the content
  decides: another score on the rubric's scale (verdict-line answers; a structured answer keeps its
  own), or, for a pairwise prompt, the other answer.

Both are pure functions of the request, the seed and the request's own salt (the batch and custom_id
of a batch request, the request number of a sync one), like everything in `answers`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

import attrs

from . import answers
from .rubric_format import judge_format
from .wire import unit_float

_ANSWER: Final = re.compile(
    r"\[The Start of Assistant ([AB])'s Answer\]\n?(.*?)\n?\[The End of Assistant \1's Answer\]", re.DOTALL
)


def pairwise_answers(text: str) -> tuple[str, str] | None:
    """The two answers of a pairwise prompt (shown first, shown second), or None."""
    found = dict((m.group(1), m.group(2).strip()) for m in _ANSWER.finditer(text))
    if "A" in found and "B" in found:
        return found["A"], found["B"]
    return None


def content_choice(first: str, second: str, seed: int) -> str:
    """`A`, `B` or `tie` by content alone: the same answer wins whichever position it is shown in."""
    if first == second:
        return "tie"
    return "A" if unit_float(seed, "better", first) > unit_float(seed, "better", second) else "B"


def shape(
    reply: answers.Answer,
    params: Mapping[str, Any],
    *,
    seed: int,
    position_bias: float,
    sample_spread: float,
    salt: tuple[object, ...],
) -> answers.Answer:
    """`reply` as a pairwise judge's answer (for a pairwise prompt), and with its verdict drawn afresh
    for a share `sample_spread` of requests; `reply` itself otherwise."""
    if reply.stop_reason != "end_turn":
        return reply
    if answers._schema_of(params) is not None:  # a structured answer is JSON, and keeps its own verdict
        return reply
    digest = answers.content_digest(params)
    spread = sample_spread > 0 and unit_float(seed, "spread", digest, *salt) < sample_spread
    pair = pairwise_answers(answers.last_user_text(params))
    if pair is not None:
        if position_bias > 0 and unit_float(seed, "position", digest, *salt) < position_bias:
            choice = "A"
        else:
            choice = content_choice(*pair, seed)
            if spread:
                choice = {"A": "B", "B": "A", "tie": "A"}[choice]
        rationale = reply.text.split("\n", 1)[1] if "\n" in reply.text else reply.text
        return _refit(reply, f"Winner: {choice}\n{rationale}", params, choice)
    if not spread:
        return reply
    fmt = judge_format(answers.system_text(params))
    others = [c for c in fmt.candidates() if c != str(reply.score)]
    if not others:
        return reply
    drawn = others[int(unit_float(seed, "spread-value", digest, *salt) * len(others))]
    _head, sep, tail = reply.text.partition("\n")
    text = f"{fmt.field}: {drawn}{sep}{tail}"
    return _refit(reply, text, params, drawn if fmt.labels else int(drawn))


def _refit(reply: answers.Answer, text: str, params: Mapping[str, Any], score: int | str) -> answers.Answer:
    """`reply` with another text, within what its thinking left of `max_tokens` (its thinking kept)."""
    fitted = answers._fit(text, int(params["max_tokens"]) - reply.thinking_tokens, False, score)
    return attrs.evolve(
        reply,
        text=fitted.text,
        output_tokens=fitted.output_tokens + reply.thinking_tokens,
        stop_reason=fitted.stop_reason,
        score=score,
    )


__all__ = ["content_choice", "pairwise_answers", "shape"]
