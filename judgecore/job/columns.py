"""Columns by position: a column mostly None (`Sparse`), and a lazy view of a column at some positions
(`taken(column, positions)`: a part of a job's requests reads its columns through one), not a copy;
`SparseBuilder` makes a `Sparse` a few values at a time (a parse's).

The integer and text columns themselves are `judgecore.job.ints` and `judgecore.job.texts`.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from itertools import compress, repeat
from operator import is_not
from typing import Generic, TypeVar, overload

from judgecore.job.ints import Ints
from judgecore.job.texts import Keyed, Texts

_T = TypeVar("_T")


class Sparse(Sequence[_T | None]):
    """A column mostly None (the max_tokens or metadata few items give), kept as the positions and
    values of the others: no slot per item. Equal to a tuple or a list of the same values."""

    __slots__ = ("_at", "_n", "_values")

    _n: int
    #: the positions of the values that are not None, increasing, and those values
    _at: Ints
    _values: tuple[_T, ...]

    def __init__(self, values: Iterable[_T | None] = ()) -> None:
        vals = values if isinstance(values, list | tuple) else list(values)
        object.__setattr__(self, "_n", len(vals))
        if vals.count(None) == len(vals):  # none given (the usual max_tokens): one C-level count
            object.__setattr__(self, "_at", Ints())
            object.__setattr__(self, "_values", ())
            return
        given = list(map(is_not, vals, repeat(None)))
        object.__setattr__(self, "_at", Ints(compress(range(len(vals)), given)))
        object.__setattr__(self, "_values", tuple(compress(vals, given)))

    @classmethod
    def of(cls, values: Iterable[_T | None]) -> Sparse[_T]:
        """`values` as `Sparse` (itself when it is one already)."""
        return values if isinstance(values, Sparse) else cls(values)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Sparse is immutable (cannot set {name})")

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, k: int) -> _T | None: ...
    @overload
    def __getitem__(self, k: slice) -> Sparse[_T]: ...
    def __getitem__(self, k: int | slice) -> _T | Sparse[_T] | None:
        if isinstance(k, slice):
            return Sparse(map(self.__getitem__, range(self._n)[k]))
        if k < 0:
            k += self._n
        if not 0 <= k < self._n:
            raise IndexError("Sparse index out of range")
        at = self._at.view
        i = bisect_left(at, k)
        return self._values[i] if i < len(at) and at[i] == k else None

    def __iter__(self) -> Iterator[_T | None]:
        if not self._values:
            return repeat(None, self._n)
        return self._walk()

    def _walk(self) -> Iterator[_T | None]:
        prev = 0
        for k, v in zip(self._at.view, self._values, strict=True):
            yield from repeat(None, k - prev)
            yield v
            prev = k + 1
        yield from repeat(None, self._n - prev)

    def count(self, value: object) -> int:
        if value is None:
            return self._n - len(self._values)
        return self._values.count(value)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sparse):
            return (self._n, self._at, self._values) == (other._n, other._at, other._values)
        if isinstance(other, tuple | list):
            return len(other) == self._n and list(self) == list(other)
        return NotImplemented

    def __hash__(self) -> int:  # equal to a tuple of the same values, so hashed the same
        return hash(tuple(self))

    def __reduce__(self) -> tuple[type[Sparse[_T]], tuple[tuple[_T | None, ...]]]:
        return Sparse, (tuple(self),)

    def __repr__(self) -> str:
        return f"Sparse({self._n} values, {len(self._values)} given)"


class SparseBuilder(Generic[_T]):
    """A `Sparse` column made a few values at a time: the positions and values given, nothing for
    the others (a parse's max_tokens and metadata, which most items do not give). Private to the
    call that fills it."""

    __slots__ = ("_at", "_values")

    def __init__(self) -> None:
        self._at = array("q")
        self._values: list[_T] = []

    def put(self, k: int, value: _T) -> None:
        """Value `value` at position `k` (past every position put so far)."""
        self._at.append(k)
        self._values.append(value)

    def put_many(self, positions: Iterable[int], values: Iterable[_T]) -> None:
        """`values` at `positions` (as many, increasing, past every position put so far)."""
        self._at.extend(positions)
        self._values += values

    def window(self, start: int, stop: int) -> list[_T | None]:
        """The values at positions `start` to `stop` (None where none was put)."""
        out: list[_T | None] = [None] * (stop - start)
        lo, hi = bisect_left(self._at, start), bisect_left(self._at, stop)
        for k, v in zip(self._at[lo:hi], self._values[lo:hi], strict=True):
            out[k - start] = v
        return out

    def build(self, n: int) -> Sparse[_T]:
        """The column of `n` values (`Sparse`: equal to one made of them)."""
        out: Sparse[_T] = Sparse.__new__(Sparse)
        object.__setattr__(out, "_n", n)
        object.__setattr__(out, "_at", Ints(self._at) if self._values else Ints())
        object.__setattr__(out, "_values", tuple(self._values))
        return out


class Taken(Sequence[_T]):
    """A lazy view of `column` at `positions` (each read when asked): what a part of a job's requests
    reads its columns through, instead of a copy of each column."""

    __slots__ = ("column", "positions")

    def __init__(self, column: Sequence[_T], positions: Sequence[int]) -> None:
        self.column = column.view if type(column) is Ints else column  # an Ints read in C
        self.positions = positions

    def __len__(self) -> int:
        return len(self.positions)

    @overload
    def __getitem__(self, k: int) -> _T: ...
    @overload
    def __getitem__(self, k: slice) -> Taken[_T]: ...
    def __getitem__(self, k: int | slice) -> _T | Taken[_T]:
        if isinstance(k, slice):
            return Taken(self.column, self.positions[k])
        return self.column[self.positions[k]]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[_T]:
        if type(self.column) is Texts or type(self.column) is Keyed:
            return self.column.at(self.positions)  # type: ignore[return-value]
        return map(self.column.__getitem__, self.positions)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str | bytes):
            return len(other) == len(self) and list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"Taken({len(self)} of {len(self.column)})"


def taken(column: Sequence[_T], positions: Sequence[int]) -> Sequence[_T]:
    """`column` at `positions`: the column itself when `positions` is all of it in order, else a lazy
    view (`Taken`)."""
    p = positions
    if isinstance(p, range) and p.start == 0 and p.step == 1 and p.stop == len(column):
        return column
    return Taken(column, p)
