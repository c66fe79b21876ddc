"""The checkpoint's answer for each item: which recorded outcome wins, and the counts that follow."""

from __future__ import annotations

from pathlib import Path

from adapters.checkpoint.store import SCHEMA_VERSION, OutcomeRow, Store
from judgecore.results.outcomes import FailureClass, Outcome, Status

from .fakes import bind, make_requests


def _row(
    cid: str, status: Status, sub_id: int, at: float, text: str | None = None, attempts: int = 1
) -> OutcomeRow:
    failure = None if status is Status.SUCCEEDED else FailureClass.INFRA_TRANSIENT
    outcome = Outcome(status=status, failure=failure, reason=status.value, text=text)
    return OutcomeRow(custom_id=cid, outcome=outcome, route="batch", at=at, sub_id=sub_id, attempts=attempts)


def test_a_final_outcome_wins_over_a_later_non_final_one_and_the_newest_wins_among_equals(
    tmp_path: Path,
) -> None:
    requests = make_requests(4)
    a, b, c, d = (r.custom_id for r in requests)
    store = Store.open(tmp_path / "s")
    try:
        bind(store, requests)
        store.record_outcomes(
            [
                _row(a, Status.SUCCEEDED, 1, 1.0, text="first"),
                _row(a, Status.RETRY, 2, 2.0, attempts=2),  # later, not final: loses
                _row(b, Status.RETRY, 1, 1.0),
                _row(b, Status.RETRY, 2, 2.0, text="newer"),  # newest non-final wins
                _row(c, Status.SUCCEEDED, 1, 1.0, text="old"),
                _row(c, Status.SUCCEEDED, 2, 2.0, text="new"),  # newest final wins
            ]
        )
        latest = [
            (cid, o.status if o else None, o.text if o else None, total)
            for cid, o, _, _, total in store.latest()
        ]
        counts = store.counts()
    finally:
        store.close()
    expected = [
        (a, Status.SUCCEEDED, "first", 3),
        (b, Status.RETRY, "newer", 2),
        (c, Status.SUCCEEDED, "new", 2),
        (d, None, None, 0),
    ]
    assert expected == latest
    assert {"succeeded": 2, "miss": 0, "quarantined": 0, "pending": 2} == counts


def test_a_reruns_metadata_replaces_the_earlier_one_and_an_unchanged_one_stays(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"model": "m"}, [("c1", "a", "d"), ("c2", "b", "d"), ("c3", "c", "d")])
        store.record_metadata([("c1", b'{"m": 1}'), ("c2", None), ("c3", b'{"m": 3}')])
        store.record_metadata([("c1", b'{"m": 1}'), ("c2", b'{"m": 2}'), ("c3", None)])
        rows = list(store.item_rows())
    finally:
        store.close()
    assert [("c1", "a", '{"m": 1}'), ("c2", "b", '{"m": 2}'), ("c3", "c", None)] == [
        (c, i, None if m is None else (m.decode() if isinstance(m, bytes) else m)) for c, i, m in rows
    ]


def test_a_run_with_no_metadata_writes_none_and_clears_what_an_earlier_run_kept(tmp_path: Path) -> None:
    """No item with metadata, none kept: nothing is written (its rows are not even read). Once some
    was kept, a rerun without any clears it, as the latest run's metadata always wins."""

    def unread():
        raise AssertionError("the rows were read")
        yield  # pragma: no cover

    store = Store.open(tmp_path / "s")
    try:
        store.bind_job({"model": "m"}, [("c1", "a", "d"), ("c2", "b", "d")])
        store.record_metadata(unread(), any_given=False)
        first = list(store.item_rows())
        store.record_metadata([("c1", b'{"m": 1}'), ("c2", None)])
        store.record_metadata([("c1", None), ("c2", None)], any_given=False)
        cleared = list(store.item_rows())
    finally:
        store.close()
    assert [("c1", "a", None), ("c2", "b", None)] == first == cleared


