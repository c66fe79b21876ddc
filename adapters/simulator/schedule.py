"""A fault schedule's value: which numbered call gets which fault, shared by both wires' scenarios."""

from __future__ import annotations

from collections.abc import Iterable, Mapping


def schedule(
    value: Mapping[int, str] | Iterable[str] | Iterable[tuple[int, str]],
) -> tuple[tuple[int, str], ...]:
    """A schedule keyed by 1-based call number; a plain sequence of names counts from 1 ("" = no fault)."""
    if isinstance(value, Mapping):
        pairs = [(int(k), str(v)) for k, v in value.items()]
    else:
        items = list(value)
        if all(isinstance(x, str) for x in items):
            pairs = [(i, str(x)) for i, x in enumerate(items, start=1)]
        else:
            pairs = [(int(k), str(v)) for k, v in items]  # type: ignore[misc]
    return tuple(sorted((k, v) for k, v in pairs if v and v != "ok"))


__all__ = ["schedule"]
