"""The nearest of some names to a word, for a typo's hint ("did you mean ...?"): `closest`, the answer
`difflib.get_close_matches(word, names, n=1, cutoff=...)` gives (Ratcliff and Obershelp's similarity,
the same ties), without loading `difflib` (and `heapq`) at every command's start: the environment's
names (`judgecore.job.knobs.unknown_env`) and the model table (`judgecore.wire.models`) are checked at
each start, a hint is given only for a typo."""

from __future__ import annotations


def closest(word: str, known: tuple[str, ...], *, cutoff: float) -> str | None:
    """The one of `known` most like `word`, if alike at least `cutoff` (0..1); None when none is:
    `difflib.get_close_matches(word, known, n=1, cutoff=cutoff)`'s answer (the same similarity, the
    same ties, for words under 200 characters, past which difflib ignores its popular characters),
    without `difflib` (and `heapq`) loaded at every command's start for a typo's hint."""
    scored = [(2 * _matched(k, word) / (len(k) + len(word)) if k or word else 1.0, k) for k in known]
    best = max((pair for pair in scored if pair[0] >= cutoff), default=None)
    return best[1] if best is not None else None


def _matched(a: str, b: str) -> int:
    """How many characters `a` and `b` have in matching blocks (Ratcliff and Obershelp, as difflib's
    `SequenceMatcher(None, a, b)`: the longest common block, earliest in `a` then in `b`, then the same
    on either side of it)."""
    size, at_a, at_b = 0, 0, 0
    for i in range(len(a)):
        for j in range(len(b)):
            k = 0
            while i + k < len(a) and j + k < len(b) and a[i + k] == b[j + k]:
                k += 1
            if k > size:
                size, at_a, at_b = k, i, j
    if not size:
        return 0
    return size + _matched(a[:at_a], b[:at_b]) + _matched(a[at_a + size :], b[at_b + size :])


__all__ = ["closest"]
