"""Whether a job's ids repeat, told from 8 bytes an id, not the ids: what a plan that keeps no column
of its items (a dry run on a fresh state dir) looks for repeated ids with.

`SeenIds` keeps the `hash` of each id as a float (8 bytes, 53 bits of it), in buckets by value: a
batch of them is sorted once (in C) and cut into the buckets' ranges, so at the end each bucket is
looked at alone (a set of a 64th of the ids' hashes at a time, never a list or a set of them all). Equal ids have equal hashes: no equal pair of hashes, no
repeated id. An equal pair may be two ids whose hashes meet (about 1 in 200 jobs of 10,000,000 ids),
so `repeats` gives the hashes to look at, and `first_repeat` walks the ids again (a second read of
the input, only then) to name the first repeated id and both its lines, as a parse names it. A caller
may `take` the buckets' hashes as they grow and keep them elsewhere (the shell, on disk: then the
memory is flat in the job's size), handing them back to `repeats` a bucket at a time.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import partial
from itertools import chain, compress, islice
from operator import eq

from judgecore.job.errors import DuplicateIdError

#: the buckets the hashes are kept in, by value (each a 64th of the range of a 64-bit hash)
_BUCKETS = 64
_EDGES = tuple(-(2.0**63) + k * 2.0**64 / _BUCKETS for k in range(1, _BUCKETS))
#: the hashes held before they are first cut into the buckets (a job of fewer ids never sorts them),
#: then between two cuts (a sort of a few is the cheaper, 0.26 against 0.32 s at 1,000,000 ids)
_FIRST_BATCH = 1 << 18
_BATCH = 1 << 14


def id_hashes(ids: Iterable[str]) -> list[float]:
    """What `SeenIds` keeps of each id, in order: its `hash`, as a float."""
    return list(map(float, map(hash, ids)))


class SeenIds:
    """The hashes of the ids added so far, 8 bytes apiece (see the module docstring). Private to the
    call that fills it."""

    __slots__ = ("_buckets", "_n", "_pending")

    def __init__(self) -> None:
        #: each bucket's hashes, one array a batch (none grown: no spare room kept past its end)
        self._buckets: list[list[array[float]]] = []
        self._pending: array[float] = array("d")  # the hashes not cut into the buckets yet
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def add(self, ids: Iterable[str]) -> None:
        """A chunk of ids, their hashes kept (in C); a batch at a time sorted once into the buckets."""
        self.add_hashes(map(hash, ids))

    def add_hashes(self, hashes: Iterable[int]) -> None:
        """Hashes of ids (`hash` of each), kept as `add` keeps them, a batch at a time."""
        it = iter(hashes)
        while True:
            n, batch = len(self._pending), _BATCH if self._buckets else _FIRST_BATCH
            self._pending.extend(map(float, islice(it, max(1, batch - n))))
            added = len(self._pending) - n
            self._n += added
            if len(self._pending) >= batch:
                self._spill()
            elif not added:
                return

    def _spill(self) -> None:
        """The pending hashes sorted once and cut into the buckets' ranges (each cut an array, in C)."""
        if not self._buckets:
            self._buckets = [[] for _ in range(_BUCKETS)]
        if not self._pending:
            return
        ordered = sorted(self._pending)
        self._pending = array("d")
        cuts = [0, *map(partial(bisect_left, ordered), _EDGES), len(ordered)]
        for bucket, lo, hi in zip(self._buckets, cuts[:-1], cuts[1:], strict=True):
            if hi > lo:
                bucket.append(array("d", ordered[lo:hi]))

    @property
    def held(self) -> int:
        """How many hashes the buckets hold (the pending ones aside)."""
        return sum(len(part) for parts in self._buckets for part in parts)

    def take(self) -> list[list[array[float]]]:
        """Each bucket's hashes, handed over and no longer held (the pending ones cut in first): for
        a caller that keeps them elsewhere (on disk) and gives them back to `repeats`."""
        self._spill()
        out, self._buckets = self._buckets, [[] for _ in range(_BUCKETS)]
        return out

    def repeats(self, taken: Sequence[Iterable[array[float]]] = ()) -> frozenset[float]:
        """The hashes kept more than once: empty when no id repeats (then none does). `taken`: each
        bucket's hashes handed over by `take` (read back a bucket at a time). Each bucket (or the
        pending hashes of a job too small to have spilled) is a set of its values, and only one with
        fewer distinct values than values is sorted for them."""
        if self._buckets or taken:
            self._spill()
        out: set[float] = set()
        for k, kept in enumerate(self._buckets or [[self._pending]]):
            parts = [*(taken[k] if taken else ()), *kept]
            if len(set(chain.from_iterable(parts))) == sum(map(len, parts)):
                continue
            ordered = sorted(chain.from_iterable(parts))
            out.update(compress(ordered, map(eq, ordered, islice(ordered, 1, None))))
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
