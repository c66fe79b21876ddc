"""Harvesting one batch: which of a batch's lines are ours, seen once, and what the breaker lets through.

The shell streams an ended batch's results line by line (57,000 lines/s durable, `bench/harvest.py`),
so these are small and cheap: `IdSet` matches a line's custom_id to the sub-batch that owns it in 8
bytes per id (sorted hashes; process-local, never stored) with a seen-bit per id for duplicates, and
`Gate` passes each outcome through the invalid-request breaker (`judgecore.decide.breaker`) while it decides:
INVALID_REQUEST lines are held (not recorded) until a final outcome of another kind closes it, then
released; once it trips they are dropped. After it closes the shell stops asking. `MISSING` is what a
request with no result line in an ended batch means: it did not run; it is sent again.
"""

from __future__ import annotations

import bisect
from array import array
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from judgecore.decide.breaker import Breaker
from judgecore.results.outcomes import FailureClass, Outcome, Status
from judgecore.values import frozen

MISSING = Outcome(
    status=Status.RETRY,
    failure=FailureClass.NOT_RUN,
    reason="batch ended without a result line for this request",
    error_type="missing_result",
)


class IdSet:
    """The custom_ids a batch may answer for, and `owner(i)`: the sub-batch owning id number `i`
    (`default` unless the batch is one of an ambiguous orphan group)."""

    def __init__(self, custom_ids: Iterable[str], owners: Sequence[tuple[int, Iterable[str]]] = ()) -> None:
        if not owners:
            self._keys = array("q", sorted(hash(c) for c in custom_ids))
            self._owners: array[int] | None = None
        else:
            pairs = sorted((hash(c), sub_id) for sub_id, ids in owners for c in ids)
            self._keys = array("q", (h for h, _ in pairs))
            self._owners = array("q", (o for _, o in pairs))
        self.n = len(self._keys)

    def owner(self, i: int, default: int) -> int:
        return default if self._owners is None else self._owners[i]

    def index(self, custom_id: str) -> int:
        """Position of `custom_id`, or -1 when it is not one of these."""
        h = hash(custom_id)
        i = bisect.bisect_left(self._keys, h)
        return i if i < self.n and self._keys[i] == h else -1

    def lookup(self) -> tuple[array[int], int, array[int] | None]:
        """The sorted hashes, their count and the owners (None: one sub-batch owns them all), for a
        caller that matches many ids in one loop as `index` and `owner` do, without a call per id."""
        return self._keys, self.n, self._owners

    def fresh_seen(self) -> bytearray:
        return bytearray((self.n + 7) // 8)


class Held(NamedTuple):
    """One result line to record (or that the breaker holds: not recorded while it decides)."""

    custom_id: str
    outcome: Outcome
    sub_id: int
    batch_id: str | None


@frozen
class Gate:
    """The breaker as a harvest's lines pass through it, with the lines it holds."""

    breaker: Breaker
    held: tuple[Held, ...] = ()

    def take(self, line: Held) -> tuple[Gate, tuple[Held, ...]]:
        """The gate after one line, and the lines to record now (none while held or dropped; what it
        held and this line once it closes)."""
        outcome = line.outcome
        if self.breaker.holds(outcome):
            if any(h.custom_id == line.custom_id for h in self.held):  # a resumed stream's repeat
                return self, ()
            breaker = self.breaker.observe(outcome)
            held = () if breaker.tripped else (*self.held, line)
            return Gate(breaker, held), ()
        breaker = self.breaker.observe(outcome)
        if breaker.deciding or breaker.tripped:
            return Gate(breaker, self.held), (line,)
        return Gate(breaker), (*self.held, line)

    @property
    def closed(self) -> bool:
        """The breaker is closed for good: every line is recorded as it comes."""
        return not (self.breaker.deciding or self.breaker.tripped)
