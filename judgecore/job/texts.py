"""Immutable text columns: a job's ids and custom_ids (`Texts`, `Keyed`), a few bytes per value and no
object per value.

`Texts` keeps a column of strings as one string and the end offset of each (an `Ints`): a job's
720,000 item ids cost their characters and 4 bytes apiece, where a tuple of `str` costs about 60
bytes apiece more. A value is a slice of the one string, made when read.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import accumulate, chain, repeat
from operator import add, mul, sub
from typing import Any, overload

from judgecore.job.ints import Ints, IntsBuilder, span_of


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
        lo, hi = span_of(len(self), start, stop)
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


class Unread(LazyTexts):
    """`n` values that are counted and never read: the custom_ids of a plan that keeps only totals (a
    dry run on a fresh state dir), whose machine asks only how many there are. Reading one is a bug."""

    __slots__ = ("_n",)

    _n: int

    def __init__(self, n: int) -> None:
        object.__setattr__(self, "_n", n)

    def __len__(self) -> int:
        return self._n

    def _values(self) -> Sequence[str]:
        raise TypeError(f"{self!r} holds no values: they were counted, not kept")

    def __repr__(self) -> str:
        return f"Unread({self._n} values)"


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
        lo, hi = span_of(len(self), start, stop)
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


class TextsBuilder:
    """A `Texts` made a chunk of values at a time, so that no list of every value is ever held (the
    parse of a big input adds its ids a chunk at a time). Private to the call that fills it."""

    __slots__ = ("_at", "_bounds", "_parts")

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._bounds = IntsBuilder()  # 2 or 4 bytes a bound (not 8) while they fit
        self._bounds.append(0)
        self._at = 0

    def extend(self, values: Sequence[str]) -> None:
        part = "".join(values)
        self._parts.append(part)
        bounds = list(accumulate(map(len, values), initial=self._at))
        del bounds[0]  # the `initial`: already the last bound
        self._bounds.extend(bounds)
        self._at += len(part)

    def build(self) -> Texts:
        """The `Texts` of every value added (the builder is emptied: its parts are not held on)."""
        out = Texts.__new__(Texts)
        text, self._parts = "".join(self._parts), []
        bounds, self._at = self._bounds.build(), 0
        self._bounds = IntsBuilder()
        self._bounds.append(0)
        object.__setattr__(out, "_text", text)
        object.__setattr__(out, "_bounds", bounds)
        return out
