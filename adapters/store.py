"""The checkpoint: a job's durable state under `--state DIR`, in one SQLite database in WAL mode.

Why SQLite and not a JSONL journal: the output is a join (every input item, in input order, with its
latest outcome) and `status` is a handful of counts; SQLite answers both with a query over an index
instead of replaying a journal into memory, so memory stays flat however long the job. WAL mode with
`synchronous=FULL` makes each commit durable (fsync) while readers never block. A batch harvest commits
its lines in groups (`OutcomeWriter`, `refetchable=True`) that survive a process crash at once but are
not fsynced each, since lines lost to a power cut can be fetched again; the FULL commit that marks the
batch harvested fsyncs them all.

Write order (the promises of CONTRACT.md, "The checkpoint"):
1. the job manifest (model, rubric digest, settings that change requests) and every item's custom_id and
   content digest, before anything is sent;
2. an *intent* (its sub-batch's custom_ids) before the batch create call;
3. the batch id and `expires_at` right after the create call returns;
4. each harvested outcome, committed before it counts as done.

A crash between 2 and 3 leaves an intent with no batch id: an *orphan*, which the batch path reconciles
by listing recent batches before it ever resubmits those ids. The database file, its WAL and its shared
memory file are created mode 0600 in a directory of mode 0700; no credential is ever stored.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs
import orjson

from judgecore.outcomes import FINAL_STATUSES, FailureClass, Outcome, Status, StopDetails, Usage
from judgecore.resume import JobState
from judgecore.subbatch import IN_FLIGHT, SubState

if TYPE_CHECKING:
    import sqlite3

    from adapters.statelock import StateLock
    from judgecore.batchrun import Checkpoint
    from judgecore.filesystems import CheckpointMode
    from judgecore.planning import ModelPrice

# sqlite3, the batch run's view and the spend rule are imported where they are used: a dry run on a
# fresh state dir asks only whether a checkpoint exists (`Store.exists`), and needs none of them.

DB_NAME = "judgecore.sqlite3"
#: 2: sub-batches keep their orphan group in a column (`grp`), not in the note
SCHEMA_VERSION = 2
#: custom_ids bound per `IN (...)` query (SQLite's default limit is 32,766 parameters).
_IN_CHUNK = 500

_SCHEMA = """
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
    grp INTEGER
);
CREATE TABLE IF NOT EXISTS sub_batch_ids (
    sub_id INTEGER NOT NULL,
    custom_id TEXT NOT NULL,
    PRIMARY KEY (sub_id, custom_id)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS sub_batch_ids_cid ON sub_batch_ids (custom_id);
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

# A sub-batch row's `state` is a `judgecore.subbatch.SubState`, moved only through its table; the
# states holding ids in flight are `judgecore.subbatch.IN_FLIGHT`. `grp` is the orphan group of an
# ambiguous adoption (see `judgecore.batching.Adoption`), None for every other sub-batch.
_IN_FLIGHT_SQL = ",".join(f"'{s.value}'" for s in sorted(IN_FLIGHT))


class StateMismatchError(Exception):
    """The state dir belongs to another job (different model, rubric or request settings)."""


class ContentConflictError(Exception):
    """An item's content changed since it was checkpointed under the same id."""

    def __init__(self, item_ids: Sequence[str]) -> None:
        shown = ", ".join(repr(i) for i in item_ids[:5])
        more = f" and {len(item_ids) - 5} more" if len(item_ids) > 5 else ""
        super().__init__(
            f"content changed since it was checkpointed for id {shown}{more}; "
            "use a new --state dir for a new job, or restore the original input"
        )
        self.item_ids = tuple(item_ids)


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


@attrs.frozen(kw_only=True)
class OutcomeRow:
    """One recorded outcome, ready for the store."""

    custom_id: str
    outcome: Outcome
    route: str
    at: float
    sub_id: int | None = None
    batch_id: str | None = None
    attempts: int = 1


def _create_private(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    path.chmod(0o600)


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding `path` (Linux: from /proc/self/mountinfo; None elsewhere).

    `JUDGECORE_FS_TYPE` overrides it, for a network filesystem the mount table does not show as one
    (a FUSE mount of a cluster store, say): `JUDGECORE_FS_TYPE=nfs` makes the checkpoint safe there."""
    from judgecore.filesystems import fs_type_of

    if override := os.environ.get("JUDGECORE_FS_TYPE", "").strip():
        return override
    try:
        mountinfo = Path("/proc/self/mountinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    return fs_type_of(str(path.resolve()), mountinfo)


def _is_wal(db: Path) -> bool:
    """The database file's header says WAL (bytes 18-19 are 2: sqlite.org/fileformat.html)."""
    try:
        with db.open("rb") as f:
            header = f.read(20)
    except OSError:
        return True
    return len(header) < 20 or header[18:20] == b"\x02\x02"


def ids_job_for(state_dir: Path | str | None, manifest: Mapping[str, Any]) -> str | None:
    """The job key a job's custom_ids are derived with (`judgecore.ids`), read before its input is.

    A state dir bound to a job keeps its key (None for one bound before job keys: it keeps its `v1`
    ids). For a new dir (or none) the key is made from the manifest and a fresh nonce: `bind_job`
    keeps it, and every later run reads it back, so the ids are the job's own in every process.
    """
    import secrets

    from judgecore.ids import job_key

    if state_dir is not None and Store.exists(state_dir):
        import sqlite3

        try:
            store = Store.open_readonly(state_dir)
        except sqlite3.Error:
            store = None
        if store is not None:
            try:
                if store.get_meta("manifest") is not None:
                    return store.get_meta("custom_id_job")
            except sqlite3.Error:
                pass  # a database never bound (no tables yet): a new job's
            finally:
                store.close()
    canonical = orjson.dumps(dict(manifest), option=orjson.OPT_SORT_KEYS)
    return job_key(canonical, secrets.token_hex(8))


class Store:
    """The checkpoint of one job. Open with `Store.open(state_dir)`; close when done."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: Path,
        *,
        mode: CheckpointMode | None = None,
        lock: StateLock | None = None,
    ) -> None:
        self._conn = conn
        self.path = path
        #: the journal the checkpoint uses where it lives (`judgecore.filesystems`); None: read-only
        self.mode = mode
        self._lock = lock

    @classmethod
    def open(
        cls, state_dir: Path | str, *, exclusive: str | None = None, fs_type: str | None = None
    ) -> Store:
        """Open (or create) the checkpoint of `state_dir` for writing.

        `exclusive` names the command (`"run"`, `"cancel"`) that holds the state dir's lock until
        `close()`: a second one is `StateLockedError` naming the holder. The journal follows the
        filesystem (`judgecore.filesystems.checkpoint_mode`): WAL on a local one, the rollback journal
        on a network one; `fs_type` overrides the detected type (tests)."""
        import sqlite3

        from adapters.statelock import StateLock
        from judgecore.filesystems import checkpoint_mode

        state_dir = Path(state_dir)
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        mode = checkpoint_mode(fs_type if fs_type is not None else filesystem_type(state_dir))
        lock = StateLock.take(state_dir, exclusive) if exclusive is not None else None
        try:
            db = state_dir / DB_NAME
            suffixes = ("", "-wal", "-shm") if mode.journal_mode == "wal" else ("",)
            for suffix in suffixes:
                _create_private(db.with_name(db.name + suffix))
            conn = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        conn.execute("PRAGMA busy_timeout=10000")
        conn.execute(f"PRAGMA journal_mode={mode.journal_mode.upper()}")
        conn.execute("PRAGMA synchronous=FULL")
        # Checkpoint the WAL into the database every ~80 MB instead of every 4 MB: a checkpoint inside a
        # harvest's commit costs more than the commit itself (bench/harvest.py); durability is the WAL's.
        conn.execute("PRAGMA wal_autocheckpoint=20000")
        conn.executescript(_SCHEMA)
        _migrate(conn)
        _add_outcome_columns(conn)
        return cls(conn, db, mode=mode, lock=lock)

    @classmethod
    def open_readonly(cls, state_dir: Path | str) -> Store:
        """Open an existing checkpoint for reading only (a dry run): nothing is created or written.

        A database closed cleanly has no WAL file left; it is then opened immutable, so that SQLite
        does not create its WAL and shared-memory files to read it. With a WAL file (a run is going
        on, or was killed) it is read through that WAL, whose files exist already.
        """
        import sqlite3

        db = Path(state_dir) / DB_NAME
        wal = db.with_name(db.name + "-wal")
        # immutable (no locks, no files made) only for a WAL database closed cleanly; a rollback-journal
        # one (a network filesystem) may be written by a run meanwhile, so it is read under its locks
        mode = "mode=ro&immutable=1" if _is_wal(db) and not wal.exists() else "mode=ro"
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        return cls(conn, db)

    @classmethod
    def exists(cls, state_dir: Path | str) -> bool:
        return (Path(state_dir) / DB_NAME).exists()

    def close(self) -> None:
        self._conn.close()
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    # -- the manifest ------------------------------------------------------------------------

    def get_meta(self, key: str) -> Any:
        row = self._conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return orjson.loads(row[0]) if row else None

    def set_meta(self, key: str, value: Any) -> None:
        with self._tx() as c:
            c.execute(
                "INSERT INTO meta (key, value) VALUES (?, ?) "
                "ON CONFLICT (key) DO UPDATE SET value = excluded.value",
                (key, orjson.dumps(value).decode()),
            )

    def bind_job(
        self,
        manifest: Mapping[str, Any],
        items: Iterable[tuple[str, str, str]],
        *,
        ids_job: str | None = None,
    ) -> None:
        """Tie this state dir to one job.

        `manifest` holds what changes requests (model, rubric digest, max_tokens, ...); `items` yields
        `(custom_id, item_id, digest)` in input order, their custom_ids derived with the job key
        `ids_job` (`ids_job_for`; None: the `v1` ids of a dir bound before job keys). A new dir keeps
        the key; an existing one must have been bound with the same. A dir made for another manifest
        raises `StateMismatchError`; an item whose digest changed raises `ContentConflictError`. Items
        new to an existing job are added (they have simply not been sent yet).
        """
        old = self._check_manifest(manifest)
        if old is not None:
            self._check_ids_job(ids_job)
        with self._tx() as c:
            if old is None:
                c.execute(
                    "INSERT INTO meta (key, value) VALUES ('manifest', ?), ('schema', ?)",
                    (orjson.dumps(dict(manifest)).decode(), str(SCHEMA_VERSION)),
                )
                if ids_job is not None:
                    c.execute(
                        "INSERT INTO meta (key, value) VALUES ('custom_id_job', ?)",
                        (orjson.dumps(ids_job).decode(),),
                    )
            self._check_content(c, items)
            c.execute(
                "INSERT OR IGNORE INTO items (custom_id, item_id, digest) "
                "SELECT custom_id, item_id, digest FROM incoming ORDER BY rowid"
            )
            c.execute("DELETE FROM incoming")

    # -- the items' messages: kept here while a run sends, so the run holds none in memory ------

    def messages_missing(self) -> list[str]:
        """The custom_ids of bound items whose messages are not kept yet (all of a new job's)."""
        q = (
            "SELECT i.custom_id FROM items i LEFT JOIN item_messages m ON m.custom_id = i.custom_id "
            "WHERE m.custom_id IS NULL ORDER BY i.seq"
        )
        return [r[0] for r in self._conn.execute(q)]

    def keep_messages(self, rows: Iterable[tuple[str, bytes]]) -> None:
        """Keep each bound item's serialized messages (`(custom_id, bytes)`); they never change under
        an id (a changed item is a content conflict), so one kept already is left as it is."""
        with self._tx() as c:
            c.executemany("INSERT OR IGNORE INTO item_messages (custom_id, messages) VALUES (?, ?)", rows)

    def messages_of(self, custom_ids: Sequence[str]) -> list[bytes]:
        """The kept messages of these custom_ids, in the order given; `KeyError` for one not kept."""
        got: dict[str, bytes] = {}
        q = "SELECT custom_id, messages FROM item_messages WHERE custom_id IN ({})"
        for k in range(0, len(custom_ids), _IN_CHUNK):
            part = custom_ids[k : k + _IN_CHUNK]
            got.update(self._conn.execute(q.format(",".join("?" * len(part))), part))
        return [got[c] for c in custom_ids]

    # -- what the summary reads (items' metadata, answers' usage, the timeline) ------------------

    def record_metadata(self, rows: Iterable[tuple[str, bytes | None]]) -> None:
        """Keep each item's metadata (`(custom_id, JSON bytes or None)`), so `summary` can group by it
        from the checkpoint alone; the latest run's metadata wins (it is not part of the item's digest)."""
        with self._tx() as c:
            c.executemany(
                "INSERT INTO item_metadata (custom_id, metadata) VALUES (?, ?) "
                "ON CONFLICT (custom_id) DO UPDATE SET metadata = excluded.metadata "
                "WHERE metadata IS NOT excluded.metadata",  # a rerun's unchanged rows are not rewritten
                ((cid, None if m is None else m.decode()) for cid, m in rows),
            )

    def _has_table(self, name: str) -> bool:
        q = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?"
        return self._conn.execute(q, (name,)).fetchone() is not None

    def item_rows(self) -> Iterator[tuple[str, str, bytes | None]]:
        """`(custom_id, item_id, metadata JSON bytes or None)` of every item, in input order (as `latest`)."""
        if not self._has_table("item_metadata"):
            for cid, iid in self._conn.execute("SELECT custom_id, item_id FROM items ORDER BY seq"):
                yield cid, iid, None
            return
        q = (
            "SELECT i.custom_id, i.item_id, m.metadata FROM items i "
            "LEFT JOIN item_metadata m ON m.custom_id = i.custom_id ORDER BY i.seq"
        )
        for cid, iid, meta in self._conn.execute(q):
            yield cid, iid, None if meta is None else meta.encode()

    def answers(self) -> Iterator[tuple[str, Usage]]:
        """`(route, usage)` of every answer the API billed (every recorded outcome that has usage)."""
        for route, usage in self._conn.execute("SELECT route, usage FROM outcomes WHERE usage IS NOT NULL"):
            yield route, Usage(**orjson.loads(usage))

    def usage_by_route(self) -> list[tuple[str, Usage]]:
        """Every billed answer's usage summed per route, in SQLite (cost is linear in each count, so
        `judgecore.spend.spend_of` over these sums is the spend of every answer; `status` stays quick)."""
        q = (
            "SELECT route, SUM(json_extract(usage, '$.input_tokens')), SUM(json_extract(usage, '$.output_tokens')), "
            "SUM(json_extract(usage, '$.cache_creation_input_tokens')), "
            "SUM(json_extract(usage, '$.cache_read_input_tokens')) FROM outcomes WHERE usage IS NOT NULL GROUP BY route"
        )
        return [
            (
                r[0],
                Usage(
                    input_tokens=r[1],
                    output_tokens=r[2],
                    cache_creation_input_tokens=r[3],
                    cache_read_input_tokens=r[4],
                ),
            )
            for r in self._conn.execute(q)
        ]

    def items_digest(self) -> str:
        """One SHA-256 over every item's id and content digest, in input order: what the job judged,
        whatever file it was read from."""
        h = hashlib.sha256()
        for item_id, digest in self._conn.execute("SELECT item_id, digest FROM items ORDER BY seq"):
            h.update(f"{item_id}\x00{digest}\n".encode())
        return h.hexdigest()

    def billed_answers(self) -> int:
        """How many answers the API billed (recorded outcomes with usage; an item answered twice counts
        twice), for the mean usage per answer."""
        return int(self._conn.execute("SELECT COUNT(*) FROM outcomes WHERE usage IS NOT NULL").fetchone()[0])

    def usage_by_judge(self, judges: Sequence[str]) -> dict[str, list[tuple[str, Usage]]]:
        """A panel's billed usage summed per judge and route. A request's judge is the first part of
        the tag after the last `#` of its item id (`judgecore.designs`): the model an answer names may
        be a dated id of the alias it was sent to."""
        order = sorted(judges, key=len, reverse=True)  # the longest judge id that fits the tag
        sums: dict[tuple[str, str], list[int]] = {}
        q = (
            "SELECT i.item_id, o.route, o.usage FROM outcomes o JOIN items i ON i.custom_id = o.custom_id "
            "WHERE o.usage IS NOT NULL"
        )
        for item_id, route, raw in self._conn.execute(q):
            tag = item_id.rpartition("#")[2]
            judge = next((j for j in order if tag == j or tag.startswith(j + ".")), None)
            if judge is None:
                continue
            u = orjson.loads(raw)
            acc = sums.setdefault((judge, route), [0, 0, 0, 0])
            for k, name in enumerate(_USAGE_FIELDS):
                acc[k] += int(u.get(name) or 0)
        out: dict[str, list[tuple[str, Usage]]] = {j: [] for j in judges}
        for (judge, route), acc in sums.items():
            out[judge].append((route, Usage(**dict(zip(_USAGE_FIELDS, acc, strict=True)))))
        return out

    def timeline(self) -> list[tuple[float, str, int | None, str]]:
        """`(at, route, sub_id, status)` of every recorded outcome, oldest first (the report's timeline)."""
        q = "SELECT at, route, sub_id, status FROM outcomes ORDER BY at"
        return [(r[0], r[1], r[2], r[3]) for r in self._conn.execute(q)]

    def succeeded_texts(self) -> Iterator[str | None]:
        """The text of every item whose latest outcome is `succeeded` (a final outcome wins over a
        later non-final one, and among finals the newest: as `latest`), without building outcomes."""
        final_in = ",".join(f"'{s}'" for s in sorted(FINAL_STATUSES))
        q = f"SELECT custom_id, status, text FROM outcomes WHERE status IN ({final_in}) ORDER BY row"
        latest = {cid: (status, text) for cid, status, text in self._conn.execute(q)}
        return (text for status, text in latest.values() if status == "succeeded")

    def waiting_batches(self) -> dict[str, str]:
        """custom_id -> batch id for ids sitting in a created batch with no result recorded under it yet."""
        q = (
            "SELECT s.custom_id, b.batch_id FROM sub_batch_ids s JOIN sub_batches b ON b.sub_id = s.sub_id "
            f"WHERE b.batch_id IS NOT NULL AND b.state IN ({_IN_FLIGHT_SQL}) AND NOT EXISTS ("
            "  SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id) "
            "ORDER BY b.sub_id"
        )
        return dict(self._conn.execute(q).fetchall())

    def check_job(
        self,
        manifest: Mapping[str, Any],
        items: Iterable[tuple[str, str, str]],
        *,
        ids_job: str | None = None,
    ) -> None:
        """`bind_job`'s checks without writing anything (a dry run on a read-only store)."""
        if self._check_manifest(manifest) is not None:
            self._check_ids_job(ids_job)
        self._conn.execute("BEGIN")  # one transaction for the temp table's rows (never the database's)
        try:
            self._check_content(self._conn, items)
            self._conn.execute("DELETE FROM incoming")
        finally:
            self._conn.execute("ROLLBACK")

    @property
    def ids_job(self) -> str | None:
        """The job key this dir's custom_ids are derived with (None: `v1` ids, or no job bound yet)."""
        return self.get_meta("custom_id_job")

    def _check_ids_job(self, ids_job: str | None) -> None:
        """A job's custom_ids must be derived with the key its dir keeps (`ids_job_for` reads it)."""
        kept = self.ids_job
        if kept != ids_job:
            raise StateMismatchError(
                f"{self.path.parent}: the job's custom_ids are derived with job key {kept!r}, "
                f"these with {ids_job!r} (read the key with adapters.store.ids_job_for)"
            )

    def _check_manifest(self, manifest: Mapping[str, Any]) -> Any:
        """The stored manifest (None for a new dir); `StateMismatchError` naming the fields that differ."""
        old = self.get_meta("manifest")
        if old is not None and old != dict(manifest):
            diffs = sorted(k for k in set(old) | set(manifest) if old.get(k) != manifest.get(k))
            raise StateMismatchError(
                f"{self.path.parent} holds the checkpoint of another job (differs in: "
                f"{', '.join(diffs)}); point --state at a new directory"
            )
        return old

    def _check_content(self, c: sqlite3.Connection, rows: Iterable[tuple[str, str, str]]) -> None:
        """Stream `rows` into the temp table `incoming` (none held in memory); `ContentConflictError`
        for changed digests."""
        c.execute("CREATE TEMP TABLE IF NOT EXISTS incoming (custom_id TEXT, item_id TEXT, digest TEXT)")
        c.execute("DELETE FROM incoming")
        c.executemany("INSERT INTO incoming VALUES (?, ?, ?)", rows)
        conflicts = [
            r[0]
            for r in c.execute(
                "SELECT i.item_id FROM incoming n JOIN items i ON i.custom_id = n.custom_id "
                "WHERE i.digest != n.digest ORDER BY i.seq"
            )
        ]
        if conflicts:
            c.execute("DELETE FROM incoming")
            raise ContentConflictError(conflicts)

    # -- sub-batches -------------------------------------------------------------------------

    def record_intent(
        self, *, round: int, custom_ids: Sequence[str], n_bytes: int, at: float, sub_id: int | None = None
    ) -> int:
        """Durably record the intent to create a batch of these ids; returns its `sub_id` (the one given,
        or the next free one)."""
        with self._tx() as c:
            cur = c.execute(
                "INSERT INTO sub_batches (sub_id, round, n, bytes, intent_at, state) VALUES (?, ?, ?, ?, ?, ?)",
                (sub_id, round, len(custom_ids), n_bytes, at, SubState.INTENT.value),
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
        """Write a sub-batch's new state (decided by `judgecore.subbatch`'s table), and its orphan group."""
        with self._tx() as c:
            c.execute(
                "UPDATE sub_batches SET state = ?, note = COALESCE(?, note), grp = COALESCE(?, grp) WHERE sub_id = ?",
                (state, note, group, sub_id),
            )

    def sub_batches(self, states: Sequence[str] | None = None) -> list[SubBatchRow]:
        q = (
            "SELECT sub_id, round, n, bytes, intent_at, batch_id, created_at, expires_at, state, note, grp "
            "FROM sub_batches"
        )
        args: tuple[Any, ...] = ()
        if states is not None:
            q += f" WHERE state IN ({','.join('?' * len(states))})"
            args = tuple(states)
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

    def last_outcome_row(self) -> int:
        """The id of the newest outcome row (0 for none): it moves whenever anything is recorded."""
        return int(self._conn.execute("SELECT COALESCE(MAX(row), 0) FROM outcomes").fetchone()[0])

    def known_batch_ids(self) -> frozenset[str]:
        """Every batch id this job has recorded (created or adopted): never adopted by another intent."""
        return frozenset(
            r[0] for r in self._conn.execute("SELECT batch_id FROM sub_batches WHERE batch_id IS NOT NULL")
        )

    def first_failures(self, k: int) -> list[str | None]:
        """The failure classes (None for none) of the job's first `k` *final* outcomes, in arrival order
        (what the invalid-request breaker counts: a retriable outcome says nothing about the payload)."""
        return [
            r[0]
            for r in self._conn.execute(
                f"SELECT failure FROM outcomes WHERE status IN ({_FINAL_SQL}) ORDER BY row LIMIT ?", (k,)
            )
        ]

    def checkpoint(self, breaker_k: int = 20) -> Checkpoint:
        """The pure view a batch run starts from: every sub-batch (with its ids not yet answered under
        it, for those in flight), the final ids, and the earliest final outcomes for the breaker."""
        from judgecore.batchrun import Checkpoint, SubView

        ids: dict[int, list[str]] = {}
        for sub_id, cid in self._conn.execute(
            "SELECT s.sub_id, s.custom_id FROM sub_batch_ids s JOIN sub_batches b ON b.sub_id = s.sub_id "
            f"WHERE b.state IN ({_IN_FLIGHT_SQL}) AND NOT EXISTS ("
            "  SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id)"
        ):
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
            for r in self.sub_batches()
        )
        first = tuple(None if f is None else FailureClass(f) for f in self.first_failures(breaker_k))
        return Checkpoint(subs=subs, final=self._final_ids(), first_final=first)

    def spent_usd(self, price: ModelPrice) -> float:
        """What the job's answers so far cost, from their recorded usage summed per route in SQLite
        (`judgecore.spend.spend_of`: cost is linear in each token count)."""
        from judgecore.spend import spend_of

        return spend_of(self.usage_by_route(), price).spent

    def _final_ids(self) -> frozenset[str]:
        # no DISTINCT: the set drops repeats, and SQLite's temporary B-tree for them doubled the time
        return frozenset(
            cid
            for (cid,) in self._conn.execute(f"SELECT custom_id FROM outcomes WHERE status IN ({_FINAL_SQL})")
        )

    # -- outcomes ----------------------------------------------------------------------------

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

    def job_state(self) -> JobState:
        """Final ids, and ids in sub-batches that may still answer for them (never resent while there).

        `attempts` stays empty: the retry budget is per run (`--max-attempts`), counted by the run."""
        in_flight = frozenset(
            r[0]
            for r in self._conn.execute(
                "SELECT s.custom_id FROM sub_batch_ids s JOIN sub_batches b ON b.sub_id = s.sub_id "
                f"WHERE b.state IN ({_IN_FLIGHT_SQL}) AND NOT EXISTS ("
                "  SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id)"
            )
        )
        return JobState(final=self._final_ids(), in_flight=in_flight)

    def counts(self) -> dict[str, int]:
        """Items by their latest status (`pending` for none or a non-final one)."""
        out = dict.fromkeys(TALLY, 0)
        # Only final outcomes count, and an id's newest final one wins: rank row ids of final rows
        # (no window over every outcome row and its text); the rest of the items are pending.
        (n_items,) = self._conn.execute("SELECT COUNT(*) FROM items").fetchone()
        for status, n in self._conn.execute(
            f"SELECT o.status, COUNT(*) FROM (SELECT MAX(row) AS best FROM outcomes WHERE status IN ({_FINAL_SQL}) "
            "GROUP BY custom_id) b JOIN outcomes o ON o.row = b.best "
            "WHERE o.custom_id IN (SELECT custom_id FROM items) GROUP BY o.status"
        ):
            key = status if status in out else "pending"
            out[key] += n
        out["pending"] += n_items - sum(out.values())
        return out

    def latest(self) -> Iterator[tuple[str, Outcome | None, str | None, str | None, int]]:
        """`(custom_id, latest outcome, route, batch_id, attempts)` for every item in input order.

        A final outcome wins over any later non-final one (a final id is never sent again, but a
        duplicate result line could still arrive). Streams: memory does not grow with the job.
        """
        q = (
            f"WITH best AS ({_BEST}) "
            "SELECT i.custom_id, o.status, o.failure, o.reason, o.text, o.stop_reason, o.model, o.usage, "
            "o.error_type, o.error_message, o.retry_after, o.route, o.batch_id, COALESCE(b.total, 0), "
            f"{self._answer_columns()} "
            "FROM items i LEFT JOIN best b ON b.custom_id = i.custom_id LEFT JOIN outcomes o ON o.row = b.row "
            "ORDER BY i.seq"
        )
        for r in self._conn.execute(q):
            outcome = None
            if r[1] is not None:
                usage = Usage(**orjson.loads(r[7])) if r[7] else None
                outcome = Outcome(
                    status=_STATUS[r[1]],
                    failure=None if r[2] is None else _failure(r[2]),
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


_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")

_FINAL_SQL = ",".join(f"'{s.value}'" for s in sorted(FINAL_STATUSES))

# Each custom_id's winning outcome row: a final one wins over any later non-final one, then the newest;
# `total` is the sends used over all of them. One grouping pass over the row ids of `outcomes` (not
# their text; no index on custom_id is needed, which keeps every harvested row cheaper to insert); the
# winner's columns are then read by its row id.
_BEST = (
    f"SELECT custom_id, COALESCE(MAX(CASE WHEN status IN ({_FINAL_SQL}) THEN row END), "
    "MAX(row)) AS row, SUM(attempts) AS total FROM outcomes GROUP BY custom_id"
)


_STATUS = {s.value: s for s in Status}
#: the keys of a job's counts, in the order they are shown: each final status, then `pending`
TALLY = (
    *(s.value for s in Status if s in FINAL_STATUSES),
    "pending",
)  # a dict lookup, not an Enum call, per row of `latest`


def _failure(name: str) -> FailureClass:
    return FailureClass(name)


def _migrate(conn: sqlite3.Connection) -> None:
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


def _add_outcome_columns(conn: sqlite3.Connection) -> None:
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
        usage = (
            orjson.dumps(
                {
                    "input_tokens": u.input_tokens,
                    "output_tokens": u.output_tokens,
                    "cache_creation_input_tokens": u.cache_creation_input_tokens,
                    "cache_read_input_tokens": u.cache_read_input_tokens,
                }
            ).decode()
            if u is not None
            else None
        )
        self._buf.append(
            (
                custom_id,
                sub_id,
                route,
                batch_id,
                o.status.value,
                o.failure.value if o.failure else None,
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
            before = self._conn.total_changes
            self._conn.executemany(
                "INSERT OR IGNORE INTO outcomes (custom_id, sub_id, route, batch_id, status, failure, reason, "
                "text, stop_reason, model, usage, error_type, error_message, retry_after, attempts, at, "
                "error_code, stop_details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                self._buf,
            )
            added = self._conn.total_changes - before
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
