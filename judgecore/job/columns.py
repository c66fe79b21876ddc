"""Immutable columns: what the columnar values (`Items`, `Requests`) keep their line numbers, sizes,
max_tokens, positions (`Ints`) and ids (`Texts`) in, a few bytes per value and no object per value.

An `array("q")` is as compact but mutable: a frozen value holding one could be changed behind its
back. `Ints` keeps the bytes (immutable) and reads them through a read-only view, so it is as cheap to
read and as small as the array, and it hashes and compares by value. It keeps 2 bytes per value when
every value is in [0, 2**15) (a job's sizes and max_tokens, most of the time), 4 when every value fits
in 32 bits (line numbers, sizes and max_tokens always do), else 8.

`Texts` keeps a column of strings as one string and the end offset of each (an `Ints`): a job's
720,000 item ids cost their characters and 4 bytes apiece, where a tuple of `str` costs about 60
bytes apiece more. A value is a slice of the one string, made when read.

`taken(column, positions)` is a lazy view of a column at some positions (a part of a job's requests
reads its columns through one), not a copy.
"""

from __future__ import annotations

import sys
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, chain, compress, repeat
from operator import add, eq, is_not, mul, sub
from typing import Any, TypeVar, overload

_T = TypeVar("_T")
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


class Ints(Sequence[int]):
    """Signed 64-bit integers, immutable; equal to another `Ints` of the same values (not to a list)."""

    __slots__ = ("_data", "view")

    _data: bytes
    #: the integers as a read-only view: indexing it runs in C (a hot loop reads it, not `self[k]`)
    view: memoryview

    def __init__(self, values: Iterable[int] | bytes = ()) -> None:
        """The integers of `values` (`bytes`: their native 8-byte encoding, as `array("q").tobytes`
        gives)."""
        if isinstance(values, array) and values.typecode == "i" and values.itemsize == 4:
            data, code = _narrow4(values.tobytes())  # a 4-byte column: no 8-byte copy of it
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


def records(raw: bytes, width: int) -> Iterator[bytes]:
    """The records of `raw`, `width` bytes apiece (a job's digests), each cut in C."""
    return map(raw.__getitem__, map(slice, range(0, len(raw), width), range(width, len(raw) + 1, width)))


def _span(n: int, start: int, stop: int | None) -> tuple[int, int]:
    """The positions from `start` to `stop` of a sequence of `n` values, as `list.index` reads them."""
    lo, hi = (k + n if k < 0 else k for k in (start, n if stop is None else stop))
    return max(0, min(n, lo)), max(0, min(n, hi))


def positions_of(values: Sequence[int]) -> Sequence[int]:
    """A sequence of positions as an immutable one: a `range` kept as it is; positions that count up
    by one (a round of every id but the one probed, a sub-batch of it) as their `range`, no bytes
    per position; any other as `Ints`."""
    return values if isinstance(values, range) else counted(values)


class Texts(Sequence[str]):
    """Strings, immutable, kept as one string and each value's bounds in it; equal to another `Texts`,
    a tuple or a list of the same strings in the same order."""

    __slots__ = ("_bounds", "_text")

    _text: str
    #: where each value starts in `_text`, then where the last ends (`len(self) + 1` offsets)
    _bounds: Ints

    def __init__(self, values: Iterable[str] = ()) -> None:
        vals = values if isinstance(values, list | tuple) else list(values)
        object.__setattr__(self, "_text", "".join(vals))
        object.__setattr__(self, "_bounds", Ints(accumulate(map(len, vals), initial=0)))

    @classmethod
    def of(cls, values: Iterable[str]) -> Texts:
        """`values` as `Texts` (itself when it is one already)."""
        return values if isinstance(values, Texts) else cls(values)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Texts is immutable (cannot set {name})")

    def __len__(self) -> int:
        return len(self._bounds) - 1

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> Texts: ...
    def __getitem__(self, k: int | slice) -> str | Texts:
        if isinstance(k, slice):
            return Texts(self.at(range(len(self))[k]))
        b = self._bounds.view
        n = len(b) - 1
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("Texts index out of range")
        return self._text[b[k] : b[k + 1]]

    def __iter__(self) -> Iterator[str]:
        b = self._bounds.view
        return map(self._text.__getitem__, map(slice, b[:-1], b[1:]))

    def at(self, positions: Iterable[int]) -> Iterator[str]:
        """The values at `positions`, in their order, each read in C (no Python step per value)."""
        b = self._bounds.view
        ps = positions if isinstance(positions, range | Sequence) else list(positions)
        starts = map(b.__getitem__, ps)
        ends = map(b[1:].__getitem__, ps)
        return map(self._text.__getitem__, map(slice, starts, ends))

    def lengths(self) -> Iterator[int]:
        """The length of each value, in order, read from the bounds: no value is made."""
        b = self._bounds.view
        return map(sub, b[1:], b[:-1])

    def joined(self) -> str:
        """Every value, one after another (the one string the column keeps)."""
        return self._text

    def bounds(self) -> memoryview:
        """Where each value starts in `joined()`, then where the last ends (`len(self) + 1` offsets)."""
        return self._bounds.view

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and value in self._text and value in iter(self)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """The first position of `value` from `start` (found in the one string, in C: no list of the
        values)."""
        lo, hi = _span(len(self), start, stop)
        if isinstance(value, str):
            b, text = self._bounds.view, self._text
            at = b[lo]
            while lo < hi and (found := text.find(value, at, b[hi])) >= 0:
                k = max(lo, bisect_left(b, found))  # the first value starting at or after `found`
                while k < hi and b[k] == found:  # (empty values start where the next one does)
                    if b[k + 1] == found + len(value):
                        return k
                    k += 1
                at = found + 1
        raise ValueError(f"{value!r} is not in Texts")

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Texts):
            return self._text == other._text and self._bounds == other._bounds
        if isinstance(other, tuple | list):
            return len(other) == len(self) and all(map(str.__eq__, self, other))
        return NotImplemented

    def __hash__(self) -> int:  # equal to a tuple of the same strings, so hashed the same
        return hash(tuple(self))

    def __reduce__(self) -> tuple[type[Texts], tuple[tuple[str, ...]]]:
        return Texts, (tuple(self),)

    def __repr__(self) -> str:
        head = [self[k] for k in range(min(5, len(self)))]
        return f"Texts({len(self)}: {head!r}{' ...' if len(self) > 5 else ''})"


