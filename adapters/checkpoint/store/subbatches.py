"""Sub-batch records: an intent (its custom_ids) before the create call, the batch id and `expires_at`
after it, and each state the sub-batch moves to (decided by `judgecore.run.subbatch`'s table)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from adapters.checkpoint.store.schema import has_lane
from judgecore.run.subbatch import SubState

# A sub-batch row's `state` is a `judgecore.run.subbatch.SubState`, moved only through its table; the
# states holding ids in flight are `judgecore.run.subbatch.IN_FLIGHT`. `grp` is the orphan group of an
# ambiguous adoption (see `judgecore.run.batch.batching.Adoption`), None for every other sub-batch.


@attrs.frozen(kw_only=True)
class SubBatchRow:
    """One sub-batch as the checkpoint knows it."""

    sub_id: int
    round: int
    n: int
    bytes: int
    intent_at: float
    batch_id: str | None
    created_at: float | None
    expires_at: float | None
    state: str
    note: str | None
    group: int | None = None
    #: the panel lane whose batch it is (`adapters.run.lanes.lane_of`: the provider it was sent to);
    #: None in a dir an earlier version wrote, not yet named (`SubBatches.name_lanes`)
    lane: str | None = None


class SubBatches:
    """The sub-batch records (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def record_intent(
        self,
        *,
        round: int,
        custom_ids: Sequence[str],
        n_bytes: int,
        at: float,
        sub_id: int | None = None,
        lane: str | None = None,
    ) -> int:
        """Durably record the intent to create a batch of these ids on `lane` (its provider); returns
        its `sub_id` (the one given, or the next free one)."""
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO sub_batches (sub_id, round, n, bytes, intent_at, state, lane) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (sub_id, round, len(custom_ids), n_bytes, at, SubState.INTENT.value, lane),
            )
            sub_id = int(cur.lastrowid or 0)
            c.executemany(
                "INSERT INTO sub_batch_ids (sub_id, custom_id) VALUES (?, ?)",
                ((sub_id, cid) for cid in custom_ids),
            )
        return sub_id

    def restamp_intent(self, sub_id: int, at: float) -> None:
        """An intent is about to be sent again (no batch was made for it so far): orphan matching
        looks for its batch from `at` on."""
        with self._tx() as c:
            c.execute("UPDATE sub_batches SET intent_at = ? WHERE sub_id = ?", (at, sub_id))

    def record_created(
        self,
        sub_id: int,
        *,
        batch_id: str,
        created_at: float,
        expires_at: float,
        note: str | None = None,
        group: int | None = None,
    ) -> None:
        """The batch of intent `sub_id` exists (created, or adopted as an orphan of `group`)."""
        with self._tx() as c:
            c.execute(
                "UPDATE sub_batches SET batch_id = ?, created_at = ?, expires_at = ?, state = ?, "
                "note = COALESCE(?, note), grp = ? WHERE sub_id = ?",
                (batch_id, created_at, expires_at, SubState.LIVE.value, note, group, sub_id),
            )

    def set_state(
        self, sub_id: int, state: SubState, note: str | None = None, group: int | None = None
    ) -> None:
        """Write a sub-batch's new state (decided by `judgecore.run.subbatch`'s table), and its orphan group."""
        with self._tx() as c:
            c.execute(
                "UPDATE sub_batches SET state = ?, note = COALESCE(?, note), grp = COALESCE(?, grp) WHERE sub_id = ?",
                (state, note, group, sub_id),
            )

    def name_lanes(self, lane: str) -> int:
        """Name `lane` the lane of every sub-batch an earlier version recorded without one (it had one
        batch lane: the one the job's batches go on, as its caller knows); returns how many."""
        if not has_lane(self._conn):  # a read-only open of an older dir: nothing to name
            return 0
        if self._conn.execute("SELECT 1 FROM sub_batches WHERE lane IS NULL LIMIT 1").fetchone() is None:
            return 0
        with self._tx() as c:
            return c.execute("UPDATE sub_batches SET lane = ? WHERE lane IS NULL", (lane,)).rowcount

    def sub_batches(
        self, states: Sequence[str] | None = None, *, lane: str | None = None
    ) -> list[SubBatchRow]:
        """The sub-batches (in `states`, of `lane`: every lane when None), by sub_id."""
        named = has_lane(self._conn)
        q = (
            "SELECT sub_id, round, n, bytes, intent_at, batch_id, created_at, expires_at, state, note, grp, "
            f"{'lane' if named else 'NULL'} FROM sub_batches"
        )
        where: list[str] = []
        args: tuple[Any, ...] = ()
        if states is not None:
            where.append(f"state IN ({','.join('?' * len(states))})")
            args = tuple(states)
        if lane is not None:
            where.append("lane = ?" if named else "? IS NULL")
            args = (*args, lane)
        if where:
            q += " WHERE " + " AND ".join(where)
        return [
            SubBatchRow(
                sub_id=r[0],
                round=r[1],
                n=r[2],
                bytes=r[3],
                intent_at=r[4],
                batch_id=r[5],
                created_at=r[6],
                expires_at=r[7],
                state=r[8],
                note=r[9],
                group=r[10],
                lane=r[11],
            )
            for r in self._conn.execute(q + " ORDER BY sub_id", args)
        ]

    def sub_batch_ids(self, sub_id: int) -> list[str]:
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT s.custom_id FROM sub_batch_ids s LEFT JOIN items i ON i.custom_id = s.custom_id "
                "WHERE s.sub_id = ? ORDER BY i.seq",
                (sub_id,),
            )
        ]

    def iter_sub_batch_ids(self, sub_id: int) -> Iterator[str]:
        """custom_ids of a sub-batch, streamed (no list of the whole sub-batch is built)."""
        for r in self._conn.execute("SELECT custom_id FROM sub_batch_ids WHERE sub_id = ?", (sub_id,)):
            yield r[0]

    def unharvested_ids(self, sub_id: int) -> list[str]:
        """custom_ids of a sub-batch with no outcome recorded under it (after a harvest: no result line)."""
        return [
            r[0]
            for r in self._conn.execute(
                "SELECT s.custom_id FROM sub_batch_ids s WHERE s.sub_id = ? AND NOT EXISTS ("
                "  SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id)",
                (sub_id,),
            )
        ]
