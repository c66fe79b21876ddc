"""What the summary and the report read from a checkpoint: the items' metadata and digest, the billed
answers' usage (per route, per judge) and spend, and the timeline of outcomes."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence

import orjson

from judgecore.decide.planning import ModelPrice
from judgecore.decide.spend import spend_of
from judgecore.job.ids import sha256
from judgecore.results.outcomes import Usage

_USAGE_FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


class Usages:
    """The summary's and the report's reads (a part of `adapters.checkpoint.store.Store`)."""

    _conn: sqlite3.Connection

    def record_metadata(self, rows: Iterable[tuple[str, bytes | None]], *, any_given: bool = True) -> None:
        """Keep each item's metadata (`(custom_id, JSON bytes or None)`), so `summary` can group by it
        from the checkpoint alone; the latest run's metadata wins (it is not part of the item's digest).

        `any_given=False` (no row has metadata): nothing is written, nor `rows` read, unless some
        metadata was kept before (to be cleared); an item with no row reads as one with none."""
        if not any_given and self._conn.execute("SELECT 1 FROM item_metadata LIMIT 1").fetchone() is None:
            return
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
        `judgecore.decide.spend.spend_of` over these sums is the spend of every answer; `status` stays quick)."""
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
        h = sha256()
        for item_id, digest in self._conn.execute("SELECT item_id, digest FROM items ORDER BY seq"):
            h.update(f"{item_id}\x00{digest}\n".encode())
        return h.hexdigest()

    def billed_answers(self) -> int:
        """How many answers the API billed (recorded outcomes with usage; an item answered twice counts
        twice), for the mean usage per answer."""
        return int(self._conn.execute("SELECT COUNT(*) FROM outcomes WHERE usage IS NOT NULL").fetchone()[0])

    def usage_by_judge(self, judges: Sequence[str]) -> dict[str, list[tuple[str, Usage]]]:
        """A panel's billed usage summed per judge and route. A request's judge is the first part of
        the tag after the last `#` of its item id (`judgecore.job.designs`): the model an answer names may
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

    def spent_usd(self, price: ModelPrice) -> float:
        """What the job's answers so far cost, from their recorded usage summed per route in SQLite
        (`judgecore.decide.spend.spend_of`: cost is linear in each token count)."""

        return spend_of(self.usage_by_route(), price).spent
