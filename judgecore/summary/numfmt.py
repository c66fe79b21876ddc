"""How a figure is written: one rule per kind of figure, used by the text summary, `--markdown` and the
HTML report alike (so a mean reads `4.82` everywhere, a share `17.0%` everywhere).

| kind          | rule                                                   | example             |
| ------------- | ------------------------------------------------------ | ------------------- |
| `count`       | thousands separated                                    | `12,345`            |
| `score`       | 2 decimals, whole numbers too (one column, one width)  | `4.82`, `7.00`      |
| `share`       | a percentage with 1 decimal                            | `17.0%`             |
| `coefficient` | 3 decimals (kappa, alpha, correlations)                | `0.412`             |
| `difference`  | a score's, signed with 2 decimals                      | `+0.42`, `-1.10`    |
| `points`      | a difference of shares, signed percentage points       | `+3.2 pts`          |
| `usd`         | dollars: 4 decimals below $1, else 2 (`decide.prices.usd`)| `$0.0123`, `$4.20`  |

An interval is `lo to hi` in its figure's kind. `--json` keeps every number unrounded; its `formats`
field names this rule (`FORMATS`), so a script can write figures the way the page does.
"""

from __future__ import annotations

from typing import Any, Final

from judgecore.decide.prices import usd

MISSING: Final = "-"

FORMATS: Final = {
    "count": "thousands separated",
    "score": "2 decimals",
    "share": "percentage, 1 decimal",
    "coefficient": "3 decimals",
    "difference": "signed, 2 decimals",
    "points": "signed percentage points, 1 decimal",
    "usd": "4 decimals below $1, else 2",
}


def label(v: Any) -> str:
    """A value as a label (a group's name, a score value, a verdict's word): booleans as JSON spells
    them, whole floats without their `.0`, anything else as `str` gives it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


def count(n: int | None) -> str:
    return MISSING if n is None else f"{n:,}"


def _decimals(x: float, digits: int) -> str:
    return f"{x:.{digits}f}"  # `5.00` beside `5.40`, never `5`: a column reads at one width


def score(x: float | None) -> str:
    return MISSING if x is None else _decimals(x, 2)


def coefficient(x: float | None) -> str:
    return MISSING if x is None else _decimals(x, 3)


def share(x: float | None) -> str:
    return MISSING if x is None else f"{x:.1%}"


def difference(x: float | None) -> str:
    return MISSING if x is None else f"{x:+.2f}"


def points(x: float | None) -> str:
    return MISSING if x is None else f"{100 * x:+.1f} pts"


def scale(bounds: tuple[float, float] | None) -> str | None:
    """A score's scale as the verdict spec declares it: `1-5`, `0-1`, `-2 to 2` (None: not declared)."""
    if bounds is None:
        return None
    lo, hi = label(bounds[0]), label(bounds[1])
    return f"{lo}-{hi}" if bounds[0] >= 0 else f"{lo} to {hi}"


def interval(ci: tuple[float, float] | None, kind: str) -> str:
    """`lo to hi` written as `kind` (one of the names in `FORMATS`)."""
    if ci is None:
        return MISSING
    write = KINDS[kind]
    return f"{write(ci[0])} to {write(ci[1])}"


KINDS: Final = {
    "score": score,
    "share": share,
    "coefficient": coefficient,
    "difference": difference,
    "points": points,
    "usd": usd,
}
