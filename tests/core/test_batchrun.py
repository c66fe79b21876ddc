"""The batch machine (`judgecore.run.batch`) step by step, and the harvest's breaker gate, pure."""

from __future__ import annotations

import attrs
import orjson

from judgecore.decide.breaker import Breaker, BreakerPolicy
from judgecore.decide.polling import BatchSnapshot
from judgecore.job.items import Item
from judgecore.results.outcomes import RawResult, classify
from judgecore.run.batch import (
    BatchRun,
    BatchSettings,
    Begin,
    Checkpoint,
    Create,
    Created,
    CreateFailed,
    Done,
    Harvest,
    Harvested,
    Listed,
    Reconcile,
    Record,
    Snapshot,
    SubView,
    Wait,
)
from judgecore.run.batch.batching import Intent, OrphanWindow, orphan_groups
from judgecore.run.batch.gate import Gate, Held
from judgecore.run.subbatch import SubEvent, SubState
from judgecore.wire.requests import RequestTemplate, build_requests

T0 = 1_800_000_000.0
TEMPLATE = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=64, rubric="Rate.", path="batch")


def requests(n: int):  # type: ignore[no-untyped-def]
    items = [
        Item(id=f"i{k}", line=k + 1, messages_json=orjson.dumps([{"role": "user", "content": f"{k}"}]))
        for k in range(n)
    ]
    return build_requests(items, TEMPLATE)


def kinds(actions) -> list[str]:  # type: ignore[no-untyped-def]
    return [type(a).__name__ for a in actions]


def test_a_fresh_job_begins_a_round_and_creates_no_more_than_concurrency_at_once() -> None:
    reqs = requests(10)
    run = BatchRun.start(
        Checkpoint(), requests=reqs, settings=BatchSettings(max_batch_requests=2, concurrency=3), now=T0
    )
    run, actions = run.advance(T0)
    assert ["Begin", "Create", "Create", "Create", "Wait"] == kinds(actions)
    assert Begin(1, 10, 5) == actions[0]
    assert [1, 2, 3] == [a.sub_id for a in actions if isinstance(a, Create)]
    run, again = run.advance(T0)
    assert [] == [a for a in again if isinstance(a, Create)]  # nothing handed out twice


def test_an_intent_of_an_earlier_run_is_reconciled_before_anything_is_created() -> None:
    reqs = requests(4)
    ids = tuple(r.custom_id for r in reqs[:2])
    view = Checkpoint(subs=(SubView(sub_id=1, round=1, n=2, intent_at=T0, state=SubState.INTENT, ids=ids),))
    run = BatchRun.start(view, requests=reqs, settings=BatchSettings(), now=T0 + 5)
    run, actions = run.advance(T0 + 5)
    assert ["Reconcile", "Wait"] == kinds(actions)
    assert isinstance(actions[0], Reconcile) and [1] == [i.sub_id for i in actions[0].intents]
    run = run.on(Listed((), True, T0 + 6))  # nothing matched: its ids are free again
    run, actions = run.advance(T0 + 6)
    assert (
        Record(1, SubEvent.ABSENT, SubState.ORPHAN_RESUBMITTED, "no batch matched its intent", None, 2)
        == actions[0]
    )
    assert [4] == [len(a.requests) for a in actions if isinstance(a, Create)]


def test_a_create_that_failed_in_transit_is_resent_only_after_a_listing() -> None:
    reqs = requests(3)
    run = BatchRun.start(Checkpoint(), requests=reqs, settings=BatchSettings(), now=T0)
    run, _ = run.advance(T0)
    dropped = RawResult(kind="connection_error", message="reset")
    run = run.on(CreateFailed(1, dropped, T0 + 1, 0.0))
    run, actions = run.advance(T0 + 1)  # after the jitter (u = 0: no wait), a listing, never a create
    assert ["Say", "Reconcile", "Wait"] == kinds(actions)
    run = run.on(Listed((), True, T0 + 2))
    run, actions = run.advance(T0 + 2)
    assert [(1, True)] == [(a.sub_id, a.written) for a in actions if isinstance(a, Create)]


def test_a_run_advanced_thousands_of_times_while_a_create_is_in_flight_still_advances() -> None:
    # every attrs.evolve ran the maps through their converter again: a proxy of a proxy, one level
    # deeper per step, until reading `subs` hit RecursionError (found by test_job_life)
    run = BatchRun.start(Checkpoint(), requests=requests(1), settings=BatchSettings(), now=T0)
    run, actions = run.advance(T0)
    assert ["Begin", "Create", "Wait"] == kinds(actions)
    for k in range(3_000):
        run, actions = run.advance(T0 + k)
        assert (Wait(None),) == actions  # the create is busy: nothing to start; wait for its answer
    assert ["Sub"] == [type(s).__name__ for s in run.subs.values()]


