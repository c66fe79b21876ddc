"""What the report says about the run's health: whether a timeline tells the reader anything."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

#: A pause between two answers longer than this is a stop and a resume (another run of the job).
RESUME_GAP_SECONDS = 60.0


def timeline_says_something(*, sub_batches: int, answered_at: Sequence[float], retried: int) -> bool:
    """A batch job's timeline shows its sub-batches; a sync-only job's is one rising line that says
    nothing, unless answers were retried or the job was stopped and resumed (a gap in the line)."""
    if sub_batches:
        return True
    if retried:
        return True
    times = sorted(answered_at)
    return any(b - a > RESUME_GAP_SECONDS for a, b in itertools.pairwise(times))
