"""Sets of a job's custom_ids held as positions in its column: a byte or an index per id, never a
hash entry (a `frozenset` of 720,000 custom_ids costs about 34 MB; a byte per id, 0.7 MB).

The machines walk their ids in column order and mark them by position (`marked`), so none of them
needs to look an id up by its string. Each set is still a `Set[str]`, equal to a `frozenset` of the
same ids, for whoever reads it by id: a lookup by id scans the column (O(n), in C), which is what a
test or a single check pays, never a loop over the job.

Every value here is immutable by convention: its bytes are never changed once built (`marked`
returns new bytes).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence, Set

from judgecore.job.ints import positions_of


def marked(mask: bytes, positions: Iterable[int]) -> bytes:
    """`mask` with the byte at each of `positions` set to 1 (a new value; `mask` is unchanged). A
    negative position (an id outside the column) is skipped."""
    out = bytearray(mask)
    for p in positions:
        if p >= 0:
            out[p] = 1
    return bytes(out)


class Picked(Set[str]):
    """The ids of `column` at `positions` (increasing): a set of a job's ids that keeps the positions,
    so a part of the run can take its requests as a view of the job's, by position."""

    __slots__ = ("column", "positions")

    column: Sequence[str]
    positions: Sequence[int]

    def __init__(self, column: Sequence[str], positions: Sequence[int]) -> None:
        self.column = column
        self.positions = positions_of(positions)

    @classmethod
    def where(cls, column: Sequence[str], keep: Iterable[bool]) -> Picked:
        """The ids of `column` whose flag in `keep` (one per id, in order) is true."""
        return cls(column, [k for k, flag in enumerate(keep) if flag])

    def __len__(self) -> int:
        return len(self.positions)

    def __iter__(self) -> Iterator[str]:
        return map(self.column.__getitem__, self.positions)

    def __contains__(self, x: object) -> bool:
        if isinstance(self.positions, range) and len(self.positions) == len(self.column):
            return x in self.column
        return x in frozenset(self)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Picked) and other.column is self.column:
            return self.positions == other.positions or list(self.positions) == list(other.positions)
        return Set.__eq__(self, other)

    __hash__ = Set._hash

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:  # what `|`, `-` and `&` return
        return frozenset(it)

    def __repr__(self) -> str:
        head = [self.column[p] for p in self.positions[:5]]
        return f"Picked({len(self)} ids: {head!r}{' ...' if len(self) > 5 else ''})"


class Marked(Set[str]):
    """The ids of `ids` whose byte in `mask` is set, `mask` indexed by each id's position `at[k]` in
    the job's column, plus `extra` (marked ids outside the column, by id)."""

    __slots__ = ("at", "extra", "ids", "mask")

    ids: Sequence[str]
    at: Sequence[int]
    mask: bytes
    extra: frozenset[str]

    def __init__(
        self, ids: Sequence[str], at: Sequence[int], mask: bytes, extra: frozenset[str] = frozenset()
    ) -> None:
        self.ids, self.at, self.mask, self.extra = ids, at, mask, extra

    def __len__(self) -> int:
        return self.mask.count(1) + len(self.extra)

    def __iter__(self) -> Iterator[str]:
        mask = self.mask
        yield from (c for c, p in zip(self.ids, self.at, strict=True) if mask[p])
        yield from self.extra

    def __contains__(self, x: object) -> bool:
        if x in self.extra:
            return True
        try:
            k = self.ids.index(x)  # type: ignore[arg-type]
        except ValueError:
            return False
        return bool(self.mask[self.at[k]])

    __hash__ = Set._hash

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:  # what `|`, `-` and `&` return
        return frozenset(it)

    def __repr__(self) -> str:
        return f"Marked({len(self)} of {len(self.ids)} ids)"


__all__ = ["Marked", "Picked", "marked"]
