"""The harvest's per-line policy as a fold: foreign batches, unknown and duplicate lines, the breaker's
gate, missing lines, cuts; and the law that how the lines are grouped changes nothing."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.breaker import Breaker, BreakerPolicy
from judgecore.results.outcomes import RawResult, Status, classify
from judgecore.run.batch.gate import MISSING, IdSet
from judgecore.run.batch.harvest import SHOWN, HarvestFold

# a line's result as the port gives it: its Outcome
OK = classify(RawResult(kind="succeeded", text="7", stop_reason="end_turn"))
INVALID = classify(RawResult(kind="errored", error_type="invalid_request_error", message="bad"))
OVERLOADED = classify(RawResult(kind="errored", error_type="overloaded_error", message="busy"))
AUTH = classify(RawResult(kind="errored", error_type="authentication_error", message="no key"))


def fold_of(ids: list[str], breaker: Breaker | None = None, settle: tuple[int, ...] = (1,)) -> HarvestFold:
    return HarvestFold.start(
        sub_id=1,
        batch_id="msgbatch_1",
        ids=IdSet(ids),
        breaker=breaker or Breaker.start(0),  # closed: every line recorded as it comes
        settle=settle,
    )


def test_a_batch_whose_first_line_is_not_ours_records_nothing_and_stops() -> None:
    fold, rows, say = fold_of(["a", "b"]).take([("zz", OK), ("a", OK)])
    assert (True, (), 1) == (fold.stopped, rows, len(say))
    assert "another job's requests" in say[0]
    again, rows, say = fold.take([("b", OK)])
    assert (again, rows, say) == (fold, (), ())


def test_unknown_and_duplicate_lines_are_skipped_and_the_first_few_named() -> None:
    lines = [("a", OK), *((f"x{i}", OK) for i in range(SHOWN + 2)), ("a", OVERLOADED), ("b", OK)]
    fold, rows, say = fold_of(["a", "b"]).take(lines)
    assert ["a", "b"] == [r.custom_id for r in rows]
    assert Status.SUCCEEDED == rows[0].outcome.status  # the first line of "a" is kept
    assert SHOWN + 1 == len(say)  # SHOWN unknown, one duplicate
    end = fold.finish({1: []}, at=5.0, u=0.5)
    assert f"{SHOWN + 2:,} unknown and 1 duplicate" in end.say[0]


def test_an_id_with_no_line_in_a_whole_stream_is_missing_and_open() -> None:
    fold, _, _ = fold_of(["a", "b", "c"]).take([("a", OK), ("b", OVERLOADED)])
    end = fold.finish({1: ["c"]}, at=5.0, u=0.5)
    assert [("c", MISSING, 1)] == [(h.custom_id, h.outcome, h.sub_id) for h in end.rows]
    assert frozenset({"b", "c"}) == end.event.open
    assert {"succeeded": 1, "retry": 2} == end.counts


def test_a_cut_stream_settles_nothing_and_reports_its_error() -> None:
    error = RawResult(kind="connection_error", message="cut")
    fold, _, _ = fold_of(["a", "b"]).take([("a", OK)])
    end = fold.cut(error).finish({1: ["b"]}, at=5.0, u=0.5)
    assert ((), None, error, frozenset()) == (end.rows, end.counts, end.event.error, end.event.open)


def test_the_first_fatal_line_is_the_events_fatal() -> None:
    fold, rows, _ = fold_of(["a", "b", "c"]).take([("a", OK), ("b", AUTH), ("c", AUTH)])
    end = fold.finish({1: []}, at=5.0, u=0.5)
    assert 3 == len(rows)
    assert (AUTH, "result of b in batch msgbatch_1") == (end.event.fatal, end.event.fatal_where)


def test_invalid_lines_are_held_while_the_breaker_decides_then_released_in_order() -> None:
    breaker = Breaker.start(10, policy=BreakerPolicy(k=3))
    fold, rows, _ = fold_of(["a", "b", "c"], breaker).take([("a", INVALID), ("b", INVALID)])
    assert () == rows
    assert ("a", "b") == tuple(h.custom_id for h in fold.gate.held)
    fold, rows, _ = fold.take([("c", OK)])
    assert ["a", "b", "c"] == [h.custom_id for h in rows]
    end = fold.finish({1: []}, at=5.0, u=0.5)
    assert (frozenset(), ()) == (end.event.open, end.event.held)


def test_a_tripped_breaker_drops_its_invalid_lines_and_leaves_them_open() -> None:
    breaker = Breaker.start(10, policy=BreakerPolicy(k=2))
    fold, rows, _ = fold_of(["a", "b", "c"], breaker).take([("a", INVALID), ("b", INVALID), ("c", OK)])
    end = fold.finish({1: ["a", "b"]}, at=5.0, u=0.5)
    assert ["c"] == [h.custom_id for h in rows]
    assert end.event.breaker.tripped
    assert () == end.rows  # they had a line: not missing
    assert frozenset({"a", "b"}) == end.event.open


def test_lines_an_earlier_harvest_held_are_not_missing_when_a_later_one_settles_their_batch() -> None:
    """Sub-batch 1's invalid lines are held while the breaker decides, and sub-batch 1 is settled by
    the harvest of sub-batch 2: they had their lines, so no missing row takes their (sub-batch, id)
    slot, and once the breaker closes they are recorded as quarantined under sub-batch 1."""
    breaker = Breaker.start(10, policy=BreakerPolicy(k=5))
    first, rows, _ = fold_of(["a", "b"], breaker, settle=()).take([("a", INVALID), ("b", INVALID)])
    assert () == rows
    end = first.finish({}, at=5.0, u=0.5)
    second = HarvestFold.start(
        sub_id=2,
        batch_id="msgbatch_2",
        ids=IdSet(["c"]),
        breaker=end.event.breaker,
        held=end.event.held,
        settle=(1, 2),
    )
    second, rows, _ = second.take([("c", INVALID)])
    end = second.finish({1: ["a", "b"], 2: ["c"]}, at=6.0, u=0.5)
    assert () == end.rows  # none missing: all three are held
    assert ["a", "b", "c"] == [h.custom_id for h in end.event.held]
    third = HarvestFold.start(
        sub_id=3, batch_id="msgbatch_3", ids=IdSet(["d"]), breaker=end.event.breaker, held=end.event.held
    )
    _, rows, _ = third.take([("d", OK)])
    assert [("a", 1), ("b", 1), ("c", 2), ("d", 3)] == [(h.custom_id, h.sub_id) for h in rows]
    assert [Status.QUARANTINED] * 3 + [Status.SUCCEEDED] == [h.outcome.status for h in rows]


_answers = st.sampled_from([OK, INVALID, OVERLOADED, AUTH])


@given(
    st.lists(st.tuples(st.sampled_from(["a", "b", "c", "d", "e", "x"]), _answers), max_size=30),
    st.lists(st.integers(0, 30), max_size=6),
    st.integers(1, 4),
)
def test_how_the_lines_are_grouped_changes_nothing(lines, cuts, k) -> None:
    """Fed whole, or in any groups: the same rows in the same order, the same sayings and event."""
    breaker = Breaker.start(5, policy=BreakerPolicy(k=k))
    ids = ["a", "b", "c", "d", "e"]

    def run(groups):
        fold, rows, say = fold_of(ids, breaker), [], []
        for g in groups:
            fold, r, s = fold.take(g)
            rows += r
            say += s
        unanswered = {1: [c for c in ids if c not in {h.custom_id for h in rows}]}
        end = fold.finish(unanswered, at=1.0, u=0.5)
        return rows, say, end

    bounds = sorted({0, len(lines), *(c for c in cuts if c <= len(lines))})
    groups = [lines[i:j] for i, j in itertools.pairwise(bounds)]
    assert run([lines]) == run(groups)
