"""argparse types shared by the judgecore CLI and the simulator's: numbers that must be finite.

`float()` accepts `inf` and `nan`, which no duration or rate means; each caller checks its own range.
"""

from __future__ import annotations

import argparse
import math


def finite_number(text: str, what: str = "a number") -> float:
    """`text` as a finite float, or an `ArgumentTypeError` naming `what` was expected."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite {what.removeprefix('a ')}, got {text!r}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds >= 0 (refuses `inf`, `nan` and negatives)."""
    value = finite_number(text)
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"expected seconds >= 0, got {text!r}")
    return value


def probability(text: str) -> float:
    """An argparse type: a probability in 0..1 (refuses `nan` and anything outside)."""
    value = finite_number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in 0..1, got {text!r}")
    return value
