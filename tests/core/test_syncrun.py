"""The sync run machine, case by case: what one answer does to the run, as values (no I/O, no clock)."""

from __future__ import annotations

import pytest

from judgecore.decide.breaker import Breaker
from judgecore.decide.planning import ModelPrice
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.retry_after import retry_after
from judgecore.decide.spend import Budget
from judgecore.results.outcomes import FailureClass, RawResult, Status, Usage, classify
from judgecore.run.sync import (
    CONNECT_FAILED,
    Answered,
    Done,
    Launch,
    Record,
    Say,
    SyncPolicy,
    SyncRun,
    Todo,
    Wait,
)

T0 = 1_800_000_000.0
OK = RawResult(kind="succeeded", text="Score: 4", stop_reason="end_turn", usage=Usage(output_tokens=10))
INVALID = RawResult(kind="http_error", status=400, error_type="invalid_request_error", message="bad field")
SERVER = RawResult(kind="http_error", status=500, error_type="api_error", message="boom")
UNREACHABLE = RawResult(
    kind="connection_error", error_type=CONNECT_FAILED, message="cannot connect to the API at http://x:1"
)
DROPPED = RawResult(kind="connection_error", message="Server disconnected")


def limited(seconds: float) -> RawResult:
    return RawResult(kind="http_error", status=429, error_type="rate_limit_error", retry_after=seconds)


def start(n: int = 3, *, total: int | None = None, **policy: object) -> SyncRun:
    todos = tuple(Todo(custom_id=f"c{i}", max_tokens=100) for i in range(n))
    return SyncRun.start(
        todos,
        policy=SyncPolicy(**policy),  # type: ignore[arg-type]
        now=T0,
        breaker=Breaker.start(total if total is not None else n),
    )


def drain(run: SyncRun, now: float) -> tuple[SyncRun, list[object]]:
    """Advance once: every action in order, the last a `Wait` or `Done`."""
    run, actions = run.advance(now)
    assert isinstance(actions[-1], Wait | Done)
    assert not any(isinstance(a, Wait | Done) for a in actions[:-1])
    return run, list(actions)


def answer(run: SyncRun, cid: str, raw: RawResult, now: float, u: float = 0.0) -> SyncRun:
    return run.on(Answered(custom_id=cid, outcome=classify(raw), reading=RateLimitReading(), now=now, u=u))


def launched(actions: list[object]) -> list[str]:
    return [a.todo.custom_id for a in actions if isinstance(a, Launch)]


def recorded(actions: list[object]) -> list[tuple[str, str, int]]:
    return [
        (r.custom_id, str(r.outcome.status), r.attempts)
        for a in actions
        if isinstance(a, Record)
        for r in a.rows
    ]


def test_the_warm_up_item_goes_alone_then_the_rest_fan_out():
    run, actions = drain(start(4, concurrency=8), T0)
    assert (["c0"], Wait(until=None)) == (launched(actions), actions[-1])
    run, actions = drain(answer(run, "c0", OK, T0 + 1), T0 + 1)
    assert [("c0", "succeeded", 1)] == recorded(actions)
    assert ["c1", "c2", "c3"] == launched(actions)


def test_without_warm_up_the_concurrency_limit_caps_the_first_wave():
    _run, actions = drain(start(5, concurrency=2, warm_up=False), T0)
    assert ["c0", "c1"] == launched(actions)


def test_a_429_blocks_every_launch_until_its_retry_after():
    run, _ = drain(start(3, warm_up=False, concurrency=1), T0)
    run = answer(run, "c0", limited(2.0), T0 + 0.1, u=0.5)
    run, actions = drain(run, T0 + 0.1)
    assert [] == launched(actions)
    assert isinstance(actions[-1], Wait) and actions[-1].until is not None and actions[-1].until >= T0 + 2.1
    _run, actions = drain(run, T0 + 2.1)
    assert ["c1"] == launched(actions), "the pace opens at retry-after; c0's own jitter keeps it back"


def test_an_item_left_pending_is_recorded_with_this_runs_sends():
    run = start(1, max_attempts=2)
    for k in range(2):
        run, actions = drain(run, T0 + 100 * k)
        assert ["c0"] == launched(actions)
        run = answer(run, "c0", SERVER, T0 + 100 * k)
    run, actions = drain(run, T0 + 200)
    assert [("c0", "retry", 2)] == recorded(actions)
    assert Done(3, None) == actions[-1]