def test_a_held_line_released_while_harvesting_part_of_an_orphan_group_is_final_and_never_resent() -> None:
    reqs = requests(3)
    a, b, c = (r.custom_id for r in reqs)

    def live(sub_id: int, cid: str, group: int | None, state: SubState = SubState.LIVE) -> SubView:
        return SubView(
            sub_id=sub_id,
            round=1,
            n=1,
            intent_at=T0,
            state=state,
            batch_id=f"b{sub_id}",
            group=group,
            ids=(cid,),
        )

    view = Checkpoint(subs=(live(1, a, None), live(2, b, 2, SubState.ENDED), live(3, c, 2)))
    run = BatchRun.start(view, requests=reqs, settings=BatchSettings(max_attempts=2), now=T0)
    quarantined = classify(RawResult(kind="errored", error_type="invalid_request_error"))
    run = attrs.evolve(run, held=(Held(a, quarantined, 1, "b1"),))  # sub-batch 1's line, held by the breaker
    run, actions = run.advance(T0)
    assert [2] == [x.sub_id for x in actions if isinstance(x, Harvest)]
    # sub-batch 2's stream (part of group 2) let it through: the shell recorded it
    run = run.on(Harvested(2, at=T0 + 1, u=0.0, breaker=run.breaker, held=()))
    assert a in run.final
    assert () == run.held


def test_a_run_with_nothing_to_do_is_done_with_exit_0() -> None:
    reqs = requests(2)
    run = BatchRun.start(
        Checkpoint(final=frozenset(r.custom_id for r in reqs)),
        requests=reqs,
        settings=BatchSettings(),
        now=T0,
    )
    _, actions = run.advance(T0)
    assert [Done(0, None)] == list(actions)


def test_orphan_groups_join_intents_that_one_batch_could_belong_to() -> None:
    from judgecore.decide.polling import RequestCounts

    a, b = Intent(sub_id=1, n=5, intent_at=T0), Intent(sub_id=2, n=5, intent_at=T0 + 1)
    batch = BatchSnapshot(
        id="b", status="ended", created_at=T0 + 2, expires_at=T0 + 9, counts=RequestCounts(succeeded=5)
    )
    assert {1: 1, 2: 1} == orphan_groups([a, b], [batch], claimed=frozenset(), window=OrphanWindow())
    assert {} == orphan_groups([a, b], [batch], claimed=frozenset({"b"}), window=OrphanWindow())


INVALID = classify(RawResult(kind="errored", error_type="invalid_request_error", message="bad"))
GOOD = classify(RawResult(kind="succeeded", text="ok", stop_reason="end_turn"))


def test_the_gate_holds_invalid_lines_and_releases_them_when_another_kind_arrives() -> None:
    gate = Gate(Breaker.start(10, policy=BreakerPolicy(k=3)))
    gate, out1 = gate.take(Held("a", INVALID, 1, "b"))
    gate, out2 = gate.take(Held("a", INVALID, 1, "b"))  # a resumed stream's repeat counts once
    gate, out3 = gate.take(Held("c", GOOD, 1, "b"))
    assert ((), ()) == (out1, out2)
    assert ["a", "c"] == [h.custom_id for h in out3]
    assert gate.closed


def test_the_gate_drops_invalid_lines_once_tripped_and_lets_the_rest_through() -> None:
    gate = Gate(Breaker.start(10, policy=BreakerPolicy(k=2)))
    for cid in ("a", "b"):
        gate, out = gate.take(Held(cid, INVALID, 1, "b"))
        assert () == out
    assert gate.breaker.tripped and () == gate.held
    gate, out = gate.take(Held("c", INVALID, 1, "b"))
    assert () == out
    gate, out = gate.take(Held("d", GOOD, 1, "b"))
    assert ["d"] == [h.custom_id for h in out]


ON_HOLD = RawResult(
    kind="http_error",
    status=400,
    error_type="invalid_request_error",
    message="This organization has been disabled.",
    error_code="organization_on_hold",
)


def _says(actions) -> list[str]:  # type: ignore[no-untyped-def]
    return [a.text for a in actions if type(a).__name__ == "Say"]


