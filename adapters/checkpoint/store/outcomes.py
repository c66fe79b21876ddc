"""Recording outcomes (in groups, durably) and reading each item's latest one, and the counts by it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from operator import attrgetter
from typing import Any

import orjson

from adapters.checkpoint.store.schema import FINAL_SQL as _FINAL_SQL
from judgecore.results.outcomes import FINAL_STATUSES, FailureClass, Outcome, Status, StopDetails, Usage
from judgecore.values import frozen


@frozen(kw_only=True)
class OutcomeRow:
    """One recorded outcome, ready for the store."""

    custom_id: str
    outcome: Outcome
    route: str
    at: float
    sub_id: int | None = None
    batch_id: str | None = None
    attempts: int = 1


class Outcomes:
    """The recorded outcomes (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def writer(self, group: int = 1000, *, refetchable: bool = False) -> OutcomeWriter:
        """A group-committing writer of outcomes (see `OutcomeWriter`).

        `refetchable=True` is for batch harvests: the rows can be fetched again from the API (results
        stay 29 days), so each group commit is made safe against a process crash (kill -9) without
        an fsync, and the fsync happens once, when the batch is marked harvested. Every other write
        (sync answers that were paid for, intents, batch ids) is fsynced at its own commit.
        """
        return OutcomeWriter(self._conn, group, fsync_each_group=not refetchable)

    def record_outcomes(self, rows: Iterable[OutcomeRow]) -> int:
        """Record outcomes in one transaction; returns how many were new."""
        with self.writer() as w:
            for row in rows:
                w.add(row)
        return w.added

    def last_outcome_row(self) -> int:
        """The id of the newest outcome row (0 for none): it moves whenever anything is recorded."""
        return int(self._conn.execute("SELECT COALESCE(MAX(row), 0) FROM outcomes").fetchone()[0])

    def counts(self) -> dict[str, int]:
        """Items by their latest status (`pending` for none or a non-final one)."""
        out = dict.fromkeys(TALLY, 0)
        # Each id's winner is kept (`latest`); only final ones count, the rest of the items are pending.
        (n_items,) = self._conn.execute("SELECT COUNT(*) FROM items").fetchone()
        for status, n in self._conn.execute(
            f"SELECT status, COUNT(*) FROM latest WHERE status IN ({_FINAL_SQL}) "
            "AND custom_id IN (SELECT custom_id FROM items) GROUP BY status"
        ):
            key = status if status in out else "pending"
            out[key] += n
        out["pending"] += n_items - sum(out.values())
        return out

    def latest_rows(self) -> Iterator[tuple[Any, ...]]:
        """Every item's latest outcome as the checkpoint holds it, in input order, one tuple of columns
        each (the columns of `judgecore.results.output_line.LatestRow`, in its order; all None but `custom_id` and `attempts` 0 for an item with none).

        A final outcome wins over any later non-final one (a final id is never sent again, but a
        duplicate result line could still arrive), and the newest among equals; `attempts` is the sends
        used over all of an id's outcomes. Each id's winner is kept at write time (the `latest` table),
        so this reads by key, in the items' order, without grouping the outcomes. Streams.
        """
        q = (
            "SELECT i.custom_id, o.status, o.failure, o.reason, o.text, o.stop_reason, o.model, o.usage, "
            "o.error_type, o.error_message, o.retry_after, o.route, o.batch_id, COALESCE(l.attempts, 0), "
            f"{self._answer_columns()} "
            "FROM items i LEFT JOIN latest l ON l.custom_id = i.custom_id LEFT JOIN outcomes o ON o.row = l.row "
            "ORDER BY i.seq"
        )
        return self._conn.execute(q)

    def latest(self) -> Iterator[tuple[str, Outcome | None, str | None, str | None, int]]:
        """`(custom_id, latest outcome, route, batch_id, attempts)` for every item in input order (the
        winner `latest_rows` reads, as an `Outcome`). Streams: memory does not grow with the job."""
        for r in self.latest_rows():
            outcome = None
            if r[1] is not None:
                usage = Usage(**orjson.loads(r[7])) if r[7] else None
                outcome = Outcome(
                    status=_STATUS[r[1]],
                    failure=_FAILURE[r[2]],
                    reason=r[3],
                    text=r[4],
                    stop_reason=r[5],
                    model=r[6],
                    usage=usage,
                    error_type=r[8],
                    error_message=r[9],
                    retry_after=r[10],
                    error_code=r[14],
                    stop_details=StopDetails.from_json(orjson.loads(r[15])) if r[15] else None,
                )
            yield r[0], outcome, r[11], r[12], r[13]

    def _answer_columns(self) -> str:
        """`o.error_code, o.stop_details`, or NULLs in a checkpoint opened read-only from before them."""
        columns = {r[1] for r in self._conn.execute("PRAGMA table_info(outcomes)")}
        if "stop_details" in columns:
            return "o.error_code, o.stop_details"
        return "NULL, NULL"

    def succeeded_texts(self) -> Iterator[str | None]:
        """The text of every id whose latest outcome is `succeeded` (a final outcome wins over a later
        non-final one, and among finals the newest: as `latest`), without building outcomes."""
        q = "SELECT o.text FROM latest l JOIN outcomes o ON o.row = l.row WHERE l.status = 'succeeded'"
        return (text for (text,) in self._conn.execute(q))


_STATUS = {s.value: s for s in Status}
#: the keys of a job's counts, in the order they are shown: each final status, then `pending`
TALLY = (
    *(s.value for s in Status if s in FINAL_STATUSES),
    "pending",
)  # a dict lookup, not an Enum call, per row of `latest`


# What a status and a failure class are stored as, by a dict lookup (an Enum's `.value` is a Python
# property: it cost more than the rest of binding a harvested row's columns).
_STATUS_TEXT: dict[Status, str] = {s: s.value for s in Status}
_FAILURE_TEXT: dict[FailureClass | None, str | None] = {None: None, **{f: f.value for f in FailureClass}}


_FAILURE: dict[str | None, FailureClass | None] = {None: None, **{f.value: f for f in FailureClass}}

#: A usage as the `usage` column holds it: the JSON object of its four counts, in this order (what
#: `orjson.dumps` makes of them, by one `%` of the counts `_usage_counts` reads in C: no dict per row).
_USAGE_JSON = (
    '{"input_tokens":%d,"output_tokens":%d,"cache_creation_input_tokens":%d,"cache_read_input_tokens":%d}'
)
_usage_counts = attrgetter(
    "input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"
)


class OutcomeWriter:
    """Buffers outcome rows and commits them in groups; `flush()` makes everything so far durable.

    Rows for a sub-batch are unique per custom_id: a result line seen twice (a duplicate in the
    stream, or a harvest resumed after a cut) is recorded once, and `added` counts only new rows.
    """

    def __init__(self, conn: sqlite3.Connection, group: int, *, fsync_each_group: bool = True) -> None:
        self._conn = conn
        self._group = group
        self._fsync = fsync_each_group
        self._buf: list[tuple[Any, ...]] = []
        self.added = 0

    def __enter__(self) -> OutcomeWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush()

    def add(self, row: OutcomeRow) -> None:
        self.add_outcome(
            row.custom_id,
            row.outcome,
            route=row.route,
            at=row.at,
            sub_id=row.sub_id,
            batch_id=row.batch_id,
            attempts=row.attempts,
        )

    def add_outcome(
        self,
        custom_id: str,
        o: Outcome,
        *,
        route: str,
        at: float,
        sub_id: int | None = None,
        batch_id: str | None = None,
        attempts: int = 1,
    ) -> None:
        """`add` without building an `OutcomeRow` first (the harvest's per-line path)."""
        u = o.usage
        usage = None if u is None else _USAGE_JSON % _usage_counts(u)
        self._buf.append(
            (
                custom_id,
                sub_id,
                route,
                batch_id,
                _STATUS_TEXT[o.status],
                _FAILURE_TEXT[o.failure],
                o.reason,
                o.text,
                o.stop_reason,
                o.model,
                usage,
                o.error_type,
                o.error_message,
                o.retry_after,
                attempts,
                at,
                o.error_code,
                orjson.dumps(o.stop_details.to_json()).decode() if o.stop_details is not None else None,
            )
        )
        if len(self._buf) >= self._group:
            self.flush()

    def add_rows(
        self, rows: Iterable[tuple[str, Outcome, int | None, str | None]], *, route: str, at: float
    ) -> None:
        """`add_outcome` for each `(custom_id, outcome, sub_id, batch_id)` of `rows` (a harvest's group of
        lines, as its fold lets them through), each one attempt at `at`: the same columns and group
        commits, built in one loop (no call with keywords, no usage dict, per row)."""
        buf, group, status_text, failure_text = self._buf, self._group, _STATUS_TEXT, _FAILURE_TEXT
        for custom_id, o, sub_id, batch_id in rows:
            u, details = o.usage, o.stop_details
            buf.append(
                (
                    custom_id,
                    sub_id,
                    route,
                    batch_id,
                    status_text[o.status],
                    failure_text[o.failure],
                    o.reason,
                    o.text,
                    o.stop_reason,
                    o.model,
                    None if u is None else _USAGE_JSON % _usage_counts(u),
                    o.error_type,
                    o.error_message,
                    o.retry_after,
                    1,
                    at,
                    o.error_code,
                    None if details is None else orjson.dumps(details.to_json()).decode(),
                )
            )
            if len(buf) >= group:
                self.flush()

    def flush(self) -> None:
        if not self._buf:
            return
        if not self._fsync:
            # WAL + synchronous=NORMAL: the commit reaches the OS (a kill -9 cannot lose it) but is not
            # fsynced; the next synchronous=FULL commit (the batch's "harvested" mark) fsyncs the WAL,
            # and a power loss before it loses only a suffix, which the rerun fetches again.
            self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            # the rows inserted, not the trigger's writes to `latest` (which `total_changes` counts too:
            # `added` was twice the new rows); a duplicate ignored counts none
            added = self._conn.executemany(
                "INSERT OR IGNORE INTO outcomes (custom_id, sub_id, route, batch_id, status, failure, reason, "
                "text, stop_reason, model, usage, error_type, error_message, retry_after, attempts, at, "
                "error_code, stop_details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._buf,
            ).rowcount
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        try:
            self._conn.execute("COMMIT")
        finally:
            if not self._fsync:
                self._conn.execute("PRAGMA synchronous=FULL")
        self.added += added
        self._buf.clear()
