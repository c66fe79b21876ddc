"""A sub-batch's ids in the checkpoint: what a resume reads back, from a checkpoint of today or of before."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from adapters.checkpoint.store import DB_NAME, OutcomeRow, Store
from judgecore.results.outcomes import Outcome, Status

from .fakes import bind, make_requests

_OLD_INDEX = "CREATE INDEX sub_batch_ids_cid ON sub_batch_ids (custom_id)"


def _indexes(state: Path) -> set[str]:
    conn = sqlite3.connect(state / DB_NAME)
    try:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE tbl_name = 'sub_batch_ids'")}
    finally:
        conn.close()


def _resume_view(store: Store) -> tuple[object, ...]:
    view = store.checkpoint()
    return (
        tuple((s.sub_id, s.state, s.ids) for s in view.subs),
        store.job_state().in_flight,
        store.waiting_batches(),
        {s.sub_id: store.unharvested_ids(s.sub_id) for s in view.subs},
    )


def test_a_checkpoint_with_the_old_id_index_resumes_the_same_ids_in_flight_once_it_is_dropped(
    tmp_path: Path,
) -> None:
    """A checkpoint written while sub-batch ids were also indexed by custom_id (before this version)
    resumes the same: the same ids in flight per sub-batch, in the same order, the same waiting
    batches; its writable open drops that index, and a read-only open leaves the file as it was."""
    state = tmp_path / "s"
    requests = make_requests(7)
    cids = [r.custom_id for r in requests]
    store = Store.open(state)
    try:
        bind(store, requests)
        one = store.record_intent(round=1, custom_ids=cids[:4], n_bytes=100, at=1.0)
        two = store.record_intent(round=1, custom_ids=cids[4:], n_bytes=100, at=1.0)
        store.record_created(one, batch_id="msgbatch_one", created_at=1.0, expires_at=86_401.0)
        store.record_created(two, batch_id="msgbatch_two", created_at=1.0, expires_at=86_401.0)
        answered = Outcome(status=Status.SUCCEEDED, failure=None, reason="succeeded", text="ok")
        store.record_outcomes(
            [
                OutcomeRow(
                    custom_id=cids[1],
                    outcome=answered,
                    route="batch",
                    at=2.0,
                    sub_id=one,
                    batch_id="msgbatch_one",
                )
            ]
        )
        today = _resume_view(store)
    finally:
        store.close()
    assert "sub_batch_ids_cid" not in _indexes(state), "a new checkpoint indexes sub-batch ids by custom_id"
    in_flight = today[1]
    assert set(cids) - {cids[1]} == in_flight

    conn = sqlite3.connect(state / DB_NAME)  # as a checkpoint of an earlier version was
    conn.execute(_OLD_INDEX)
    conn.close()
    old = Store.open_readonly(state)
    try:
        assert today == _resume_view(old)
    finally:
        old.close()
    assert "sub_batch_ids_cid" in _indexes(state), "a read-only open changed the checkpoint"
    store = Store.open(state)
    try:
        assert today == _resume_view(store)
    finally:
        store.close()
    assert "sub_batch_ids_cid" not in _indexes(state)
