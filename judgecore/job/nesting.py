"""How deep an input line nests, checked at parse time (`MAX_DEPTH`): orjson refuses to serialize past
254 levels, so a line accepted here can be sent and written out after paying."""

from __future__ import annotations

from itertools import repeat
from operator import add
from typing import Any

#: The deepest nesting an input line may have (the line's object is level 1). orjson refuses to
#: serialize past 254 levels, and the output line and the request body each add a level or two: a
#: limit checked at parse time means whatever is accepted can be sent and written out after paying.
MAX_DEPTH = 64


def depth(value: Any) -> int:
    """Nesting depth of a JSON value: a scalar is 0, `[]` and `{}` are 1. Walked with a stack, not
    by recursion: a line may nest as deep as the JSON parser allows (1,024 levels), deeper than
    Python's recursion limit."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    pop, push = stack.pop, stack.append
    while stack:
        v, d = pop()
        if isinstance(v, dict):
            v = v.values()
        elif not isinstance(v, list):
            continue
        d += 1
        if d > deepest:
            deepest = d
        for child in v:
            if isinstance(child, dict | list):
                push((child, d))
    return deepest


def brackets(raw: bytes | str) -> int:
    """How many arrays and objects a line opens: only a line with more than `MAX_DEPTH` of them can
    nest that deep, so the walk of `depth` is skipped for nearly every line (a count runs in C)."""
    if isinstance(raw, str):
        return raw.count("[") + raw.count("{")
    return raw.count(b"[") + raw.count(b"{")


def most_brackets(raws: list[bytes | str]) -> int:
    """The most arrays and objects any of `raws` opens (`brackets`), counted in C when the lines are
    all bytes or all text."""
    kinds = set(map(type, raws))
    if kinds == {bytes}:
        return max(map(add, map(bytes.count, raws, repeat(b"[")), map(bytes.count, raws, repeat(b"{"))))
    if kinds == {str}:
        return max(map(add, map(str.count, raws, repeat("[")), map(str.count, raws, repeat("{"))))
    return max(map(brackets, raws))


def too_deep(raw: bytes | str, obj: Any) -> bool:
    """Whether line `raw` (parsed: `obj`) nests more than `MAX_DEPTH` levels (see `brackets`)."""
    return brackets(raw) > MAX_DEPTH and depth(obj) > MAX_DEPTH
