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