class LazyTexts(Texts):
    """A `Texts` whose values are made when first read, once (`_values`): a column that may never be
    read costs nothing until it is. A subclass gives `_values`, and may answer its length, a value or
    the values' lengths without making them all; any other read makes them."""

    __slots__ = ()

    def _values(self) -> Sequence[str]:
        raise NotImplementedError

    def __getattr__(self, name: str) -> Any:
        """The column's own attributes (`_text`, `_bounds`), made the first time one is read."""
        if name not in ("_text", "_bounds") or self.made:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        whole = Texts.of(self._values())
        object.__setattr__(self, "_text", whole._text)
        object.__setattr__(self, "_bounds", whole._bounds)
        return object.__getattribute__(self, name)

    @property
    def made(self) -> bool:
        """Whether the values have been made (and are kept)."""
        try:
            object.__getattribute__(self, "_text")
        except AttributeError:
            return False
        return True


class Keyed(Sequence[str]):
    """Strings each made of a `prefixes` value and a suffix of fixed width that `encode` makes of its
    record in `raw` (`width` bytes apiece): a job's custom_ids, each its item id, `-` and its digest's
    base32 (`judgecore.job.ids.custom_ids_of_digests`), kept as the ids' column (shared with the items)
    and 15 bytes apiece, where a `Texts` of them keeps about 40 bytes apiece.

    A value is made when read, a chunk at a time (`encode` is one C-level pass over a chunk's
    records); the chunk last read by position is kept (a walk by position reads the next one from
    it), nothing else. `encode` maps the records of any number of values (their bytes one after
    another) to their suffixes, in order: a module's function, so a `Keyed` pickles. Equal to a
    `Texts`, a tuple or a list of the same strings in the same order."""

    __slots__ = ("_memo", "encode", "prefixes", "raw", "width")

    #: values made at a time, walked or read by position
    CHUNK = 4096

    prefixes: Texts
    raw: bytes
    width: int
    encode: Callable[[bytes], Sequence[str]]
    _memo: tuple[int, Sequence[str]]

    def __init__(
        self, prefixes: Sequence[str], raw: bytes, width: int, encode: Callable[[bytes], Sequence[str]]
    ) -> None:
        texts = Texts.of(prefixes)
        if width < 1 or len(raw) != width * len(texts):
            raise ValueError(
                f"{len(texts)} values need {width * len(texts)} bytes of records, not {len(raw)}"
            )
        object.__setattr__(self, "prefixes", texts)
        object.__setattr__(self, "raw", bytes(raw))
        object.__setattr__(self, "width", width)
        object.__setattr__(self, "encode", encode)
        object.__setattr__(self, "_memo", (-1, ()))

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Keyed is immutable (cannot set {name})")

    def __len__(self) -> int:
        return len(self.prefixes)

    def _suffixes(self, start: int, stop: int) -> Sequence[str]:
        return self.encode(self.raw[start * self.width : stop * self.width])

    def _chunk(self, c: int) -> Sequence[str]:
        memo = self._memo
        if memo[0] != c:
            w = self.CHUNK
            memo = (c, tuple(self._suffixes(c * w, (c + 1) * w)))
            object.__setattr__(self, "_memo", memo)  # a cache of a pure function: not state
        return memo[1]

    @overload
    def __getitem__(self, k: int) -> str: ...
    @overload
    def __getitem__(self, k: slice) -> Keyed: ...
    def __getitem__(self, k: int | slice) -> str | Keyed:
        if isinstance(k, slice):
            picked = range(len(self))[k]
            return Keyed(self.prefixes[k], self._records(picked), self.width, self.encode)
        n = len(self)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("Keyed index out of range")
        return self.prefixes[k] + self._chunk(k // self.CHUNK)[k % self.CHUNK]

    def _records(self, positions: Sequence[int]) -> bytes:
        """The records of the values at `positions`, one after another (gathered in C)."""
        w, raw = self.width, self.raw
        if isinstance(positions, range) and positions.step == 1:
            return raw[positions.start * w : positions.stop * w]
        starts = list(map(mul, positions, repeat(w)))
        return b"".join(map(raw.__getitem__, map(slice, starts, map(add, starts, repeat(w)))))

    def __iter__(self) -> Iterator[str]:
        return self.at(range(len(self)))

    def at(self, positions: Iterable[int]) -> Iterator[str]:
        """The values at `positions`, in their order: only theirs made, a chunk at a time."""
        ps = positions if isinstance(positions, range | Sequence) else list(positions)
        w, at, encode = self.CHUNK, self.prefixes.at, self.encode
        parts = (
            map(str.__add__, at(ps[k : k + w]), encode(self._records(ps[k : k + w])))
            for k in range(0, len(ps), w)
        )
        return chain.from_iterable(parts)

    def suffix_length(self) -> int:
        """The length of every value's suffix (0 for an empty column): the first record's, made
        alone (the chunk kept for a walk by position stays as it is)."""
        return len(self.encode(self.raw[: self.width])[0]) if len(self) else 0

    def lengths(self) -> Iterator[int]:
        """The length of each value, told by its prefix's: no value is made."""
        return map(add, self.prefixes.lengths(), repeat(self.suffix_length()))

    def joined(self) -> str:
        """Every value, one after another."""
        return "".join(self)

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        """The first position of `value` from `start`: its prefix found in the prefixes' one string
        (in C), then its suffix compared; no value made but those."""
        lo, hi = _span(len(self), start, stop)
        cut = len(value) - self.suffix_length() if isinstance(value, str) else -1
        if cut >= 0:
            prefix, prefixes = value[:cut], self.prefixes
            while lo < hi:
                try:
                    k = prefixes.index(prefix, lo, hi)
                except ValueError:
                    break
                if self[k] == value:
                    return k
                lo = k + 1
        raise ValueError(f"{value!r} is not in Keyed")

    def __contains__(self, value: object) -> bool:
        try:
            self.index(value)
        except ValueError:
            return False
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Keyed) and self.encode is other.encode and self.width == other.width:
            return self.raw == other.raw and self.prefixes == other.prefixes
        if isinstance(other, Keyed | Texts | tuple | list):
            return len(other) == len(self) and all(map(str.__eq__, self, other))
        return NotImplemented

    def __hash__(self) -> int:  # equal to a tuple of the same strings, so hashed the same
        return hash(tuple(self))

    def __reduce__(self) -> tuple[type[Keyed], tuple[Any, ...]]:
        return Keyed, (self.prefixes, self.raw, self.width, self.encode)

    def __repr__(self) -> str:
        head = [self[k] for k in range(min(5, len(self)))]
        return f"Keyed({len(self)}: {head!r}{' ...' if len(self) > 5 else ''})"


def texts_of(values: Iterable[str]) -> Texts | Keyed:
    """`values` as an immutable column of strings: a `Keyed` one kept as it is, else `Texts.of`."""
    return values if isinstance(values, Keyed) else Texts.of(values)


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


class TextsBuilder:
    """A `Texts` made a chunk of values at a time, so that no list of every value is ever held (the
    parse of a big input adds its ids a chunk at a time). Private to the call that fills it."""

    __slots__ = ("_at", "_bounds", "_parts")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._bounds = array("q", [0])
        self._at = 0

    def extend(self, values: Sequence[str]) -> None:
        part = "".join(values)
        self._parts.append(part)
        self._bounds.extend(accumulate(map(len, values), initial=self._at))
        del self._bounds[len(self._bounds) - len(values) - 1]  # the `initial`: already the last bound
        self._at += len(part)

    def build(self) -> Texts:
        out = Texts.__new__(Texts)
        object.__setattr__(out, "_text", "".join(self._parts))
        object.__setattr__(out, "_bounds", Ints(self._bounds))
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
