"""What a run resumes from: the ids in flight (the `in_flight` view), the final ids, the batches still
waiting, and the first final outcomes the invalid-request breaker counts."""

from __future__ import annotations

import sqlite3

from adapters.checkpoint.store.schema import FINAL_SQL as _FINAL_SQL
from judgecore.decide.resume import JobState
from judgecore.results.outcomes import FailureClass
from judgecore.run.subbatch import Checkpoint, SubState, SubView


class Resume:
    """The checkpoint as a run resumes from it (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def job_state(self) -> JobState:
        """Final ids, and ids in sub-batches that may still answer for them (never resent while there).

        `attempts` stays empty: the retry budget is per run (`--max-attempts`), counted by the run."""
        in_flight = frozenset(r[0] for r in self._conn.execute("SELECT custom_id FROM in_flight"))
        return JobState(final=self._final_ids(), in_flight=in_flight)

    def waiting_batches(self) -> dict[str, str]:
        """custom_id -> batch id for ids sitting in a created batch with no result recorded under it yet."""
        q = "SELECT custom_id, batch_id FROM in_flight WHERE batch_id IS NOT NULL ORDER BY sub_id"
        return dict(self._conn.execute(q).fetchall())

    def first_failures(self, k: int) -> list[str | None]:
        """The failure classes (None for none) of the job's first `k` *final* outcomes, in arrival order
        (what the invalid-request breaker counts: a retriable outcome says nothing about the payload)."""
        return [
            r[0]
            for r in self._conn.execute(
                f"SELECT failure FROM outcomes WHERE status IN ({_FINAL_SQL}) ORDER BY row LIMIT ?", (k,)
            )
        ]

    def checkpoint(self, breaker_k: int = 20, *, lane: str | None = None) -> Checkpoint:
        """The pure view a batch run starts from: every sub-batch (of `lane` only, when given: a panel's
        batch lanes each run their own machine; with its ids not yet answered under it, for those in
        flight), the final ids, the earliest final outcomes for the breaker, and the highest sub_id of
        any lane (a lane's new sub-batches are numbered past every lane's)."""

        ids: dict[int, list[str]] = {}
        for sub_id, cid in self._conn.execute("SELECT sub_id, custom_id FROM in_flight"):
            ids.setdefault(sub_id, []).append(cid)
        subs = tuple(
            SubView(
                sub_id=r.sub_id,
                round=r.round,
                n=r.n,
                intent_at=r.intent_at,
                state=SubState(r.state),
                batch_id=r.batch_id,
                created_at=r.created_at,
                expires_at=r.expires_at,
                group=r.group,
                ids=tuple(ids.get(r.sub_id, ())),
            )
            for r in self.sub_batches(lane=lane)
        )
        first = tuple(None if f is None else FailureClass(f) for f in self.first_failures(breaker_k))
        top = self._conn.execute("SELECT COALESCE(MAX(sub_id), 0) FROM sub_batches").fetchone()[0]
        return Checkpoint(subs=subs, final=self._final_ids(), first_final=first, top_sub=int(top))

    def _final_ids(self) -> frozenset[str]:
        # each id's winner is kept (`latest`): one row per id, and final when any of its outcomes is
        return frozenset(
            cid
            for (cid,) in self._conn.execute(f"SELECT custom_id FROM latest WHERE status IN ({_FINAL_SQL})")
        )
