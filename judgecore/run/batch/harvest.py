"""One harvest as a fold: what each result line of an ended batch means, and what to record of it.

Theory of operation. The shell streams a batch's results file and feeds its lines, a few hundred at a
time, to a `HarvestFold`; the fold owns the whole per-line policy and the shell performs what it says:

- the foreign-line check: when the *first* line is none of the batch's ids, the batch (adopted while
  it ran) holds another job's requests: nothing of it is recorded, the fold stops (`stopped`) and the
  ids are sent again;
- unknown lines (a custom_id none of ours, after the first) and duplicate lines (an id seen before in
  this stream: the first one is kept) are counted and the first `SHOWN` of each named;
- each other line's outcome (the port's translation, `judgecore.results.resultlines.line_outcome`) goes
  through the invalid-request breaker's `Gate` while it decides; the rows it lets through are what
  the shell records, in order;
- `finish` reads which ids of the settled sub-batches have no outcome recorded (the shell asks the
  checkpoint and passes them in) and turns those with no line at all into `MISSING` rows; it returns
  them with the `Harvested` event the machine takes. A stream cut (`cut`) settles nothing.

`take` returns a new fold (the old one is unchanged), the rows to record and the lines to say; the
per-line state is a seen-bit per id of the batch (`IdSet`: 8 bytes and one bit per id, never the
lines), copied once per `take`, so feeding lines in groups keeps the fold cheap.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping
from typing import Self

import attrs

from judgecore.decide.breaker import Breaker
from judgecore.results.outcomes import Outcome, RawResult, Status, Usage
from judgecore.results.resultlines import ResultLine
from judgecore.run.batch._vocab import Harvested
from judgecore.run.batch.gate import MISSING, Gate, Held, IdSet
from judgecore.values import frozen

__all__ = ["SHOWN", "HarvestEnd", "HarvestFold"]

SHOWN = 5  # per batch, this many unknown / duplicate lines are named; the rest are counted
_OPEN = (Status.RETRY, Status.FATAL)  # a line recorded with these leaves its id open (not final)
_SUCCEEDED = Status.SUCCEEDED


def _priced(usage: Usage, answers: int, rows: Iterable[Held]) -> tuple[Usage, int]:
    """`usage` with the rows' answers' usage added, and how many of the rows carried one."""
    i, o, w, r = (
        usage.input_tokens,
        usage.output_tokens,
        usage.cache_creation_input_tokens,
        usage.cache_read_input_tokens,
    )
    for row in rows:
        u = row.outcome.usage
        if u is not None:
            i += u.input_tokens
            o += u.output_tokens
            w += u.cache_creation_input_tokens
            r += u.cache_read_input_tokens
            answers += 1
    return Usage.of(i, o, w, r), answers


@frozen(kw_only=True)
class HarvestEnd:
    """What a finished fold says: `rows` to record (`MISSING`), lines to `say`, the per-status `counts`
    of the harvest (None when the stream was cut) and the `event` for the machine."""

    rows: tuple[Held, ...]
    say: tuple[str, ...]
    counts: Mapping[str, int] | None
    event: Harvested


@frozen(kw_only=True)
class HarvestFold:
    """The state of one harvest between two groups of lines (see the module docstring)."""

    sub_id: int
    batch_id: str
    ids: IdSet = attrs.field(eq=False, repr=False)
    settle: tuple[int, ...]
    gate: Gate
    priced: bool = False
    seen: bytes = b""
    lines: int = 0  # lines taken so far, of any kind
    unknown: int = 0
    duplicate: int = 0
    tally: tuple[tuple[Status, int], ...] = ()  # rows recorded so far, by status
    opened: tuple[tuple[str, ...], ...] = ()  # ids recorded RETRY or FATAL, one tuple per `take`
    fatal: tuple[str, Outcome] | None = None  # the first FATAL line
    swallowed: frozenset[str] = frozenset()  # lines the breaker held or dropped
    passed: frozenset[str] = frozenset()  # ... and let through after all
    usage: Usage = attrs.field(factory=Usage)
    answers: int = 0  # how many of the rows `usage` sums carried a usage (the budget learns from them)
    stopped: bool = False  # the batch holds another job's requests: feed no more
    error: RawResult | None = None  # the stream was cut

    @classmethod
    def start(
        cls,
        *,
        sub_id: int,
        batch_id: str,
        ids: IdSet,
        breaker: Breaker,
        held: tuple[Held, ...] = (),
        settle: tuple[int, ...] = (),
        priced: bool = False,
    ) -> HarvestFold:
        """A harvest of `batch_id` for `sub_id`, whose lines may answer for `ids`; `breaker` and its
        `held` lines as the machine hands them over; `priced`: sum the answers' usage."""
        return cls(
            sub_id=sub_id,
            batch_id=batch_id,
            ids=ids,
            settle=settle,
            gate=Gate(breaker, held),
            priced=priced,
            seen=bytes((ids.n + 7) // 8),
        )

    def take(self, lines: Iterable[ResultLine]) -> tuple[Self, tuple[Held, ...], tuple[str, ...]]:
        """The fold after these lines (each a custom_id and its `Outcome`), the rows to record now (in
        order) and the lines to say."""
        if self.stopped:
            return self, (), ()
        ids, batch_id, sub_id = self.ids, self.batch_id, self.sub_id
        keys, size, owners = ids.lookup()  # the per-line match inlined: no call per line
        seen = bytearray(self.seen)
        gate, deciding = self.gate, not self.gate.closed
        tally = dict(self.tally)
        succeeded = 0  # rows of the common status, counted apart from `tally`: no enum hash per row
        n, unknown, duplicate, fatal = self.lines, self.unknown, self.duplicate, self.fatal
        swallowed, passed = set(), set()
        rows: list[Held] = []
        opened: list[str] = []
        say: list[str] = []
        stopped = False
        held = tuple.__new__  # a `Held` without its Python-level __new__ per line
        for custom_id, outcome in lines:
            n += 1
            h = hash(custom_id)
            i = bisect_left(keys, h)
            if i >= size or keys[i] != h:
                if n == 1:
                    say.append(
                        f"batch {batch_id} holds another job's requests (its first result line is "
                        f"{custom_id!r}, none of sub-batch {sub_id}'s): nothing recorded from it; "
                        "its requests are sent again"
                    )
                    stopped = True
                    break
                unknown += 1
                if unknown <= SHOWN:
                    say.append(f"batch {batch_id}: result line for unknown custom_id {custom_id!r} ignored")
                continue
            byte, bit = i >> 3, 1 << (i & 7)
            if seen[byte] & bit:
                duplicate += 1
                if duplicate <= SHOWN:
                    say.append(f"batch {batch_id}: duplicate result line for {custom_id!r}; first one kept")
                continue
            seen[byte] |= bit
            line = held(Held, (custom_id, outcome, sub_id if owners is None else owners[i], batch_id))
            if not deciding:  # the hot path: the breaker is closed, every line is recorded
                rows.append(line)
                status = outcome.status
                if status is _SUCCEEDED:
                    succeeded += 1
                    continue
                tally[status] = tally.get(status, 0) + 1
                if status in _OPEN:
                    opened.append(custom_id)
                    if status is Status.FATAL and fatal is None:
                        fatal = (custom_id, outcome)
                continue
            # the breaker decides (or has tripped): lines go through its gate
            gate, through = gate.take(line)
            deciding = not gate.closed
            if not through:
                swallowed.add(custom_id)
            passed.update(h.custom_id for h in through)
            for h in through:
                rows.append(h)
                status = h.outcome.status
                tally[status] = tally.get(status, 0) + 1
                if status in _OPEN:
                    opened.append(h.custom_id)
                    if status is Status.FATAL and fatal is None:
                        fatal = (h.custom_id, h.outcome)
        if succeeded:
            tally[_SUCCEEDED] = tally.get(_SUCCEEDED, 0) + succeeded
        usage, answers = self.usage, self.answers
        if self.priced and rows:
            usage, answers = _priced(usage, answers, rows)
        fold = attrs.evolve(
            self,
            seen=bytes(seen),
            gate=gate,
            lines=n,
            unknown=unknown,
            duplicate=duplicate,
            tally=tuple(tally.items()),
            opened=(*self.opened, tuple(opened)) if opened else self.opened,
            fatal=fatal,
            swallowed=self.swallowed | swallowed if swallowed else self.swallowed,
            passed=self.passed | passed if passed else self.passed,
            usage=usage,
            answers=answers,
            stopped=stopped,
        )
        return fold, tuple(rows), tuple(say)

    def cut(self, error: RawResult) -> Self:
        """The stream broke off with `error`: what was taken stands; nothing is settled."""
        return attrs.evolve(self, error=error)

    def finish(self, unanswered: Mapping[int, Iterable[str]], *, at: float, u: float) -> HarvestEnd:
        """The end of the harvest. `unanswered`: for each sub-batch of `settle`, its ids with no
        outcome recorded under it (asked of the checkpoint after every row was recorded; ignored
        after a cut). `at` and `u` are the clock and a jitter draw for the event."""
        say: list[str] = []
        if self.unknown > SHOWN or self.duplicate > SHOWN:
            say.append(
                f"batch {self.batch_id}: {self.unknown:,} unknown and {self.duplicate:,} duplicate "
                "result line(s) in all"
            )
        missing: list[Held] = []
        counts: dict[str, int] | None = None
        held_ids = {h.custom_id for h in self.gate.held}
        if self.error is None:
            for m in self.settle:
                # held or dropped by the breaker: they had a line, so they are not missing. Held ones
                # may be of an earlier harvest (a sub-batch settled by a later one): the gate's count
                here = [c for c in unanswered.get(m, ()) if c not in self.swallowed and c not in held_ids]
                if here:
                    say.append(
                        f"batch {self.batch_id}: no result line for {len(here):,} request(s), e.g. "
                        f"{here[0]}; resent"
                    )
                    missing += (Held(c, MISSING, m, self.batch_id) for c in here)
            tally = dict(self.tally)
            if missing:
                tally[Status.RETRY] = tally.get(Status.RETRY, 0) + len(missing)
            counts = {str(k): v for k, v in tally.items() if v}
        opened = frozenset(c for group in self.opened for c in group)
        fatal = self.fatal
        event = Harvested(
            self.sub_id,
            at=at,
            u=u,
            breaker=self.gate.breaker,
            held=self.gate.held,
            open=opened
            | frozenset(h.custom_id for h in missing)
            | (self.swallowed - self.passed - held_ids),  # dropped: tripped
            error=self.error,
            fatal=fatal[1] if fatal else None,
            fatal_where=f"result of {fatal[0]} in batch {self.batch_id}" if fatal else "",
            usage=self.usage,
            answers=self.answers,
        )
        return HarvestEnd(rows=tuple(missing), say=tuple(say), counts=counts, event=event)