def test_a_refusal_keeps_its_stop_details_and_an_error_its_code_in_the_checkpoint(tmp_path: Path) -> None:
    from judgecore.results.outcomes import RawResult, StopDetails, Usage, classify

    requests = make_requests(2)
    a, b = (r.custom_id for r in requests)
    details = StopDetails(category="cyber", explanation="declined")
    refusal = classify(
        RawResult(
            kind="succeeded",
            text="",
            stop_reason="refusal",
            usage=Usage(output_tokens=1),
            stop_details=details,
        )
    )
    on_hold = classify(
        RawResult(kind="errored", error_type="invalid_request_error", error_code="organization_on_hold")
    )
    store = Store.open(tmp_path / "s")
    try:
        bind(store, requests)
        store.record_outcomes(
            [
                OutcomeRow(custom_id=a, outcome=refusal, route="sync", at=1.0),
                OutcomeRow(custom_id=b, outcome=on_hold, route="batch", at=1.0, sub_id=1),
            ]
        )
        latest = {cid: o for cid, o, *_ in store.latest()}
        counts = {k: v for k, v in store.counts().items() if v}
    finally:
        store.close()
    assert {"miss": 1, "pending": 1} == counts, "a refusal is final; an account state is not"
    assert refusal == latest[a] and details == latest[a].stop_details  # type: ignore[union-attr]
    assert "organization_on_hold" == latest[b].error_code  # type: ignore[union-attr]


def test_a_checkpoint_from_before_stop_details_is_read_and_then_given_the_columns(tmp_path: Path) -> None:
    """An older state dir (no `error_code`, no `stop_details`): read-only it reads as None; opened for a
    run it gains both columns, and what it held reads as before."""
    import sqlite3

    from adapters.checkpoint.store import DB_NAME

    requests = make_requests(1)
    store = Store.open(tmp_path / "s")
    try:
        bind(store, requests)
        store.record_outcomes([_row(requests[0].custom_id, Status.SUCCEEDED, 1, 1.0, text="kept")])
    finally:
        store.close()
    with sqlite3.connect(tmp_path / "s" / DB_NAME) as conn:  # as an earlier version made it
        conn.execute("ALTER TABLE outcomes DROP COLUMN stop_details")
        conn.execute("ALTER TABLE outcomes DROP COLUMN error_code")
    conn.close()
    old = Store.open_readonly(tmp_path / "s")
    try:
        ((_, outcome, *_),) = list(old.latest())
    finally:
        old.close()
    assert ("kept", None, None) == (outcome.text, outcome.stop_details, outcome.error_code)  # type: ignore[union-attr]
    store = Store.open(tmp_path / "s")
    try:
        ((_, outcome, *_),) = list(store.latest())
    finally:
        store.close()
    assert "kept" == outcome.text  # type: ignore[union-attr]
    with sqlite3.connect(tmp_path / "s" / DB_NAME) as conn:
        columns = {r[1] for r in conn.execute("PRAGMA table_info(outcomes)")}
    conn.close()
    assert {"error_code", "stop_details"} <= columns


def _as_before_the_latest_table(state: Path) -> None:
    """Make `state`'s checkpoint as a schema-2 version of the code left it: no `latest` table, no trigger."""
    import sqlite3

    from adapters.checkpoint.store import DB_NAME

    conn = sqlite3.connect(state / DB_NAME)
    conn.execute("DROP TRIGGER latest_of_outcome")
    conn.execute("DROP TABLE latest")
    conn.execute("UPDATE meta SET value = '2' WHERE key = 'schema'")
    conn.commit()
    conn.close()


def _answers(
    store: Store,
) -> tuple[list[tuple[str, str | None, str | None, int]], dict[str, int], list[str | None]]:
    latest = [
        (cid, o.status.value if o else None, o.text if o else None, n) for cid, o, _, _, n in store.latest()
    ]
    return latest, store.counts(), sorted(store.succeeded_texts(), key=str)


