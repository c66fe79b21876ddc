"""`--deadline WHEN`: a duration from the run's start (`90s`, `45m`, `2h`) or an ISO 8601 instant with
its offset (`2026-12-03T17:00:00+01:00`, `...Z`). Pure: the run's start is given in (epoch seconds)."""

from __future__ import annotations

import math
import re
from datetime import datetime

from judgecore.values import frozen

_DURATION = re.compile(r"(?P<n>\d+(?:\.\d+)?)(?P<unit>[smh])")
_UNIT = {"s": 1.0, "m": 60.0, "h": 3600.0}


class WhenError(ValueError):
    """A `--deadline` value that is neither a duration nor an ISO 8601 time with its offset."""


@frozen(kw_only=True)
class When:
    """A deadline as given: `seconds` after the run's start, or the instant `at` (epoch seconds)."""

    seconds: float | None = None
    at: float | None = None

    def resolve(self, start: float) -> float:
        """The deadline in epoch seconds, for a run started at `start`."""
        if self.at is not None:
            return self.at
        assert self.seconds is not None
        return start + self.seconds


def parse_when(text: str) -> When:
    """`text` read as a duration or an ISO 8601 time with offset; `WhenError` says what is wrong."""
    word = text.strip()
    if m := _DURATION.fullmatch(word):
        seconds = float(m["n"]) * _UNIT[m["unit"]]
        if not (math.isfinite(seconds) and seconds > 0):
            raise WhenError(f"a duration must be above 0, got {text!r}")
        return When(seconds=seconds)
    try:
        instant = datetime.fromisoformat(word)
    except ValueError:
        raise WhenError(
            f"expected a duration (90s, 45m, 2h) or an ISO 8601 time with its offset "
            f"(2026-12-03T17:00:00+01:00), got {text!r}"
        ) from None
    if instant.tzinfo is None or "T" not in word.upper():
        raise WhenError(f"an ISO 8601 time needs a date, a time and its offset (+01:00 or Z), got {text!r}")
    return When(at=instant.timestamp())
