"""A harvest's group of rows (`OutcomeWriter.add_rows`, a loop over the fold's rows) is recorded exactly
as one `add_outcome` per row records it: every column of every row, the winners, the counts, the usage
column's text (each answer's four counts as `orjson` writes their object), and `added`, the rows new
to the checkpoint (a duplicate ignored is not one, nor the trigger's write of each winner)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from adapters.checkpoint.store import Store
from judgecore.results.outcomes import FailureClass, Outcome, RawResult, Status, StopDetails, Usage, classify
from judgecore.run.batch.gate import MISSING

from .fakes import bind, make_requests


def _outcomes() -> list[Outcome]:
    """One of each kind of outcome a harvest records: answers with and without usage, a truncation, a
    refusal with its stop details, an invalid request, a rate limit with its delay, a line missing."""
    return [
        classify(
            RawResult(
                kind="succeeded",
                text="7/10",
                stop_reason="end_turn",
                model="m",
                usage=Usage.of(120, 14, 0, 2048),
            )
        ),
        classify(RawResult(kind="succeeded", text=None, stop_reason="end_turn", model="m", usage=None)),
        classify(
            RawResult(kind="succeeded", text="cut", stop_reason="max_tokens", usage=Usage.of(2**31, 0, 7, 0))
        ),
        classify(
            RawResult(
                kind="succeeded",
                text="no",
                stop_reason="refusal",
                usage=Usage.of(1, 2, 3, 4),
                stop_details=StopDetails(category="cyber", explanation="declined"),
            )
        ),
        classify(RawResult(kind="errored", error_type="invalid_request_error", message='bad "field"')),
        Outcome(
            status=Status.RETRY,
            failure=FailureClass.RATE_LIMIT,
            reason="rate limited",
            error_type="rate_limit_error",
            error_message="slow down",
            retry_after=2.5,
            error_code="x",
        ),
        MISSING,
    ]


def _stored(store: Store) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]], dict[str, int]]:
    conn = store._conn
    rows = conn.execute("SELECT * FROM outcomes ORDER BY row").fetchall()
    latest = conn.execute("SELECT * FROM latest ORDER BY custom_id").fetchall()
    return rows, latest, store.counts()


def test_a_group_of_rows_is_recorded_as_one_add_per_row_records_it(tmp_path: Path) -> None:
    outcomes = _outcomes()
    requests = make_requests(len(outcomes))
    ids = [r.custom_id for r in requests]
    held = [
        (c, o, 3, "msgbatch_01" if i % 2 else None)
        for i, (c, o) in enumerate(zip(ids, outcomes, strict=True))
    ]
    held.append((ids[0], outcomes[0], 3, "msgbatch_01"))  # a duplicate of a recorded row: ignored by both
    got = []
    for name in ("each", "group"):
        store = Store.open(tmp_path / name)
        try:
            bind(store, requests)
            with store.writer(group=3) as w:
                if name == "each":
                    for c, o, sub, bid in held:
                        w.add_outcome(c, o, route="batch", at=5.0, sub_id=sub, batch_id=bid)
                else:
                    w.add_rows(held, route="batch", at=5.0)
            got.append((*_stored(store), w.added))
        finally:
            store.close()
    each, group = got
    assert each == group
    rows, _, counts, added = group
    assert len(outcomes) == added == len(rows)
    assert 2 == counts["pending"]  # the rate limit and the missing line
    usage_column = (
        11  # row, custom_id, sub_id, route, batch_id, status, failure, reason, text, stop_reason, model
    )
    assert (
        orjson.dumps(
            {
                "input_tokens": 120,
                "output_tokens": 14,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 2048,
            }
        ).decode()
        == rows[0][usage_column]
    )
    assert rows[1][usage_column] is None