def test_an_older_checkpoint_answers_the_same_read_only_without_a_write_and_once_migrated(
    tmp_path: Path,
) -> None:
    """A checkpoint from before the kept winners reads the same read-only (its file untouched) and after
    a writable open builds them; outcomes recorded after that keep them up to date."""
    import hashlib
    import sqlite3

    from adapters.checkpoint.store import DB_NAME

    state = tmp_path / "s"
    requests = make_requests(4)
    a, b, c, d = (r.custom_id for r in requests)
    store = Store.open(state)
    try:
        bind(store, requests)
        store.record_outcomes(
            [
                _row(a, Status.SUCCEEDED, 1, 1.0, text="first"),
                _row(a, Status.RETRY, 2, 2.0, attempts=2),
                _row(b, Status.RETRY, 1, 1.0),
                _row(c, Status.SUCCEEDED, 1, 1.0, text="old"),
                _row(c, Status.SUCCEEDED, 2, 2.0, text="new"),
            ]
        )
        expected = _answers(store)
    finally:
        store.close()
    _as_before_the_latest_table(state)
    digest = hashlib.sha256((state / DB_NAME).read_bytes()).hexdigest()
    old = Store.open_readonly(state)
    try:
        assert expected == _answers(old)
    finally:
        old.close()
    assert digest == hashlib.sha256((state / DB_NAME).read_bytes()).hexdigest(), "a read-only open wrote"
    store = Store.open(state)
    try:
        assert expected == _answers(store)
        store.record_outcomes([_row(b, Status.SUCCEEDED, 3, 3.0, text="late"), _row(d, Status.RETRY, 3, 3.0)])
        latest, counts, _ = _answers(store)
    finally:
        store.close()
    assert [(b, "succeeded", "late", 2), (d, "retry", None, 1)] == [r for r in latest if r[0] in (b, d)]
    assert {"succeeded": 3, "miss": 0, "quarantined": 0, "pending": 1} == counts
    conn = sqlite3.connect(state / DB_NAME)
    try:
        assert (str(SCHEMA_VERSION),) == conn.execute(
            "SELECT value FROM meta WHERE key = 'schema'"
        ).fetchone()
    finally:
        conn.close()


def test_an_outcome_rolled_back_leaves_no_winner_behind(tmp_path: Path) -> None:
    """The winner is written in the outcome's own transaction: a group that fails to commit leaves both
    the outcome and the winner as they were."""
    import sqlite3

    import pytest

    requests = make_requests(2)
    a, b = (r.custom_id for r in requests)
    store = Store.open(tmp_path / "s")
    try:
        bind(store, requests)
        store.record_outcomes([_row(a, Status.RETRY, 1, 1.0)])
        w = store.writer()
        w.add(_row(a, Status.SUCCEEDED, 2, 2.0, text="lost"))
        w.add(_row(b, Status.SUCCEEDED, 2, 2.0, text="lost"))
        w._buf.append(w._buf[-1][:3])  # a malformed third row: inserted after the two, it fails the group
        with pytest.raises(sqlite3.ProgrammingError):
            w.flush()
    finally:
        store.close()
    store = Store.open(tmp_path / "s")
    try:
        latest, counts, _ = _answers(store)
    finally:
        store.close()
    assert [(a, "retry", None, 1), (b, None, None, 0)] == latest
    assert 2 == counts["pending"]


_IDS = ("c1", "c2", "c3")


def _outcome_rows() -> object:
    from hypothesis import strategies as st

    row = st.tuples(
        st.sampled_from(_IDS), st.sampled_from(list(Status)), st.sampled_from([None, 1, 2]), st.integers(1, 3)
    )
    return st.lists(st.lists(row, max_size=6), max_size=4)


def test_the_kept_winners_are_what_grouping_every_outcome_finds() -> None:
    """For any outcomes recorded in any groups (duplicates of a sub-batch's line included, which are
    not recorded), each id's kept winner, status and summed attempts are those of grouping them all."""
    import tempfile

    from hypothesis import given

    from adapters.checkpoint.store.schema import LATEST_FROM_OUTCOMES

    @given(_outcome_rows())
    def check(groups: list[list[tuple[str, Status, int | None, int]]]) -> None:
        with tempfile.TemporaryDirectory() as tmp:
            store = Store.open(Path(tmp) / "s")
            try:
                store.bind_job({"model": "m"}, [(cid, "item-" + cid, "d") for cid in _IDS])
                for k, group in enumerate(groups):
                    store.record_outcomes(
                        OutcomeRow(
                            custom_id=cid,
                            outcome=Outcome(status=status, failure=None, reason=status.value),
                            route="batch" if sub is not None else "sync",
                            at=float(k),
                            sub_id=sub,
                            attempts=attempts,
                        )
                        for cid, status, sub, attempts in group
                    )
                kept = store._conn.execute("SELECT * FROM latest ORDER BY custom_id").fetchall()
                grouped = store._conn.execute(f"{LATEST_FROM_OUTCOMES} ORDER BY b.custom_id").fetchall()
            finally:
                store.close()
        assert grouped == kept

    check()
