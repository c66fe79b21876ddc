"""Each sub-batch names its lane (the provider its batch went to), so a panel's batch lanes share one
checkpoint: each lane's machine sees, reconciles and numbers its own sub-batches only. A state dir an
earlier version wrote (schema 3: no lane column, one batch lane) reads as that one lane's."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from adapters.checkpoint.store import DB_NAME, SCHEMA_VERSION, Store
from judgecore.run import batch as br
from judgecore.run.batch import BatchSettings

from .fakes import bind, make_requests


def _schema_3_dir(state: Path) -> list[str]:
    """A checkpoint as the code before lanes left it: one live sub-batch and one intent, no `lane`
    column, schema 3 (made with this code, then the column dropped by raw SQL)."""
    reqs = make_requests(6)
    store = Store.open(state)
    try:
        bind(store, reqs)
        ids = [r.custom_id for r in reqs]
        one = store.record_intent(round=1, custom_ids=ids[:3], n_bytes=10, at=1.0)
        store.record_created(one, batch_id="msgbatch_old", created_at=2.0, expires_at=90_000.0)
        store.record_intent(round=1, custom_ids=ids[3:], n_bytes=10, at=3.0)
    finally:
        store.close()
    with sqlite3.connect(state / DB_NAME) as conn:
        conn.execute("DROP VIEW in_flight")
        conn.execute("ALTER TABLE sub_batches DROP COLUMN lane")
        conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema'")
    return ids


def _columns(state: Path) -> set[str]:
    with sqlite3.connect(state / DB_NAME) as conn:
        return {r[1] for r in conn.execute("PRAGMA table_info(sub_batches)")}


def test_an_older_dir_reads_as_its_one_lane_read_only_and_once_migrated(tmp_path: Path) -> None:
    state = tmp_path / "old"
    ids = _schema_3_dir(state)
    assert "lane" not in _columns(state)

    ro = Store.open_readonly(state)  # status, a dry run: read as it is, nothing written
    try:
        assert [(1, None), (2, None)] == [(r.sub_id, r.lane) for r in ro.sub_batches()]
        assert [] == ro.sub_batches(lane="anthropic")
    finally:
        ro.close()
    assert "lane" not in _columns(state)

    store = Store.open(state)  # a run: the column is added, its rows not yet named
    try:
        assert SCHEMA_VERSION == int(store.get_meta("schema"))
        assert [None, None] == [r.lane for r in store.sub_batches()]
        assert 2 == store.name_lanes("anthropic")  # the run knows the job's one batch lane
        assert 0 == store.name_lanes("openai")  # named once: nothing left to name
        assert ["anthropic", "anthropic"] == [r.lane for r in store.sub_batches()]
        mine = store.checkpoint(lane="anthropic")
        assert [1, 2] == [v.sub_id for v in mine.subs]
        assert tuple(ids[:3]) == mine.subs[0].ids  # its ids still in flight
        other = store.checkpoint(lane="openai")
        assert () == other.subs and 2 == other.top_sub  # another lane numbers past them
        assert frozenset(ids) == store.job_state().in_flight  # never resent on any route meanwhile
    finally:
        store.close()
    Store.open(state).close()  # a second open finds nothing to migrate


def test_each_lanes_intents_are_its_own(tmp_path: Path) -> None:
    reqs = make_requests(4)
    store = Store.open(tmp_path / "s")
    try:
        bind(store, reqs)
        store.record_intent(
            round=1, custom_ids=[reqs[0].custom_id], n_bytes=1, at=1.0, sub_id=1, lane="openai"
        )
        store.record_intent(
            round=1, custom_ids=[reqs[1].custom_id], n_bytes=1, at=1.0, sub_id=2, lane="anthropic"
        )
        assert [1] == [r.sub_id for r in store.sub_batches(lane="openai")]
        assert [2] == [v.sub_id for v in store.checkpoint(lane="anthropic").subs]
        assert [1, 2] == [v.sub_id for v in store.checkpoint().subs]
    finally:
        store.close()


@pytest.mark.parametrize("top", [0, 1, 2, 7])
def test_batch_lanes_running_at_once_never_draw_the_same_sub_id(top: int) -> None:
    """Two machines on one checkpoint, each in its slot: their new sub-batches are numbered apart, past
    every sub_id the checkpoint holds."""
    reqs = make_requests(8)
    settings = BatchSettings(max_batch_requests=1)
    drawn = []
    for slot in ((0, 2), (1, 2)):
        run = br.BatchRun.start(
            br.Checkpoint(top_sub=top), requests=reqs, settings=settings, now=0.0, sub_slot=slot
        )
        _, actions = run.advance(0.0)
        drawn.append({a.sub_id for a in actions if isinstance(a, br.Create)})
    assert drawn[0] and drawn[1]
    assert not drawn[0] & drawn[1]
    assert min(drawn[0] | drawn[1]) > top
    assert all(s % 2 == 0 for s in drawn[0]) and all(s % 2 == 1 for s in drawn[1])
