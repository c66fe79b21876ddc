"""The verdict line a rubric asks for (`judge_format`): what the simulated judge writes and what the
verdict lines it builds around an answer parse; shared by `answers` and `verdict_lines`."""

from __future__ import annotations

import functools
import re
from typing import Final

from judgecore.values import frozen


@frozen
class JudgeFormat:
    """The verdict line a rubric asks for: `FIELD: value`, a number in lo..hi or one of `labels`."""

    field: str = "Score"
    lo: int = 1
    hi: int = 10
    labels: tuple[str, ...] = ()

    def candidates(self) -> tuple[str, ...]:
        return self.labels or tuple(str(v) for v in range(self.lo, self.hi + 1))


DEFAULT_FORMAT: Final = JudgeFormat()

_LABEL_LINE: Final = re.compile(
    r"""["'“]?([A-Za-z][\w ]{0,20}?):\s*[A-Z]\b["'”]?[^\n]{0,80}?\b(?:one of|either)\s+"""
    r"([A-Z][A-Z_]+(?:(?:\s*,\s*(?:or\s+)?|\s+or\s+|\s*/\s*)[A-Z][A-Z_]+)+)"
)
_NUMBER_LINE: Final = re.compile(r"""["'“]([A-Za-z][\w ]{0,20}?):\s*N["'”]""")
_SCALES: Final = (
    re.compile(r"\b(\d{1,3})\s*(?:-|–|to)\s*(\d{1,3})[- ]+(?:point\s+)?scale"),
    re.compile(r"scale\s+(?:of|from)\s+(\d{1,3})\s*(?:-|–|to)\s*(\d{1,3})"),
    re.compile(r"\bfrom\s+(\d{1,3})\s+to\s+(\d{1,3})\b"),
    re.compile(r"\bbetween\s+(\d{1,3})\s+and\s+(\d{1,3})\b"),
)


@functools.lru_cache(maxsize=64)
def judge_format(rubric: str) -> JudgeFormat:
    """The scoring format a rubric asks for ("Verdict: X ... one of PASS, FAIL", "Score: N" on a 1-5
    scale), or the default `Score: N` with N in 1..10 when it names none. Cached: a job sends one
    rubric with every request, and the searches cost about 1 ms on a 2 KB rubric."""
    if m := _LABEL_LINE.search(rubric):
        labels = tuple(dict.fromkeys(re.findall(r"[A-Z][A-Z_]+", m.group(2))))
        return JudgeFormat(field=m.group(1).strip(), labels=labels)
    field = m.group(1).strip() if (m := _NUMBER_LINE.search(rubric)) else DEFAULT_FORMAT.field
    for scale in _SCALES:
        if (r := scale.search(rubric)) and int(r.group(1)) < int(r.group(2)):
            return JudgeFormat(field=field, lo=int(r.group(1)), hi=int(r.group(2)))
    return JudgeFormat(field=field)


__all__ = ["DEFAULT_FORMAT", "JudgeFormat", "judge_format"]
