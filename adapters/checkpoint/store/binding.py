"""The job a state dir is bound to: its manifest (what changes requests), its items' custom_ids and
content digests and the job key the ids are derived with (kept in the meta table, `meta`)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson

from adapters.checkpoint.store.meta import Meta
from adapters.checkpoint.store.schema import FINAL_SQL, SCHEMA_VERSION


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


class Binding(Meta):
    """The manifest and the bound items (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection
    path: Path

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
        new to an existing job are added (they have simply not been sent yet). A dir whose job never
        received an answer (`answered`) holds nothing to keep: it is emptied and bound to this job.
        """
        old = self._check_manifest(manifest, restart=True)
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
            if c.execute("SELECT 1 FROM items LIMIT 1").fetchone() is None:
                # a new job (or one bound with no items): nothing to check against, so the rows go
                # straight into `items`, one insert each (the temp table costs a second)
                c.executemany(
                    "INSERT OR IGNORE INTO items (custom_id, item_id, digest) VALUES (?, ?, ?)", items
                )
                return
            self._check_content(c, items)
            c.execute(
                "INSERT OR IGNORE INTO items (custom_id, item_id, digest) "
                "SELECT custom_id, item_id, digest FROM incoming ORDER BY rowid"
            )
            c.execute("DELETE FROM incoming")

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

    def known_items(self, item_ids: Iterable[str]) -> tuple[int, int, int]:
        """`(bound, given, known)`: how many items the job holds, how many `item_ids` there are, and
        how many of them the job holds (an input that shares none is another job's, likely). Nothing
        written: the ids go through a temp table of this connection, rolled back."""
        c = self._conn
        c.execute("BEGIN")
        try:
            c.execute("CREATE TEMP TABLE IF NOT EXISTS given_ids (item_id TEXT)")
            c.execute("DELETE FROM given_ids")
            c.executemany("INSERT INTO given_ids VALUES (?)", ((i,) for i in item_ids))
            given = c.execute("SELECT count(*) FROM given_ids").fetchone()[0]
            known = c.execute(
                "SELECT count(*) FROM given_ids g JOIN items i ON i.item_id = g.item_id"
            ).fetchone()[0]
            bound = c.execute("SELECT count(*) FROM items").fetchone()[0]
        finally:
            c.execute("ROLLBACK")
        return bound, given, known

    def bound_item(self, custom_id: str) -> tuple[str, bytes | None]:
        """The item id and the kept metadata (JSON bytes, None when it has none) of a bound custom_id."""
        row = self._conn.execute(
            "SELECT i.item_id, m.metadata FROM items i LEFT JOIN item_metadata m ON m.custom_id = i.custom_id "
            "WHERE i.custom_id = ?",
            (custom_id,),
        ).fetchone()
        meta = row[1]
        return row[0], meta.encode() if isinstance(meta, str) else meta

    def _check_ids_job(self, ids_job: str | None) -> None:
        """A job's custom_ids must be derived with the key its dir keeps (`ids_job_for` reads it)."""
        kept = self.ids_job
        if kept != ids_job:
            raise StateMismatchError(
                f"{self.path.parent}: the job's custom_ids are derived with job key {kept!r}, "
                f"these with {ids_job!r} (read the key with adapters.checkpoint.jobkey.ids_job_for)"
            )

    def answered(self) -> bool:
        """Whether anything of the job was answered (a final outcome, an answer billed) or may be (a
        batch was created), as `judgecore.run.job._machine.History.answered` has it. A job that never was (a
        typo of a model refused at its first send, a key refused) holds nothing to keep: another job
        may take its state dir (`bind_job`)."""
        c = self._conn
        return any(
            c.execute(q).fetchone() is not None
            for q in (
                f"SELECT 1 FROM latest WHERE status IN ({FINAL_SQL}) LIMIT 1",
                "SELECT 1 FROM outcomes WHERE usage IS NOT NULL LIMIT 1",
                "SELECT 1 FROM sub_batches LIMIT 1",
            )
        )

    def _restart(self) -> None:
        """Empty the checkpoint of a job that never received an answer (`answered` is False), for the
        job this run asks to bind in its place: its items, sends and everything it remembered."""
        with self._tx() as c:
            for table in ("items", "outcomes", "latest", "sub_batch_ids", "sub_batches"):
                c.execute(f"DELETE FROM {table}")
            c.execute("DELETE FROM item_metadata")
            c.execute("DELETE FROM item_messages")
            c.execute("DELETE FROM meta")

    def _check_manifest(self, manifest: Mapping[str, Any], *, restart: bool = False) -> Any:
        """The stored manifest (None for a new dir, or for one whose job never received an answer:
        with `restart`, emptied for this job); `StateMismatchError` naming the fields that differ."""
        old = self.manifest
        if old is not None and old != dict(manifest) and not self.answered():
            if restart:
                self._restart()
            return None
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
                "SELECT i.item_id FROM incoming n JOIN items i ON i.item_id = n.item_id "
                "WHERE i.digest != n.digest ORDER BY i.seq"
            )
        ]
        if conflicts:
            c.execute("DELETE FROM incoming")
            raise ContentConflictError(conflicts)
