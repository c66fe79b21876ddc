"""Immutable integer columns: what the columnar values (`Items`, `Requests`) keep their line numbers,
sizes, max_tokens and positions in (`Ints`), a few bytes per value and no object per value.

An `array("q")` is as compact but mutable: a frozen value holding one could be changed behind its
back. `Ints` keeps the bytes (immutable) and reads them through a read-only view, so it is as cheap to
read and as small as the array, and it hashes and compares by value. It keeps 2 bytes per value when
every value is in [0, 2**15) (a job's sizes and max_tokens, most of the time), 4 when every value fits
in 32 bits (line numbers, sizes and max_tokens always do), else 8.
"""

from __future__ import annotations

import sys
from array import array
from collections.abc import Iterable, Iterator, Sequence
from operator import eq
from typing import overload

_I32 = (-(2**31), 2**31 - 1)
#: which 4-byte half of a native 8-byte value is its low one, and which byte of that half holds its sign
_LOW, _HIGH, _SIGN = (0, 1, 3) if sys.byteorder == "little" else (1, 0, 0)
#: which byte of a 2-byte value holds its sign
_SIGN16 = 1 if sys.byteorder == "little" else 0


_NO_SIGN = bytes(range(128))  # the bytes whose top bit is clear


def _narrow(wide: array[int]) -> tuple[bytes, str]:
    """The bytes of `wide` (an `array("q")`) in the narrowest of 2, 4 or 8 bytes per value, and its
    code.

    Values in [0, 2**31) (line numbers, sizes, offsets: nearly every column) are told by their bytes,
    each test one C-level pass over the column: every high half zero, no low half's sign bit set.
    Then the low halves are the 4-byte values (`_narrow4` tries 2). Any other column is told by its
    least and greatest."""
    with memoryview(wide) as view, view.cast("B") as raw, raw.cast("I") as halves:
        low, high = halves[_LOW::2].tobytes(), halves[_HIGH::2].tobytes()
    if not high.strip(b"\0") and not low[_SIGN::4].translate(None, _NO_SIGN):
        return _narrow4(low)
    if _I32[0] <= min(wide) and max(wide) <= _I32[1]:
        return _narrow4(array("i", wide).tobytes())
    return wide.tobytes(), "q"


def _narrow4(data: bytes) -> tuple[bytes, str]:
    """4-byte values (`data`, code "i") in 2 bytes each when all are in [0, 2**15) (a job's sizes and
    max_tokens, most of the time): every high 2-byte half zero, no low half's sign bit set."""
    with memoryview(data) as view, view.cast("H") as halves:
        low, high = halves[_LOW::2].tobytes(), halves[_HIGH::2].tobytes()
    if not high.strip(b"\0") and not low[_SIGN16::2].translate(None, _NO_SIGN):
        return low, "h"
    return data, "i"


_NARROW_CODES = frozenset("iHI")


def _of_narrow(values: array[int]) -> tuple[bytes, str]:
    """`_narrow` of a 2-byte unsigned (`"H"`) or 4-byte (`"i"`, `"I"`) array, from its own bytes."""
    raw = values.tobytes()
    if values.itemsize == 2:  # unsigned: in [0, 2**15) when no value's top bit is set
        if not raw[_SIGN16::2].translate(None, _NO_SIGN):
            return raw, "h"
        return _narrow4(array("i", values).tobytes())
    if values.typecode == "I" and raw[_SIGN::4].translate(None, _NO_SIGN):  # some value >= 2**31
        return array("q", values).tobytes(), "q"
    return _narrow4(raw)


class Ints(Sequence[int]):
    """Signed 64-bit integers, immutable; equal to another `Ints` of the same values (not to a list)."""

    __slots__ = ("_data", "view")

    _data: bytes
    #: the integers as a read-only view: indexing it runs in C (a hot loop reads it, not `self[k]`)
    view: memoryview

    def __init__(self, values: Iterable[int] | bytes = ()) -> None:
        """The integers of `values` (`bytes`: their native 8-byte encoding, as `array("q").tobytes`
        gives)."""
        if isinstance(values, array) and values.typecode in _NARROW_CODES and values.itemsize in (2, 4):
            data, code = _of_narrow(values)  # a 2- or 4-byte column: no 8-byte copy of it
        else:
            if isinstance(values, bytes):
                wide = array("q")
                wide.frombytes(values)
            elif isinstance(values, array) and values.typecode == "q":
                wide = values
            else:
                wide = array("q", values)
            data, code = _narrow(wide)
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "view", memoryview(data).cast(code))

    @classmethod
    def _of_view(cls, view: memoryview) -> Ints:
        """The values of `view` (a slice of another `Ints`'s view: already as narrow as they can be
        unless it was 4 or 8 bytes wide, so narrowed again)."""
        if view.format in ("h", "i"):
            new = cls.__new__(cls)
            data, code = (view.tobytes(), "h") if view.format == "h" else _narrow4(view.tobytes())
            object.__setattr__(new, "_data", data)
            object.__setattr__(new, "view", memoryview(data).cast(code))
            return new
        return cls(array("q", view))

    @classmethod
    def of(cls, values: Iterable[int]) -> Ints:
        """`values` as `Ints` (itself when it is one already)."""
        return values if isinstance(values, Ints) else cls(values)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Ints is immutable (cannot set {name})")

    def __len__(self) -> int:
        return len(self.view)

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Ints: ...
    def __getitem__(self, k: int | slice) -> int | Ints:
        if isinstance(k, slice):
            return Ints._of_view(self.view[k])
        return self.view[k]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[int]:
        return iter(self.view)

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        return self.view.tolist().index(value, start, len(self) if stop is None else stop)

    def tolist(self) -> list[int]:
        return self.view.tolist()  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Ints):
            return self.view.format == other.view.format and self._data == other._data
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._data)

    def __reduce__(self) -> tuple[type[Ints], tuple[bytes]]:
        return Ints, (array("q", self.view).tobytes(),)

    def __repr__(self) -> str:
        head = self.view[:8].tolist()
        return f"Ints({head!r}{' ...' if len(self) > 8 else ''})"


