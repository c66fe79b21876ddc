"""Opening a checkpoint: its files made private, the journal its filesystem allows, the state dir's
lock for a command that writes, and the read-only open of a dry run."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from adapters.checkpoint.fresh import DB_NAME, holds_checkpoint
from adapters.checkpoint.statelock import StateLock
from adapters.checkpoint.store.schema import (
    SCHEMA,
    add_lane_column,
    add_latest,
    add_outcome_columns,
    create_temp_latest,
    create_temp_view,
    create_view,
    migrate,
)
from judgecore.decide.filesystems import CheckpointMode, checkpoint_mode, fs_type_of

# A dry run on a fresh state dir asks only whether a checkpoint exists (`adapters.checkpoint.fresh`),
# and imports neither this module nor SQLite.


def _create_private(path: Path) -> None:
    fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o600)
    os.close(fd)
    path.chmod(0o600)


def filesystem_type(path: Path) -> str | None:
    """The type of the filesystem holding `path` (Linux: from /proc/self/mountinfo; None elsewhere).

    `JUDGECORE_FS_TYPE` overrides it, for a network filesystem the mount table does not show as one
    (a FUSE mount of a cluster store, say): `JUDGECORE_FS_TYPE=nfs` makes the checkpoint safe there."""

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


class Connection:
    """A checkpoint's database connection and lock (`adapters.checkpoint.store.Store` adds what it reads and
    writes)."""

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
        #: the journal the checkpoint uses where it lives (`judgecore.decide.filesystems`); None: read-only
        self.mode = mode
        self._lock = lock

    @classmethod
    def open(cls, state_dir: Path | str, *, exclusive: str | None = None, fs_type: str | None = None) -> Self:
        """Open (or create) the checkpoint of `state_dir` for writing.

        `exclusive` names the command (`"run"`, `"cancel"`) that holds the state dir's lock until
        `close()`: a second one is `StateLockedError` naming the holder. The journal follows the
        filesystem (`judgecore.decide.filesystems.checkpoint_mode`): WAL on a local one, the rollback journal
        on a network one; `fs_type` overrides the detected type (tests)."""

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
        # An 8 MB page cache (SQLite's default is 2 MB): a harvest's rows land in the outcomes and
        # latest indexes in the results' own order, which is not the items'; with 2 MB most of those
        # index pages are read again from the OS for each row (bench/harvest.py: 27,600 -> 34,400
        # results/s, 6.7 MB more at its peak, the same at any size of job).
        conn.execute("PRAGMA cache_size=-8192")
        conn.executescript(SCHEMA)
        migrate(conn)
        add_outcome_columns(conn)
        add_latest(conn)
        add_lane_column(conn)
        create_view(conn)
        return cls(conn, db, mode=mode, lock=lock)

    @classmethod
    def open_readonly(cls, state_dir: Path | str) -> Self:
        """Open an existing checkpoint for reading only (a dry run): nothing is created or written.

        A database closed cleanly has no WAL file left; it is then opened immutable, so that SQLite
        does not create its WAL and shared-memory files to read it. With a WAL file (a run is going
        on, or was killed) it is read through that WAL, whose files exist already.
        """

        db = Path(state_dir) / DB_NAME
        wal = db.with_name(db.name + "-wal")
        # immutable (no locks, no files made) only for a WAL database closed cleanly; a rollback-journal
        # one (a network filesystem) may be written by a run meanwhile, so it is read under its locks
        mode = "mode=ro&immutable=1" if _is_wal(db) and not wal.exists() else "mode=ro"
        conn = sqlite3.connect(f"{db.resolve().as_uri()}?{mode}", uri=True, check_same_thread=False)
        conn.execute("PRAGMA busy_timeout=10000")
        with contextlib.suppress(sqlite3.DatabaseError):  # not a checkpoint: its first read says so, as ever
            create_temp_view(conn)
        with contextlib.suppress(sqlite3.DatabaseError):
            create_temp_latest(conn)
        return cls(conn, db)

    @classmethod
    def exists(cls, state_dir: Path | str) -> bool:
        return holds_checkpoint(state_dir)

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
