"""An immutable column of integers, 8 bytes each: what the columnar values (`Items`, `Requests`) keep
their line numbers, sizes, max_tokens and positions in.

An `array("q")` is as compact but mutable: a frozen value holding one could be changed behind its
back. `Ints` keeps the bytes (immutable) and reads them through a read-only view, so it is as cheap to
read and as small as the array, and it hashes and compares by value.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

_WIDTH = array("q").itemsize


class Ints(Sequence[int]):
    """Signed 64-bit integers, immutable; equal to another `Ints` of the same values (not to a list)."""

    __slots__ = ("_data", "view")

    _data: bytes
    #: the integers as a read-only view: indexing it runs in C (a hot loop reads it, not `self[k]`)
    view: memoryview

    def __init__(self, values: Iterable[int] | bytes = ()) -> None:
        """The integers of `values` (`bytes`: their native 8-byte encoding, as `array.tobytes` gives)."""
        if isinstance(values, bytes):
            data = values
        elif isinstance(values, array) and values.typecode == "q":
            data = values.tobytes()
        else:
            data = array("q", values).tobytes()
        object.__setattr__(self, "_data", data)
        object.__setattr__(self, "view", memoryview(data).cast("q"))

    @classmethod
    def of(cls, values: Iterable[int]) -> Ints:
        """`values` as `Ints` (itself when it is one already)."""
        return values if isinstance(values, Ints) else cls(values)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Ints is immutable (cannot set {name})")

    def __len__(self) -> int:
        return len(self._data) // _WIDTH

    @overload
    def __getitem__(self, k: int) -> int: ...
    @overload
    def __getitem__(self, k: slice) -> Ints: ...
    def __getitem__(self, k: int | slice) -> int | Ints:
        if isinstance(k, slice):
            return Ints(self.view[k].tobytes())
        return self.view[k]  # type: ignore[no-any-return]

    def __iter__(self) -> Iterator[int]:
        return iter(self.view)

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        return self.view.tolist().index(value, start, len(self) if stop is None else stop)

    def tolist(self) -> list[int]:
        return self.view.tolist()  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Ints):
            return self._data == other._data
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._data)

    def __reduce__(self) -> tuple[type[Ints], tuple[bytes]]:
        return Ints, (self._data,)

    def __repr__(self) -> str:
        head = self.view[:8].tolist()
        return f"Ints({head!r}{' ...' if len(self) > 8 else ''})"


def ints(values: Iterable[int]) -> Ints:
    """`Ints.of(values)`."""
    return Ints.of(values)


def positions_of(values: Sequence[int]) -> Sequence[int]:
    """A sequence of positions as an immutable one: a `range` kept as it is, anything else as `Ints`."""
    return values if isinstance(values, range | Ints) else Ints(values)
