"""The checkpoint's tables, the view of the ids in flight, and how a checkpoint of an earlier version
is brought up to date (idempotently, at every writable open)."""

from __future__ import annotations

import sqlite3

from judgecore.results.outcomes import FINAL_STATUSES
from judgecore.run.subbatch import IN_FLIGHT

#: 2: sub-batches keep their orphan group in a column (`grp`), not in the note
#: 3: each custom_id's winning outcome is kept at write time (the `latest` table and its trigger)
#: 4: each sub-batch names its panel lane (`lane`: the provider whose batch it is); NULL in a dir of
#:    an earlier version, whose sub-batches are all its one batch lane's (`Store.name_lanes`)
SCHEMA_VERSION = 4
#: custom_ids bound per `IN (...)` query (SQLite's default limit is 32,766 parameters).

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS items (
    seq INTEGER PRIMARY KEY,
    custom_id TEXT NOT NULL UNIQUE,
    item_id TEXT NOT NULL,
    digest TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS sub_batches (
    sub_id INTEGER PRIMARY KEY,
    round INTEGER NOT NULL,
    n INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    intent_at REAL NOT NULL,
    batch_id TEXT UNIQUE,
    created_at REAL,
    expires_at REAL,
    state TEXT NOT NULL,
    note TEXT,
    grp INTEGER,
    lane TEXT
);
CREATE TABLE IF NOT EXISTS sub_batch_ids (
    sub_id INTEGER NOT NULL,
    custom_id TEXT NOT NULL,
    PRIMARY KEY (sub_id, custom_id)
) WITHOUT ROWID;
-- No index of sub_batch_ids by custom_id: every query asks for one sub-batch's ids (a prefix of the
-- primary key) or reads them all, so the index only cost one more B-tree insert per id sent. A
-- checkpoint made before has it; a writable open drops it.
DROP INDEX IF EXISTS sub_batch_ids_cid;
CREATE TABLE IF NOT EXISTS outcomes (
    row INTEGER PRIMARY KEY,
    custom_id TEXT NOT NULL,
    sub_id INTEGER,
    route TEXT NOT NULL,
    batch_id TEXT,
    status TEXT NOT NULL,
    failure TEXT,
    reason TEXT NOT NULL,
    text TEXT,
    stop_reason TEXT,
    model TEXT,
    usage TEXT,
    error_type TEXT,
    error_message TEXT,
    retry_after REAL,
    attempts INTEGER NOT NULL,
    at REAL NOT NULL,
    error_code TEXT,
    stop_details TEXT
);
DROP INDEX IF EXISTS outcomes_cid;
CREATE UNIQUE INDEX IF NOT EXISTS outcomes_sub_cid ON outcomes (sub_id, custom_id) WHERE sub_id IS NOT NULL;
CREATE TABLE IF NOT EXISTS item_metadata (custom_id TEXT PRIMARY KEY, metadata TEXT) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS item_messages (custom_id TEXT PRIMARY KEY, messages BLOB NOT NULL);
"""

# A sub-batch row's `state` is a `judgecore.run.subbatch.SubState`, moved only through its table; the
# states holding ids in flight are `judgecore.run.subbatch.IN_FLIGHT`. `grp` is the orphan group of an
# ambiguous adoption (see `judgecore.run.batch.batching.Adoption`), None for every other sub-batch.
_IN_FLIGHT_SQL = ",".join(f"'{s.value}'" for s in sorted(IN_FLIGHT))

#: A final status, as SQL (`... WHERE status IN ({FINAL_SQL})`).
FINAL_SQL = ",".join(f"'{s.value}'" for s in sorted(FINAL_STATUSES))

#: The ids in flight, written once: each custom_id of a sub-batch whose state may still answer for it
#: (`IN_FLIGHT`) with no outcome recorded under that sub-batch yet. What a run never resends, what it
#: still waits for, and which batch holds each (`Resume`). A derived view, not a table: it holds no
#: rows of its own, so adding it changes no stored data and needs no new `SCHEMA_VERSION`.
#: Read from the sub-batches first (`CROSS JOIN` fixes that order), each in-flight one's ids then found
#: by the key's prefix: a job whose sub-batches are all harvested reads none of its ids (a finished
#: 720,000-item job's output, which asks which items still wait: 0.28 s of CPU to nothing), and one
#: with all in flight reads them as before. `b.sub_id`: the scan's own order, so `ORDER BY sub_id` sorts
#: nothing.
IN_FLIGHT_VIEW = (
    "CREATE VIEW in_flight AS "
    "SELECT b.sub_id, s.custom_id, b.batch_id FROM sub_batches b CROSS JOIN sub_batch_ids s ON s.sub_id = b.sub_id "
    f"WHERE b.state IN ({_IN_FLIGHT_SQL}) AND NOT EXISTS ("
    "SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id)"
)


def _view_sql(conn: sqlite3.Connection) -> str | None:
    row = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'view' AND name = 'in_flight'").fetchone()
    return None if row is None else row[0]


def create_view(conn: sqlite3.Connection) -> None:
    """Create the `in_flight` view in the database, or write it again where an earlier version of the
    code wrote another definition (a checkpoint from before the view has none; it opens as ever)."""
    if _view_sql(conn) == IN_FLIGHT_VIEW:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("DROP VIEW IF EXISTS in_flight")
        conn.execute(IN_FLIGHT_VIEW)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def create_temp_view(conn: sqlite3.Connection) -> None:
    """For a checkpoint opened read-only whose database lacks this `in_flight` view (made before it):
    the same view in the connection's own temp schema, which shadows the database's and writes nothing
    to it."""
    if _view_sql(conn) != IN_FLIGHT_VIEW:
        conn.execute(IN_FLIGHT_VIEW.replace("CREATE VIEW", "CREATE TEMP VIEW", 1))


def migrate(conn: sqlite3.Connection) -> None:
    """Bring a state dir of an earlier schema up to `SCHEMA_VERSION` (idempotent)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(sub_batches)")}
    if "grp" in columns:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute("ALTER TABLE sub_batches ADD COLUMN grp INTEGER")
        # schema 1 kept an ambiguous orphan's group in its note, as "group=N"
        for sub_id, note in conn.execute(
            "SELECT sub_id, note FROM sub_batches WHERE note LIKE '%group=%'"
        ).fetchall():
            tail = note.split("group=", 1)[1]
            digits = tail[: len(tail) - len(tail.lstrip("0123456789"))]
            if digits:
                conn.execute("UPDATE sub_batches SET grp = ? WHERE sub_id = ?", (int(digits), sub_id))
        conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


