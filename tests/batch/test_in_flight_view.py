"""The ids in flight are one view (`in_flight`), made at open: a checkpoint from before it still opens,
read-only (a dry run, `status`) and for writing, and answers the same."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adapters.checkpoint.store import DB_NAME, OutcomeRow, Store
from judgecore.results.outcomes import Outcome, Status
from judgecore.run.subbatch import SubState


def _job(state: Path) -> tuple[str, ...]:
    """A job with one live sub-batch of three ids, one of them answered."""
    ids = ("c1", "c2", "c3")
    store = Store.open(state)
    try:
        store.bind_job({"model": "m"}, [(cid, "item-" + cid, "d") for cid in ids])
        sub = store.record_intent(round=0, custom_ids=ids, n_bytes=10, at=1.0)
        store.record_created(sub, batch_id="msgbatch_1", created_at=2.0, expires_at=3.0)
        done = Outcome(status=Status.SUCCEEDED, failure=None, reason="ok", text="x")
        store.record_outcomes([OutcomeRow(custom_id=ids[0], outcome=done, route="batch", at=2.5, sub_id=sub)])
    finally:
        store.close()
    return ids


def _forget_the_view(state: Path) -> None:
    conn = sqlite3.connect(state / DB_NAME)
    conn.execute("DROP VIEW in_flight")
    conn.commit()
    conn.close()


def test_a_checkpoint_from_before_the_view_answers_the_same_read_only_and_for_writing(tmp_path: Path) -> None:
    """Read-only, the view is the connection's own (nothing written); a writable open adds it."""
    state = tmp_path / "s"
    ids = _job(state)
    expected = ({ids[1]: "msgbatch_1", ids[2]: "msgbatch_1"}, frozenset(ids[1:]), frozenset(ids[:1]))
    _forget_the_view(state)
    for open_ in (Store.open_readonly, Store.open):
        store = open_(state)
        try:
            state_ = store.job_state()
            subs = store.checkpoint().subs
            assert expected == (store.waiting_batches(), state_.in_flight, state_.final)
            assert [(SubState.LIVE, ids[1:])] == [(s.state, tuple(sorted(s.ids))) for s in subs]
        finally:
            store.close()
    conn = sqlite3.connect(state / DB_NAME)
    try:
        kept = conn.execute("SELECT name FROM sqlite_master WHERE type = 'view'").fetchall()
    finally:
        conn.close()
    assert [("in_flight",)] == kept


#: The view as versions before 0.1.0's last change wrote it: every id sent scanned, its sub-batch looked up.
_EARLIER_VIEW = (
    "CREATE VIEW in_flight AS "
    "SELECT s.sub_id, s.custom_id, b.batch_id FROM sub_batch_ids s JOIN sub_batches b ON b.sub_id = s.sub_id "
    "WHERE b.state IN ('canceled','ended','group_harvested','intent','live','stuck') AND NOT EXISTS ("
    "SELECT 1 FROM outcomes o WHERE o.sub_id = s.sub_id AND o.custom_id = s.custom_id)"
)


def test_an_earlier_definition_of_the_view_is_written_again_and_answers_the_same(tmp_path: Path) -> None:
    """A checkpoint whose view an earlier version wrote gets this one at its next writable open (its
    sub-batches read first: a finished job's ids are not scanned to find none waiting); the answers
    are the same, and a harvested sub-batch's ids are no longer waiting."""
    state = tmp_path / "s"
    ids = _job(state)
    conn = sqlite3.connect(state / DB_NAME)
    conn.execute("DROP VIEW in_flight")
    conn.execute(_EARLIER_VIEW)
    conn.commit()
    conn.close()
    store = Store.open(state)
    try:
        assert {ids[1]: "msgbatch_1", ids[2]: "msgbatch_1"} == store.waiting_batches()
        assert frozenset(ids[1:]) == store.job_state().in_flight
        plan = " ".join(str(r[3]) for r in store._conn.execute("EXPLAIN QUERY PLAN SELECT * FROM in_flight"))
        assert plan.startswith("SCAN b"), plan  # the sub-batches first, each one's ids by its key
        store.set_state(1, SubState.HARVESTED, None)
        assert ({}, frozenset()) == (store.waiting_batches(), store.job_state().in_flight)
    finally:
        store.close()
    conn = sqlite3.connect(state / DB_NAME)
    try:
        (sql,) = conn.execute("SELECT sql FROM sqlite_master WHERE type = 'view'").fetchone()
    finally:
        conn.close()
    assert "FROM sub_batches b CROSS JOIN sub_batch_ids s" in sql