def test_a_create_refused_with_an_account_state_stops_the_run_its_ids_pending() -> None:
    reqs = requests(6)
    settings = BatchSettings(max_batch_requests=2, concurrency=1)
    run = BatchRun.start(Checkpoint(), requests=reqs, settings=settings, now=T0)
    run, _ = run.advance(T0)
    run = run.on(CreateFailed(1, ON_HOLD, T0 + 1, 0.5))
    run, actions = run.advance(T0 + 1)
    assert [] == [a for a in actions if isinstance(a, Create)], "no further sub-batch created"
    assert [] == _says(actions), "the caller's last line is the one line naming it"
    done = actions[-1]
    assert isinstance(done, Done) and 4 == done.exit_status
    assert done.reason is not None and done.reason.startswith(
        "the API refused the account: organization_on_hold"
    )
    assert 6 == run.pending() and frozenset() == run.final, "nothing quarantined"


def test_a_request_body_timeout_splits_the_create_in_halves() -> None:
    reqs = requests(4)
    run = BatchRun.start(Checkpoint(), requests=reqs, settings=BatchSettings(), now=T0)
    run, _ = run.advance(T0)
    slow = attrs.evolve(ON_HOLD, message="not received in time", error_code="request_body_timeout")
    run = run.on(CreateFailed(1, slow, T0 + 1, 0.5))
    run, actions = run.advance(T0 + 1)
    assert [2, 2] == [len(a.requests) for a in actions if isinstance(a, Create)]
    assert any("request_body_timeout" in text for text in _says(actions))


def test_a_harvested_line_with_an_account_state_stops_the_run_after_the_harvest() -> None:
    reqs = requests(4)
    run = BatchRun.start(Checkpoint(), requests=reqs, settings=BatchSettings(), now=T0)
    run, _ = run.advance(T0)
    snap = BatchSnapshot(
        id="msgbatch_1", status="ended", created_at=T0, expires_at=T0 + 86_400, ended_at=T0 + 1
    )
    run = run.on(Created(1, snap, T0 + 1))
    run, actions = run.advance(T0 + 1)
    assert ["Record", "Poll", "Wait"] == kinds(actions)
    run = run.on(Snapshot(1, snap, T0 + 1))
    run, actions = run.advance(T0 + 1)
    assert ["Harvest", "Wait"] == kinds(actions)
    ids = [r.custom_id for r in reqs]
    on_hold = classify(attrs.evolve(ON_HOLD, kind="errored", status=None))
    harvested = Harvested(
        1,
        at=T0 + 2,
        u=0.5,
        breaker=run.breaker,
        held=(),
        open=frozenset(ids[1:]),
        fatal=on_hold,
        fatal_where="x",
    )
    run = run.on(harvested)
    run, actions = run.advance(T0 + 2)
    assert [] == [a for a in actions if isinstance(a, Begin | Create)], "no new round, no new sub-batch"
    assert [] == _says(actions)
    done = actions[-1]
    assert isinstance(done, Done) and 4 == done.exit_status
    assert frozenset(ids[:1]) == run.final and 3 == run.pending(), "the errored lines stay pending"


def test_account_state_lines_of_an_earlier_runs_batch_warn_and_this_run_sends_their_ids() -> None:
    """The account was on hold when an earlier run's batches ran; now it is fixed. Each rerun used
    to stop with exit 4 at one more of those batches: now each is harvested with a warning and its
    errored ids go out in this run's round."""
    reqs = requests(4)
    ids = [r.custom_id for r in reqs]

    def ended(sub_id: int, cids: list[str]) -> SubView:
        return SubView(
            sub_id=sub_id,
            round=1,
            n=len(cids),
            intent_at=T0,
            state=SubState.ENDED,
            batch_id=f"b{sub_id}",
            ids=tuple(cids),
        )

    view = Checkpoint(subs=(ended(1, ids[:2]), ended(2, ids[2:])))
    run = BatchRun.start(view, requests=reqs, settings=BatchSettings(), now=T0)
    on_hold = classify(attrs.evolve(ON_HOLD, kind="errored", status=None))
    says: list[str] = []
    now = T0
    for sub_id, errored in ((1, ids[1]), (2, ids[3])):
        run, actions = run.advance(now)
        says += _says(actions)
        assert [sub_id] == [x.sub_id for x in actions if isinstance(x, Harvest)], "one stream at a time"
        now += 1
        run = run.on(
            Harvested(
                sub_id,
                at=now,
                u=0.5,
                breaker=run.breaker,
                held=(),
                open=frozenset({errored}),
                fatal=on_hold,
                fatal_where="x",
            )
        )
    run, actions = run.advance(now)
    says += _says(actions)
    assert 2 == len(says) and all("b1" in s or "b2" in s for s in says), says
    assert all("sent by an earlier run" in s and "sent again" in s for s in says)
    assert {ids[0], ids[2]} == set(run.final)
    creates = [a for a in actions if isinstance(a, Create)]
    assert 1 == len(creates), "the errored ids go out in this run's round"
    assert [ids[1], ids[3]] == [r.custom_id for r in creates[0].requests]
    assert run.stop is None
