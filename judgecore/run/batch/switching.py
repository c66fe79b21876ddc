"""The deadline's switch, on a batch run: when to switch (the `Watch` of `judgecore.decide.deadline` built
from the run), and the run once it has switched (no more rounds nor creates; each live batch's cancel
recorded as it is answered).

Theory of operation. The shell asks `switch_due(run, now, plan)` whenever the run has moved; it builds
the run's `Watch` (ids in live batches, ids on no route yet, at `plan.tokens_each` output tokens each)
and asks `next_deadline_action` of every live `in_progress` batch: the first `Switch` it answers is the
switch. The shell records it in the checkpoint (before any cancel: a kill during the switch resumes it),
says it, and makes the run `switching(run)`: nothing new is created (a create in flight still lands, and
its batch is canceled in turn), each batch `to_cancel` is canceled through the port, and its answer
taken by `cancel_answered`. The canceled batches are then polled to their end and harvested as any
other: what they completed is recorded (never resent), the rest left pending for the sync route.
`wake_by(run, plan)` is the latest switch time while a batch is live: no sleep of the shell runs past it.

A run resumed after a recorded switch is `switching` from its start (`BatchRun.start`, then `switching`).
"""

from __future__ import annotations

import attrs

from judgecore.decide.deadline import (
    DeadlinePolicy,
    Pile,
    Switch,
    SyncPace,
    Unfinished,
    Watch,
    next_deadline_action,
)
from judgecore.results.outcomes import RawResult
from judgecore.run.batch._machine import BatchRun
from judgecore.run.batch._sub import Sub
from judgecore.run.batch._vocab import Record, Say
from judgecore.run.batch.batching import after_cancel_error
from judgecore.run.subbatch import IN_FLIGHT, Phase, SubEvent, SubState, next_state


@attrs.frozen(kw_only=True)
class SwitchPlan:
    """What a run's switch is measured against: the deadline (epoch seconds), the sync route's pace,
    each request's expected output tokens, its cost at the sync price (None: unknown), the margin."""

    deadline: float
    pace: SyncPace
    tokens_each: float
    sync_usd_each: float | None = None
    policy: DeadlinePolicy = attrs.field(factory=DeadlinePolicy)


def watch_of(run: BatchRun, plan: SwitchPlan) -> Watch:
    """The run's watch: its ids not final, those in sub-batches still in flight counted in batches."""
    pending = run.pending()
    in_batches = min(pending, sum(s.n for s in run.subs.values() if s.state in IN_FLIGHT))
    t = plan.tokens_each
    return Watch(
        deadline=plan.deadline,
        unfinished=Unfinished(
            in_batches=Pile.of(in_batches, t),
            unsent=Pile.of(pending - in_batches, t),
            sync_usd_each=plan.sync_usd_each,
        ),
        pace=plan.pace,
        policy=plan.policy,
    )


def _running(run: BatchRun) -> list[Sub]:
    """The sub-batches whose batch is live and `in_progress` as last seen, by sub_id."""
    return [
        s
        for s in sorted(run.subs.values(), key=lambda s: s.sub_id)
        if s.state is SubState.LIVE
        and s.snap is not None
        and s.snap.status == "in_progress"
        and s.phase is not Phase.PARKED
    ]


def switch_due(run: BatchRun, now: float, plan: SwitchPlan) -> Switch | None:
    """The switch, when `next_deadline_action` answers one for a live `in_progress` batch now."""
    if run.switched or run.stop is not None:
        return None
    running = _running(run)
    if not running:
        return None
    watch = watch_of(run, plan)
    for s in running:
        assert s.snap is not None
        action = next_deadline_action(now, s.snap, run.settings.poll, watch)
        if isinstance(action, Switch):
            return action
    return None


def wake_by(run: BatchRun, plan: SwitchPlan) -> float | None:
    """The latest switch time while a batch is running and the run has not switched (None: no wake)."""
    if run.switched or run.stop is not None or not _running(run):
        return None
    return watch_of(run, plan).latest_switch


def switching(run: BatchRun) -> BatchRun:
    """The run once it has switched: no new round, no create (queued sub-batches dropped, intents a
    listing proved unmade refused at its end); what is live is canceled, polled to its end, harvested."""
    return attrs.evolve(run, switched=True, stop_creating=True, queue=())


def to_cancel(run: BatchRun) -> list[Sub]:
    """The sub-batches of a switched run whose batch is still to be canceled (live or stuck)."""
    if not run.switched:
        return []
    return [
        s
        for s in sorted(run.subs.values(), key=lambda s: s.sub_id)
        if s.state in (SubState.LIVE, SubState.STUCK) and s.snap is not None
    ]


def cancel_answered(run: BatchRun, sub_id: int, error: RawResult | None, at: float) -> BatchRun:
    """A cancel's answer: recorded `canceled` (it ends soon, then is harvested), or `ended` (it had
    ended already: harvested as it is); any other refusal leaves the batch live, with a warning (its
    items are not sent on the sync route while it is: polled to its end, or the deadline)."""
    s = run.subs[sub_id]
    assert s.snap is not None
    if error is None:
        state = next_state(s.state, SubEvent.CANCEL_REQUESTED)
        note = f"canceled by the deadline's switch at {at:.0f}"
        run = run._put(s, state=state)
        return run._emit(Record(sub_id, SubEvent.CANCEL_REQUESTED, state, note, s.snap, s.n, s.group))
    answer = after_cancel_error(s.state, s.snap.id, error.status, error.message or error.kind)
    if answer.state is None:
        return run._emit(Say(answer.level, answer.text))
    run = run._put(s, state=answer.state, due=at)
    return run._emit(
        Record(sub_id, SubEvent.ALREADY_ENDED, answer.state, answer.note, s.snap, s.n, s.group),
        Say("info", f"batch {s.snap.id} had already ended: harvested as it is"),
    )