def ints(values: Iterable[int]) -> Ints:
    """`Ints.of(values)`."""
    return Ints.of(values)


def counted(values: Iterable[int]) -> range | Ints:
    """`values` as an immutable column: a `range` kept as it is; values that count up by one (a file's
    line numbers with no blank line among them) as their `range`, no bytes per value; any other as
    `Ints`. Equal values give equal columns."""
    if isinstance(values, range):
        return values if values.step == 1 or len(values) <= 1 else Ints(values)
    column: Ints | None
    if isinstance(values, Ints):
        column, given = values, values.view
    elif isinstance(values, Sequence | array):  # looked at before any copy of them is made
        column, given = None, values
    else:
        column = Ints(values)
        given = column.view
    n = len(given)
    if not n:
        return range(0)
    first = given[0]
    if type(first) is int and given[-1] - first == n - 1:
        run = range(first, first + n)
        if all(map(eq, given, run)):  # compared in C, value by value: no copy of the values or the run
            return run
    return column if column is not None else Ints(values)


#: the next wider code of an `IntsBuilder`'s array, when a value does not fit
_WIDER = {"H": "I", "I": "q"}


class IntsBuilder:
    """An `Ints` made a value (or a few) at a time, kept 2 bytes a value while every one is in
    [0, 2**16), 4 while in [0, 2**32), else 8 (widened when one does not fit): a parse's sizes are
    never 8 bytes each on their way to their `Ints`. Private to the call that fills it."""

    __slots__ = ("_values",)

    def __init__(self) -> None:
        self._values: array[int] = array("H")

    def __len__(self) -> int:
        return len(self._values)

    def append(self, value: int) -> None:
        try:
            self._values.append(value)
        except OverflowError:
            self._widen()
            self.append(value)

    def extend(self, values: Sequence[int]) -> None:
        """Add `values` (a sequence: it is read again when a value widens the column)."""
        n = len(self._values)
        try:
            self._values.extend(values)
        except OverflowError:
            del self._values[n:]
            self._widen()
            self.extend(values)

    def _widen(self) -> None:
        code = _WIDER.get(self._values.typecode)
        if code is None:  # 8 bytes already: the value fits no column (as `array("q")` says)
            raise OverflowError("a value of an integer column is out of the 64-bit range")
        self._values = array(code, self._values)

    def build(self) -> Ints:
        return Ints(self._values)

    def handed_over(self) -> array[int]:
        """The values as they are (no `Ints` made of them), for a caller that drops the builder now."""
        return self._values


class LinesBuilder:
    """A column of line numbers (`counted`'s) made a run of lines at a time: while they count up by
    one (no blank line among them) a `range`, no bytes per line; after a gap an `IntsBuilder`."""

    __slots__ = ("_first", "_n", "_rest")

    def __init__(self) -> None:
        self._first, self._n = 0, 0
        self._rest: IntsBuilder | None = None

    def append(self, line: int) -> None:
        self.add_run(line, 1)

    def add_run(self, first: int, count: int) -> None:
        """Lines `first` to `first + count - 1`."""
        if self._rest is None:
            if not self._n:
                self._first, self._n = first, count
                return
            if first == self._first + self._n:
                self._n += count
                return
            self._rest = IntsBuilder()
            self._rest.extend(range(self._first, self._first + self._n))
        self._rest.extend(range(first, first + count))

    def build(self) -> range | Ints:
        if self._rest is None:
            return range(self._first, self._first + self._n) if self._n else range(0)
        return counted(self._rest.build())


def records(raw: bytes, width: int) -> Iterator[bytes]:
    """The records of `raw`, `width` bytes apiece (a job's digests), each cut in C."""
    return map(raw.__getitem__, map(slice, range(0, len(raw), width), range(width, len(raw) + 1, width)))


def span_of(n: int, start: int, stop: int | None) -> tuple[int, int]:
    """The positions from `start` to `stop` of a sequence of `n` values, as `list.index` reads them."""
    lo, hi = (k + n if k < 0 else k for k in (start, n if stop is None else stop))
    return max(0, min(n, lo)), max(0, min(n, hi))


def positions_of(values: Sequence[int]) -> Sequence[int]:
    """A sequence of positions as an immutable one: a `range` kept as it is; positions that count up
    by one (a round of every id but the one probed, a sub-batch of it) as their `range`, no bytes
    per position; any other as `Ints`."""
    return values if isinstance(values, range) else counted(values)