def test_a_rerun_gives_a_pending_item_a_fresh_budget():
    """A new run (what a rerun builds) sends the item again, `max_attempts` more times at most."""
    run, actions = drain(start(1, max_attempts=1), T0)
    run = answer(run, "c0", SERVER, T0)
    _run, actions = drain(run, T0)
    assert Done(3, None) == actions[-1]
    run, actions = drain(start(1, max_attempts=1), T0 + 10)
    assert ["c0"] == launched(actions)


def test_the_breaker_holds_invalid_answers_then_records_them_once_it_closes():
    run, _ = drain(start(3, warm_up=False), T0)
    run = answer(run, "c0", INVALID, T0)
    run, actions = drain(run, T0)
    assert [] == recorded(actions), "held while the breaker decides"
    run = answer(run, "c1", OK, T0)
    run, actions = drain(run, T0)
    assert [("c0", "quarantined", 1), ("c1", "succeeded", 1)] == recorded(actions)


def test_a_tripped_breaker_records_no_invalid_answer_and_stops_with_exit_4():
    run, _ = drain(start(2, warm_up=False), T0)
    run = answer(run, "c0", INVALID, T0)
    run = answer(run, "c1", INVALID, T0)
    run, actions = drain(run, T0)
    assert [] == recorded(actions)
    assert isinstance(actions[-1], Done) and 4 == actions[-1].exit_status
    assert "bad field" in (actions[-1].reason or "")


def test_a_one_item_job_whose_request_is_invalid_trips_the_breaker():
    run, _ = drain(start(1), T0)
    _run, actions = drain(answer(run, "c0", INVALID, T0), T0)
    assert ([], 4) == (recorded(actions), actions[-1].exit_status)  # type: ignore[union-attr]


def test_a_run_that_ends_undecided_records_what_the_breaker_held():
    """Job of 5, this run has 1 item (the others were final earlier... or are left for later)."""
    run, _ = drain(start(1, total=5), T0)
    _run, actions = drain(answer(run, "c0", INVALID, T0), T0)
    assert [("c0", "quarantined", 1)] == recorded(actions)
    assert Done(0, None) == actions[-1]


def test_the_probe_run_leaves_its_held_answer_to_the_run_that_follows():
    todos = (Todo(custom_id="c0", max_tokens=100),)
    run = SyncRun.start(todos, policy=SyncPolicy(), now=T0, breaker=Breaker.start(5), record_held=False)
    run, _ = drain(run, T0)
    _run, actions = drain(answer(run, "c0", INVALID, T0), T0)
    assert ([], Done(0, None)) == (recorded(actions), actions[-1])


def test_an_unreachable_endpoint_on_first_contact_stops_the_run_naming_it():
    run, _ = drain(start(3, warm_up=False), T0)
    _run, actions = drain(answer(run, "c0", UNREACHABLE, T0), T0)
    assert isinstance(actions[-1], Done) and 4 == actions[-1].exit_status
    assert "http://x:1" in (actions[-1].reason or "")


def test_after_an_http_answer_a_connection_failure_is_transient():
    run, _ = drain(start(3, warm_up=False), T0)
    run = answer(run, "c0", OK, T0)
    run = answer(run, "c1", UNREACHABLE, T0)
    run, actions = drain(run, T0)
    assert not run.stopped
    assert [("c0", "succeeded", 1)] == recorded(actions)


def test_a_dropped_connection_is_transient_even_on_first_contact():
    run, _ = drain(start(1), T0)
    run = answer(run, "c0", DROPPED, T0, u=0.0)
    _run, actions = drain(run, T0)
    assert ["c0"] == launched(actions)


def test_a_fatal_answer_stops_the_run_at_once():
    run, _ = drain(start(3, warm_up=False), T0)
    bad_key = RawResult(kind="http_error", status=401, error_type="authentication_error", message="bad key")
    _run, actions = drain(answer(run, "c0", bad_key, T0), T0)
    assert (
        isinstance(actions[-1], Done)
        and 4 == actions[-1].exit_status
        and "bad key" in (actions[-1].reason or "")
    )


