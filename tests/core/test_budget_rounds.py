"""The budget's hard cap under rounds (`judgecore.decide.spend`, and the machines' decisions): whatever the
answers cost within their bounds, and in whatever order they come back, spend + in flight never exceeds
the cap; a run stops for the budget only when the next request cannot fit even at its bound."""

from __future__ import annotations

import math

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from judgecore.decide.breaker import Breaker
from judgecore.decide.planning import ModelPrice
from judgecore.decide.polling import BatchSnapshot
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.decide.spend import Budget, Expect, answer_cost, budget_line, stops_for_budget
from judgecore.job.items import Item
from judgecore.results.outcomes import RawResult, Usage
from judgecore.run.batch import (
    BatchRun,
    BatchSettings,
    Checkpoint,
    Create,
    Created,
    Done,
    Harvest,
    Harvested,
    Poll,
    Say,
    Snapshot,
    Wait,
)
from judgecore.run.sync import Answered, Launch, SyncPolicy, SyncRun, Todo
from judgecore.wire.requests import RequestTemplate, build_requests

T0 = 1_800_000_000.0
PRICE = ModelPrice(3.0, 15.0)
EPS = 1e-9

shares = st.floats(0.0, 1.0)


@given(
    cap=st.floats(0.0, 50.0),
    bounds=st.lists(st.floats(0.01, 5.0), min_size=1, max_size=40),
    moves=st.lists(st.tuples(st.booleans(), st.integers(0, 100), shares), max_size=120),
)
def test_no_sequence_of_answers_makes_spend_plus_in_flight_exceed_the_cap(cap, bounds, moves):
    """Admit what fits, answer in any order at any cost within its bound: the cap holds throughout, and
    `stops_for_budget` says stop only when the next bound does not fit with nothing in flight."""
    b = Budget(cap=cap)
    queue, flight = list(bounds), []
    for send, pick, share in moves:
        if send and queue and b.admits(queue[0]):
            b = b.reserve(queue[0])
            flight.append(queue.pop(0))
        elif flight:
            bound = flight.pop(pick % len(flight))
            b = b.settle(bound, bound * share)
        assert b.spent + b.reserved <= cap + EPS
        if queue and stops_for_budget(b, queue[0], in_flight=bool(flight)):
            assert b.spent + queue[0] > cap and not flight


def test_expect_is_the_mean_of_what_the_answers_cost_weighted_with_its_prior():
    e = Expect(per_request=1.0, weight=3).learn(2.0, answers=1)
    assert math.isclose(5.0 / 4, e.per_request) and 4 == e.weight
    assert math.isclose(0.5, Expect(per_request=9.0).learn(1.0, answers=2).per_request), (
        "no weight: real only"
    )
    assert e == e.learn(0.0, answers=0)


def test_the_budget_line_names_the_rest_the_real_mean_and_a_budget_with_room_for_the_last_bound():
    line = budget_line(
        Budget(cap=2.0, spent=1.9), Expect(per_request=0.1, weight=19), left=30, in_flight=0, next_bound=0.5
    )
    assert line.startswith("budget: $2.00 cannot cover the next request")
    assert "30 items left pending need about $3.00 more (from what 19 answers cost)" in line
    assert "--budget 5.40" in line  # 1.9 spent + 3.0 + one bound of 0.5


# -- the sync machine --------------------------------------------------------------------------------


def _paid(share: float, bound: float) -> RawResult:
    """A succeeded answer that cost `share` of `bound` (output tokens at PRICE, rounded down)."""
    tokens = math.floor(share * bound / 15e-6)
    return RawResult(
        kind="succeeded", text="Score: 3", stop_reason="end_turn", usage=Usage(output_tokens=tokens)
    )


FREE = RawResult(kind="http_error", status=500, error_type="api_error", message="boom")  # bills nothing


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 25),
    bound=st.floats(0.001, 0.05),
    cap_in_bounds=st.floats(0.0, 12.0),
    answers=st.lists(st.tuples(st.integers(0, 50), shares, st.booleans()), max_size=200),
    concurrency=st.integers(1, 6),
)
def test_the_sync_machine_never_commits_past_the_cap_and_stops_only_when_the_next_bound_cannot_fit(
    n, bound, cap_in_bounds, answers, concurrency
):
    cap = bound * cap_in_bounds
    todos = tuple(Todo(custom_id=f"c{i}", max_tokens=100, bound=bound) for i in range(n))
    run = SyncRun.start(
        todos,
        policy=SyncPolicy(warm_up=False, concurrency=concurrency, max_attempts=2),
        now=T0,
        breaker=Breaker.start(n),
        budget=Budget(cap=cap),
        price=PRICE,
    )
    now, script, flight = T0, iter(answers), []
    for _ in range(2_000):
        run, actions = run.advance(now)
        assert run.budget.spent + run.budget.reserved <= cap + EPS
        done = False
        for action in actions:
            match action:
                case Launch(todo=todo):
                    assert run.budget.spent + run.budget.reserved <= cap + EPS
                    flight.append(todo.custom_id)
                case Say(text=m) if m.startswith("budget:"):
                    assert not flight, "the budget stops only with nothing in flight"
                    assert run.budget.spent + bound > cap, "...and only when the next bound cannot fit"
                case Wait(until=until):
                    if flight:
                        pick, share, ok = next(script, (0, 1.0, True))
                        cid = flight.pop(pick % len(flight))
                        raw = _paid(share, bound) if ok else FREE
                        event = Answered(
                            custom_id=cid, outcome=_classify(raw), reading=RateLimitReading(), now=now
                        )
                        run = run.on(event)
                    else:
                        assert until is not None
                        now = until
                case Done():
                    done = True
        if done:
            break
    else:
        raise AssertionError("the run did not end")
    assert run.budget.spent <= cap + EPS