#: Each custom_id's winning outcome row, its status, and the sends used over all its rows (`attempts`).
#: Kept by the trigger below in the transaction that inserts the outcome row, so the two commit together
#: or not at all, and `latest()`/`counts()` read it by its key instead of grouping every outcome.
LATEST_TABLE = (
    "CREATE TABLE latest (custom_id TEXT PRIMARY KEY, row INTEGER NOT NULL, status TEXT NOT NULL, "
    "attempts INTEGER NOT NULL) WITHOUT ROWID"
)

# A new row wins when it is final and the kept one is not, or when both are final (or both not) and it
# is newer: a final outcome wins over any later non-final one, and among equals the newest.
_NEW_FINAL = f"excluded.status IN ({FINAL_SQL})"
_OLD_FINAL = f"latest.status IN ({FINAL_SQL})"
_WINS = (
    f"(({_NEW_FINAL}) > ({_OLD_FINAL}) OR (({_NEW_FINAL}) = ({_OLD_FINAL}) AND excluded.row > latest.row))"
)
LATEST_TRIGGER = (
    "CREATE TRIGGER latest_of_outcome AFTER INSERT ON outcomes BEGIN "
    "INSERT INTO latest (custom_id, row, status, attempts) VALUES (NEW.custom_id, NEW.row, NEW.status, NEW.attempts) "
    f"ON CONFLICT (custom_id) DO UPDATE SET row = CASE WHEN {_WINS} THEN excluded.row ELSE latest.row END, "
    f"status = CASE WHEN {_WINS} THEN excluded.status ELSE latest.status END, "
    "attempts = latest.attempts + excluded.attempts; END"
)

#: The same winners computed from `outcomes` by one grouping pass: what fills `latest` when an older
#: checkpoint is migrated, and what a read-only open of one reads instead (a temp view).
_BEST = (
    f"SELECT custom_id, COALESCE(MAX(CASE WHEN status IN ({FINAL_SQL}) THEN row END), MAX(row)) AS row, "
    "SUM(attempts) AS attempts FROM outcomes GROUP BY custom_id"
)
LATEST_FROM_OUTCOMES = (
    f"SELECT b.custom_id, b.row, o.status, b.attempts FROM ({_BEST}) b JOIN outcomes o ON o.row = b.row"
)


def _has_latest(conn: sqlite3.Connection) -> bool:
    q = "SELECT 1 FROM main.sqlite_master WHERE type = 'table' AND name = 'latest'"
    return conn.execute(q).fetchone() is not None


def add_latest(conn: sqlite3.Connection) -> None:
    """Give a checkpoint the `latest` table and its trigger (idempotent): a new one's is empty, an older
    one's is built once from the outcomes it holds, in the same transaction as the trigger."""
    if _has_latest(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not _has_latest(conn):  # another process may have migrated it meanwhile
            conn.execute(LATEST_TABLE)
            conn.execute(f"INSERT INTO latest (custom_id, row, status, attempts) {LATEST_FROM_OUTCOMES}")
            conn.execute(LATEST_TRIGGER)
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def create_temp_latest(conn: sqlite3.Connection) -> None:
    """For a checkpoint opened read-only from before the `latest` table: a temp view of the same name
    and columns, computed from the outcomes, which writes nothing to the database."""
    if not _has_latest(conn):
        conn.execute(f"CREATE TEMP VIEW latest AS {LATEST_FROM_OUTCOMES}")


def add_outcome_columns(conn: sqlite3.Connection) -> None:
    """Give an outcomes table of an earlier version the `error_code` and `stop_details` columns
    (idempotent; the rows it has keep NULL in both: no code, no stop details)."""
    columns = {r[1] for r in conn.execute("PRAGMA table_info(outcomes)")}
    if "stop_details" in columns:
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if "error_code" not in columns:
            conn.execute("ALTER TABLE outcomes ADD COLUMN error_code TEXT")
        conn.execute("ALTER TABLE outcomes ADD COLUMN stop_details TEXT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def has_lane(conn: sqlite3.Connection) -> bool:
    """Whether the sub-batches table has its `lane` column (a checkpoint of schema 4 or later)."""
    return "lane" in {r[1] for r in conn.execute("PRAGMA table_info(sub_batches)")}


def add_lane_column(conn: sqlite3.Connection) -> None:
    """Give a sub-batches table of an earlier version its `lane` column (idempotent). Its rows keep NULL:
    an older dir had one batch lane, named by the run that next opens it (`Store.name_lanes`)."""
    if has_lane(conn):
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        if not has_lane(conn):  # another process may have migrated it meanwhile
            conn.execute("ALTER TABLE sub_batches ADD COLUMN lane TEXT")
            conn.execute("UPDATE meta SET value = ? WHERE key = 'schema'", (str(SCHEMA_VERSION),))
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
