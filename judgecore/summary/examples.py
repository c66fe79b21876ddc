"""Which items the report quotes: a few per score value and per failure class, chosen by a seed.

The choice is a pure function of the records and the seed (each candidate's rank is a digest of the seed
and its custom_id), so one checkpoint always shows the same examples, and a different seed shows others.
The quoted text is the checkpoint's own (the item's prompt as sent, the judge's answer, the verdict read
from it), cut to a few hundred characters; nothing else goes into an example.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from judgecore.summary import numfmt as fig
from judgecore.summary.job_summary import score_of
from judgecore.summary.stats import _sort_key
from judgecore.values import frozen


@frozen(kw_only=True)
class ExampleGroup:
    """The examples of one score value (`kind` "score") or one failure class (`kind` "class")."""

    kind: str
    key: str
    total: int  # items with this value or class
    custom_ids: tuple[str, ...]


_label = fig.label  # one rule for a value written as a label (`judgecore.summary.numfmt`)


def _rank(seed: str, custom_id: str) -> str:
    return hashlib.sha256(f"{seed}\x00{custom_id}".encode()).hexdigest()


def choose_examples(
    records: Sequence[Mapping[str, Any]],
    *,
    score_field: str | None,
    seed: str,
    per: int = 2,
    values: int = 12,
) -> tuple[ExampleGroup, ...]:
    """`per` examples for each score value (at most `values` of them, the most frequent, shown in
    value order) and for each failure class, each set in seeded order."""
    by_value: dict[Any, list[str]] = {}
    by_class: dict[str, list[str]] = {}
    for r in records:
        # the summary's own reading of an item's score (a pairwise verdict's is its winner)
        value = score_of(r, score_field) if isinstance(r.get("verdict"), Mapping) else None
        if value is not None and not isinstance(value, dict | list):
            by_value.setdefault(value, []).append(r["custom_id"])
        elif r.get("error"):
            by_class.setdefault(str(r["error"].get("class")), []).append(r["custom_id"])
    kept = sorted(by_value, key=lambda v: (-len(by_value[v]), _sort_key(v)))[:values]
    out = []
    for v in sorted(kept, key=_sort_key):
        ids = sorted(by_value[v], key=lambda c: _rank(seed, c))
        out.append(ExampleGroup(kind="score", key=_label(v), total=len(ids), custom_ids=tuple(ids[:per])))
    for c in sorted(by_class):
        ids = sorted(by_class[c], key=lambda c2: _rank(seed, c2))
        out.append(ExampleGroup(kind="class", key=c, total=len(ids), custom_ids=tuple(ids[:per])))
    return tuple(out)


def excerpt(text: str | None, limit: int = 600) -> str:
    """`text` cut at `limit` characters (at a word where one is near), marked with an ellipsis."""
    if not text:
        return ""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit * 0.8 else cut).rstrip() + " …"


def prompt_of(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user turn of a request's messages (what the judge was asked)."""
    for m in reversed(messages):
        if m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return ""
