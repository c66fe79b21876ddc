"""The items' messages, kept in the checkpoint while a run sends, so the run holds none in memory."""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterable, Iterator, Sequence

_IN_CHUNK = 500


class KeptMessages:
    """The kept messages (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def messages_missing(self) -> list[str]:
        """The custom_ids of bound items whose messages are not kept yet (all of a new job's)."""
        q = (
            "SELECT i.custom_id FROM items i LEFT JOIN item_messages m ON m.custom_id = i.custom_id "
            "WHERE m.custom_id IS NULL ORDER BY i.seq"
        )
        return [r[0] for r in self._conn.execute(q)]

    def messages_missing_count(self) -> int:
        """How many bound items' messages are not kept yet (all of a new job's), counted by SQLite."""
        q = (
            "SELECT COUNT(*) FROM items i LEFT JOIN item_messages m ON m.custom_id = i.custom_id "
            "WHERE m.custom_id IS NULL"
        )
        return int(self._conn.execute(q).fetchone()[0])

    def keep_messages(self, rows: Iterable[tuple[str, bytes]]) -> None:
        """Keep each bound item's serialized messages (`(custom_id, bytes)`); they never change under
        an id (a changed item is a content conflict), so one kept already is left as it is."""
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO item_messages (custom_id, messages) VALUES (?, ?)", rows)

    @contextlib.contextmanager
    def keeping_messages(self) -> Iterator[Callable[[Sequence[str], Sequence[bytes]], None]]:
        """`keep_messages` a part at a time, in one transaction: the block yields a function that
        keeps `(custom_ids, messages)` (a parse's blocks, as it reads them); all are committed when the
        block ends, none when it raises."""
        q = "INSERT OR IGNORE INTO item_messages (custom_id, messages) VALUES (?, ?)"
        with self._tx() as c:
            many = c.executemany
            yield lambda cids, messages: many(q, zip(cids, messages, strict=True))

    def messages_of(self, custom_ids: Sequence[str]) -> list[bytes]:
        """The kept messages of these custom_ids, in the order given; `KeyError` for one not kept."""
        got: dict[str, bytes] = {}
        q = "SELECT custom_id, messages FROM item_messages WHERE custom_id IN ({})"
        for k in range(0, len(custom_ids), _IN_CHUNK):
            part = custom_ids[k : k + _IN_CHUNK]
            got.update(self._conn.execute(q.format(",".join("?" * len(part))), part))
        return [got[c] for c in custom_ids]