def _classify(raw: RawResult):  # type: ignore[no-untyped-def]
    from judgecore.results.outcomes import classify

    return classify(raw)


# -- the batch machine -------------------------------------------------------------------------------

TEMPLATE = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=64, rubric="Rate.", path="batch")


def _requests(n: int):  # type: ignore[no-untyped-def]
    items = [
        Item(id=f"i{k}", line=k + 1, messages_json=orjson.dumps([{"role": "user", "content": "x" * (k % 7)}]))
        for k in range(n)
    ]
    return build_requests(items, TEMPLATE)


@settings(max_examples=40, deadline=None)
@given(
    n=st.integers(1, 40),
    cap_in_bounds=st.floats(0.0, 25.0),
    per_batch=st.integers(1, 12),
    costs=st.lists(shares, max_size=80),
    concurrency=st.integers(1, 4),
)
def test_the_batch_machine_never_commits_past_the_cap_and_cuts_sub_batches_until_no_bound_fits(
    n, cap_in_bounds, per_batch, costs, concurrency
):
    reqs = _requests(n)
    run = BatchRun.start(
        Checkpoint(),
        requests=reqs,
        settings=BatchSettings(max_batch_requests=per_batch, concurrency=concurrency),
        now=T0,
        budget=Budget(cap=0.0),
        price=PRICE,
        cached_bytes=len(TEMPLATE.system_json or b""),
    )
    bounds = {c: run._bound(c) for c in run.ids}
    cap = max(bounds.values()) * cap_in_bounds
    run = BatchRun.start(
        Checkpoint(),
        requests=reqs,
        settings=BatchSettings(max_batch_requests=per_batch, concurrency=concurrency),
        now=T0,
        budget=Budget(cap=cap),
        price=PRICE,
        cached_bytes=len(TEMPLATE.system_json or b""),
    )
    now, shares_left, said = T0, iter(costs), []
    for _ in range(5_000):
        run, actions = run.advance(now)
        assert run.budget.spent + run.budget.reserved <= cap + EPS
        done = None
        for a in actions:
            match a:
                case Say(text=text) if text.startswith("budget:"):
                    said.append(text)
                case Create(sub_id=sid, at=at):
                    snap = BatchSnapshot(
                        id=f"b{sid}", status="in_progress", created_at=at, expires_at=at + 86_400
                    )
                    run = run.on(Created(sid, snap, at + 1))
                case Poll(sub_id=sid, batch_id=bid):
                    s = run.subs[sid]
                    snap = BatchSnapshot(
                        id=bid, status="ended", created_at=s.intent_at, expires_at=s.intent_at + 86_400
                    )
                    run = run.on(Snapshot(sid, snap, now))
                case Harvest(sub_id=sid, breaker=breaker, held=held):
                    sub = run.subs[sid]
                    share = next(shares_left, 1.0)
                    # every line answered, the batch costing `share` of its bound (output tokens, down)
                    tokens = math.floor(share * sub.bound / (15e-6 * 0.5))
                    usage = Usage(output_tokens=tokens)
                    assert answer_cost(usage, PRICE, "batch") <= sub.bound + EPS
                    run = run.on(Harvested(sid, now, 0.0, breaker, held, usage=usage, answers=len(sub.ids)))
                case Wait(until=until):
                    now = now if until is None else max(now, until)
                case Done():
                    done = a
            assert run.budget.spent + run.budget.reserved <= cap + EPS
        if done is not None:
            break
    else:
        raise AssertionError("the run did not end")
    assert run.budget.spent <= cap + EPS
    left = [c for c in run.ids if c not in run.final]
    if left:  # stopped by the budget: the next request could not fit even at its bound
        assert 1 == len(said)
        assert 0.0 == run.budget.reserved and run.budget.spent + bounds[left[0]] > cap
    else:
        assert [] == said
