"""Whether a job's ids repeat, told from 8 bytes an id, not the ids: what a plan that keeps no column
of its items (a dry run on a fresh state dir) looks for repeated ids with.

`SeenIds` keeps the `hash` of each id as a float (8 bytes, 53 bits of it), in buckets by value: each
chunk of ids added is sorted once (in C) and cut into the buckets' ranges, so at the end each bucket
is a few sorted runs, merged by one sort of that bucket alone (a 64th of the ids as objects at a
time, never a list or a set of them all). Equal ids have equal hashes: no equal pair of hashes, no
repeated id. An equal pair may be two ids whose hashes meet (about 1 in 200 jobs of 10,000,000 ids),
so `repeats` gives the hashes to look at, and `first_repeat` walks the ids again (a second read of
the input, only then) to name the first repeated id and both its lines, as a parse names it.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import compress, islice
from operator import eq

from judgecore.job.errors import DuplicateIdError

#: the buckets the hashes are kept in, by value (each a 64th of the range of a 64-bit hash)
_BUCKETS = 64
_EDGES = tuple(-(2.0**63) + k * 2.0**64 / _BUCKETS for k in range(1, _BUCKETS))


def id_hashes(ids: Iterable[str]) -> list[float]:
    """What `SeenIds` keeps of each id, in order: its `hash`, as a float."""
    return list(map(float, map(hash, ids)))


class SeenIds:
    """The hashes of the ids added so far, 8 bytes apiece (see the module docstring). Private to the
    call that fills it."""

    __slots__ = ("_buckets", "_n")

    def __init__(self) -> None:
        self._buckets = [array("d") for _ in range(_BUCKETS)]
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, ids: Iterable[str]) -> None:
        """A chunk of ids, one sort of their hashes cut into the buckets (each `extend` in C)."""
        ordered = sorted(map(float, map(hash, ids)))
        cuts = [0, *map(partial(bisect_left, ordered), _EDGES), len(ordered)]
        for bucket, lo, hi in zip(self._buckets, cuts[:-1], cuts[1:], strict=True):
            if hi > lo:
                bucket.extend(ordered[lo:hi])
        self._n += len(ordered)

    def repeats(self) -> frozenset[float]:
        """The hashes kept more than once: empty when no id repeats (then none does)."""
        out: set[float] = set()
        for bucket in self._buckets:
            ordered = sorted(bucket)
            pairs = list(map(eq, ordered, islice(ordered, 1, None)))
            if any(pairs):
                out.update(compress(ordered, pairs))
        return frozenset(out)


def first_repeat(
    chunks: Iterable[tuple[Sequence[str], Sequence[int]]], repeats: frozenset[float]
) -> DuplicateIdError | None:
    """The first id of `chunks` (each its ids and their lines, in order) equal to one before it, as
    `DuplicateIdError` naming both lines; None when the hashes in `repeats` only met. Only the ids
    whose hash is in `repeats` are held."""
    if not repeats:
        return None
    seen: dict[str, int] = {}
    for ids, lines in chunks:
        hashes = id_hashes(ids)
        for k in compress(range(len(hashes)), map(repeats.__contains__, hashes)):
            item_id, line = ids[k], lines[k]
            if item_id in seen:
                return DuplicateIdError(item_id, seen[item_id], line)
            seen[item_id] = line
    return None


__all__ = ["SeenIds", "first_repeat", "id_hashes"]