PRICE = ModelPrice(3.0, 15.0)


def costly(usd: float) -> RawResult:
    """A succeeded answer that cost `usd` at PRICE (all of it output tokens)."""
    return RawResult(
        kind="succeeded",
        text="Score: 4",
        stop_reason="end_turn",
        usage=Usage(output_tokens=round(usd / 15e-6)),
    )


def budget_run(n: int, cap: float, bound: float = 1.0) -> SyncRun:
    todos = tuple(Todo(custom_id=f"c{i}", max_tokens=100, bound=bound) for i in range(n))
    return SyncRun.start(
        todos,
        policy=SyncPolicy(warm_up=False, concurrency=8),
        now=T0,
        breaker=Breaker.start(n),
        budget=Budget(cap=cap),
        price=PRICE,
    )


def test_a_budget_that_cannot_fit_the_next_request_waits_for_an_answer_to_free_its_bound():
    """Real spend replaces the bounds: each answer's real cost frees room for the next launch."""
    run, actions = drain(budget_run(5, 2.5), T0)
    assert ["c0", "c1"] == launched(actions)
    assert not [a for a in actions if isinstance(a, Say)], "no budget line while answers can free room"
    run = answer(run, "c0", OK, T0)
    run, actions = drain(run, T0)
    assert ["c2"] == launched(actions)
    for cid, then in (("c1", ["c3"]), ("c2", ["c4"]), ("c3", []), ("c4", [])):
        run = answer(run, cid, OK, T0)
        run, actions = drain(run, T0)
        assert then == launched(actions)
    assert Done(0, None) == actions[-1]


def test_the_budget_stops_only_with_nothing_in_flight_and_says_what_the_rest_needs_from_real_costs():
    run, actions = drain(budget_run(6, 2.5), T0)
    assert ["c0", "c1"] == launched(actions)
    run = answer(run, "c0", costly(0.8), T0)
    run, actions = drain(run, T0)
    assert [] == launched(actions), "0.8 spent + 1.0 in flight + 1.0 next > 2.5: wait for c1"
    assert not [a for a in actions if isinstance(a, Say)]
    run = answer(run, "c1", costly(0.8), T0)
    run, actions = drain(run, T0)
    assert [] == launched(actions), "1.6 spent, nothing in flight: the next bound of 1.0 does not fit"
    notes = [a.text for a in actions if isinstance(a, Say)]
    assert 1 == len(notes) and notes[0].startswith("budget:")
    # 4 left at the mean real cost of $0.80; a rerun needs 1.6 spent + 3.2 + one bound of 1.0
    assert "4 items left pending need about $3.20 more (from what 2 answers cost)" in notes[0]
    assert "--budget 5.80" in notes[0]
    assert Done(3, "budget") == actions[-1]


def test_an_answer_settles_its_real_cost():
    todos = (Todo(custom_id="c0", max_tokens=100, bound=1.0),)
    run = SyncRun.start(
        todos, policy=SyncPolicy(), now=T0, breaker=Breaker.start(1), budget=Budget(cap=5.0), price=PRICE
    )
    run, _ = drain(run, T0)
    assert 1.0 == run.budget.reserved
    run = answer(run, "c0", OK, T0)
    assert (0.0, pytest.approx(10 * 15.0 / 1e6)) == (run.budget.reserved, run.budget.spent)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "3"}, 3.0),
        ({"retry-after-ms": "250", "retry-after": "3"}, 0.25),
        ({"Retry-After": "Sat, 30 Jan 2027 08:00:10 GMT"}, 10.0),
        ({"retry-after": "0"}, None),
        ({"retry-after": "soon"}, None),
        ({"retry-after": "Sat, 30 Jan 2027 07:59:00 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_has_one_rule_ms_then_seconds_then_an_http_date(headers, expected):
    now = 1_801_296_000.0  # 2027-01-30T08:00:00Z
    assert expected == retry_after(headers, now)


def test_failure_classes_of_answers_used_here_are_what_the_machine_expects():
    assert FailureClass.RATE_LIMIT == classify(limited(1.0)).failure
    assert Status.RETRY == classify(UNREACHABLE).status
    assert CONNECT_FAILED == classify(UNREACHABLE).error_type
