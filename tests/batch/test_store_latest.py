"""The checkpoint's answer for each item: which recorded outcome wins, and the counts that follow."""

from __future__ import annotations

from pathlib import Path

from adapters.store import OutcomeRow, Store
from judgecore import FailureClass, Outcome, Status

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


def test_a_refusal_keeps_its_stop_details_and_an_error_its_code_in_the_checkpoint(tmp_path: Path) -> None:
    from judgecore import RawResult, Usage, classify
    from judgecore.outcomes import StopDetails

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

    from adapters.store import DB_NAME

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
