"""The deadline's switch on a batch run (`judgecore.run.batch.switching`), pure: the shell wakes at the
latest switch time and the core switches exactly from then on (so never later than the last moment the
sync route could finish); a switched run creates nothing, cancels every live batch once, and moves
to the sync route only what no live batch holds."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.deadline import SyncPace
from judgecore.job.items import Item
from judgecore.results.outcomes import RawResult
from judgecore.run.batch import BatchRun, BatchSettings, Checkpoint, Create, Record, SubView
from judgecore.run.batch.switching import (
    SwitchPlan,
    cancel_answered,
    switch_due,
    switching,
    to_cancel,
    wake_by,
    watch_of,
)
from judgecore.run.subbatch import SubState
from judgecore.wire.requests import RequestTemplate, build_requests

T0 = 1_800_000_000.0
TEMPLATE = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=64, rubric="Rate.", path="batch")
PACE = SyncPace(otpm=400_000, otpm_source="read", concurrency=16, latency=10.0)


def _run(live: list[int], unsent: int) -> BatchRun:
    """A run whose checkpoint has one live batch of each size in `live`, and `unsent` more requests."""
    total = sum(live) + unsent
    items = [
        Item(id=f"i{k}", line=k + 1, messages_json=orjson.dumps([{"role": "user", "content": f"{k}"}]))
        for k in range(total)
    ]
    reqs = build_requests(items, TEMPLATE)
    ids = [r.custom_id for r in reqs]
    subs, at = [], 0
    for k, n in enumerate(live, start=1):
        subs.append(
            SubView(
                sub_id=k,
                round=1,
                n=n,
                intent_at=T0,
                state=SubState.LIVE,
                batch_id=f"msgbatch_{k}",
                created_at=T0,
                expires_at=T0 + 86_400.0,
                ids=tuple(ids[at : at + n]),
            )
        )
        at += n
    return BatchRun.start(Checkpoint(subs=tuple(subs)), requests=reqs, settings=BatchSettings(), now=T0)


situations = st.tuples(
    st.lists(st.integers(min_value=1, max_value=50), min_size=1, max_size=4),
    st.integers(min_value=0, max_value=50),
    st.floats(min_value=600.0, max_value=80_000.0),  # the deadline after T0
    st.floats(min_value=0.0, max_value=1.0),  # where `now` falls between T0 and the deadline
)


@given(situations)
def test_the_core_switches_exactly_from_the_time_the_shell_wakes_for(case):
    live, unsent, ahead, share = case
    run = _run(live, unsent)
    plan = SwitchPlan(deadline=T0 + ahead, pace=PACE, tokens_each=64.0)
    wake = wake_by(run, plan)
    assert wake is not None and wake == watch_of(run, plan).latest_switch < plan.deadline
    now = T0 + share * ahead
    if now >= plan.deadline:
        return
    sw = switch_due(run, now, plan)
    assert (sw is not None) == (now >= wake)  # never later than the latest switch time
    if sw is not None:
        assert (sw.send_now, sw.after_cancel) == (unsent, sum(live))  # what a batch holds waits for it


@given(st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=4), st.integers(0, 30))
def test_a_switched_run_creates_nothing_and_cancels_each_live_batch_once(live, unsent):
    run = switching(_run(live, unsent))
    assert [s.sub_id for s in to_cancel(run)] == list(range(1, len(live) + 1))
    for s in to_cancel(run):
        run = cancel_answered(run, s.sub_id, None, T0 + 1)
    assert [] == to_cancel(run)
    run, actions = run.advance(T0 + 1)
    assert not [a for a in actions if isinstance(a, Create)]  # no round, no create: the rest goes sync
    canceled = [a for a in actions if isinstance(a, Record) and a.state is SubState.CANCELED]
    assert len(live) == len(canceled)
    assert None is switch_due(run, T0 + 1, SwitchPlan(deadline=T0 + 600, pace=PACE, tokens_each=64.0))


def test_a_cancel_refused_because_the_batch_ended_records_it_ended_and_any_other_refusal_leaves_it_live():
    run = switching(_run([3, 3], 0))
    ended = RawResult(kind="http_error", status=400, message="has already ended")
    boom = RawResult(kind="http_error", status=500, message="boom")
    run = cancel_answered(run, 1, ended, T0)
    run = cancel_answered(run, 2, boom, T0)
    assert (SubState.ENDED, SubState.LIVE) == (run.subs[1].state, run.subs[2].state)


def test_without_a_running_batch_there_is_no_switch_to_wake_for():
    run = _run([2], 0)
    plan = SwitchPlan(deadline=T0 + 600, pace=PACE, tokens_each=64.0)
    assert None is wake_by(switching(run), plan)
    assert None is switch_due(switching(run), T0 + 599, plan)
