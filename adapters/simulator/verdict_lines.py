"""The simulator as a judge that follows a rubric's answer format line by line.

A rubric often spells out the lines of its answer, one a line:

    Helpfulness: N
    Refusal: appropriate | unneeded | n/a
    Rationale: one or two sentences.

or `Verdict: PASS/FAIL`, `Winner: A, B or tie`, `Score: <1-10>`. `format_lines` finds the block of such
`Field: spec` lines (consecutive, at least one of them asking for a number or one of some labels) and
`answer_lines` writes one answer line per line of it, in the rubric's order and in the labels' own
spelling: a number in the field's scale (`Helpfulness (0-5)` elsewhere in the rubric, a scale in the spec
such as `<1-10>`, or the rubric's one scale, else 1-10), one of the labels, or a rationale for a free-text
line (added last when the block has none). Without such a block, `format_lines` is None and the
simulator answers the one verdict line of `rubric_format.judge_format`.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import Final

from judgecore.values import frozen

from .rubric_format import judge_format

_LINE: Final = re.compile(r"""^\s*(?:[-*]\s+)?["'`“]?([A-Za-z][A-Za-z0-9_ ]{0,30}?)\s*:\s*(.*?)["'`”]?\s*$""")
_NUMBER_SPEC: Final = re.compile(
    r"^(?:N|X|#|\d+|N\s*/\s*\d+|<[^<>]{0,30}>|\[[^\[\]]{0,30}\]|\(?\d{1,3}\s*(?:-|–|to)\s*\d{1,3}\)?"
    r"|(?:an?\s+)?(?:integer|number|whole number)\b.{0,40})\.?$",
    re.I,
)
_RANGE: Final = re.compile(r"(\d{1,3})\s*(?:-|–|to)\s*(\d{1,3})")
_OUT_OF: Final = re.compile(r"^N\s*/\s*(\d+)$", re.I)
_LEAD: Final = re.compile(r"^(?:one of|either)\s+", re.I)


@frozen
class FormatLine:
    """One line of the answer: `field` with a number in lo..hi, one of `labels`, or free text."""

    field: str
    kind: str  # "number", "label" or "text"
    lo: int = 1
    hi: int = 10
    labels: tuple[str, ...] = ()

    def candidates(self) -> tuple[str, ...]:
        return self.labels if self.kind == "label" else tuple(str(v) for v in range(self.lo, self.hi + 1))


def _labels(spec: str) -> tuple[str, ...] | None:
    """The labels a spec offers (`a | b | c`, `a/b`, `one of a, b or c`, `A, B or tie`), or None."""
    text = spec.strip().rstrip(".")
    led = bool(_LEAD.match(text))
    text = _LEAD.sub("", text)
    if "|" in text:
        parts = text.split("|")
    elif "/" in text and not re.search(r"\d\s*/", text):
        parts = text.split("/")
    else:
        parts = re.split(r"\s*,\s*(?:or\s+)?|\s+or\s+", text)
    labels = tuple(dict.fromkeys(p.strip().strip("\"'`") for p in parts if p.strip()))
    if len(labels) < 2:
        return None
    words = 3 if led or "|" in text or "/" in text else 1
    if any(len(label.split()) > words or len(label) > 30 for label in labels):
        return None
    return labels


def _scale(rubric: str, field: str, spec: str) -> tuple[int, int]:
    if m := _OUT_OF.match(spec.strip()):
        return 1, int(m.group(1))
    if (m := _RANGE.search(spec)) and int(m.group(1)) < int(m.group(2)):
        return int(m.group(1)), int(m.group(2))
    near = re.search(
        rf"\b{re.escape(field)}\b[^\n:]{{0,20}}?\(\s*(\d{{1,3}})\s*(?:-|–|to)\s*(\d{{1,3}})\s*\)",
        rubric,
        re.I,
    )
    if near and int(near.group(1)) < int(near.group(2)):
        return int(near.group(1)), int(near.group(2))
    fmt = judge_format(rubric)
    return (fmt.lo, fmt.hi) if not fmt.labels else (1, 10)


def _parse(rubric: str, line: str) -> FormatLine | None:
    m = _LINE.match(line)
    if m is None or not m.group(2):
        return None
    field, spec = m.group(1).strip(), m.group(2).strip()
    if _NUMBER_SPEC.match(spec):
        lo, hi = _scale(rubric, field, spec)
        return FormatLine(field, "number", lo=lo, hi=hi)
    if (labels := _labels(spec)) is not None:
        return FormatLine(field, "label", labels=labels)
    return FormatLine(field, "text")


@functools.lru_cache(maxsize=64)
def format_lines(rubric: str) -> tuple[FormatLine, ...] | None:
    """The answer format the rubric spells out line by line (the first block of consecutive `Field:
    spec` lines that asks for a value), or None when it spells out none. Cached, as `judge_format` is:
    every request of a job carries the same rubric."""
    block: list[FormatLine] = []
    for line in [*rubric.splitlines(), ""]:
        parsed = _parse(rubric, line)
        if parsed is not None:
            block.append(parsed)
            continue
        if any(p.kind != "text" for p in block):
            return tuple(block)
        block = []
    return None


def answer_lines(
    lines: Sequence[FormatLine],
    *,
    pick: Callable[[Sequence[str], str], str],
    rationale: str,
) -> tuple[str, str | int]:
    """(the answer's text, the first value line's value): one line per format line, values drawn by
    `pick(candidates, field)`."""
    out: list[str] = []
    first: str | int | None = None
    for line in lines:
        if line.kind == "text":
            out.append(f"{line.field}: {rationale}")
            continue
        value = pick(line.candidates(), line.field)
        if first is None:
            first = value if line.kind == "label" else int(value)
        out.append(f"{line.field}: {value}")
    if all(line.kind != "text" for line in lines):
        out.append(f"Rationale: {rationale}")
    return "\n".join(out), "" if first is None else first
