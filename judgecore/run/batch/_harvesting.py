"""Polling a live batch until it ends (or is overdue, or gone), and settling a harvest: the stream's
held lines, its group (an orphan group is settled once each of its batches is harvested), its cost."""

from __future__ import annotations

from typing import TYPE_CHECKING

import attrs

from judgecore.decide.deadline import _ended
from judgecore.decide.polling import Harvest as HarvestNow
from judgecore.decide.polling import Overdue, PollIn, next_poll_action
from judgecore.decide.spend import answer_cost
from judgecore.results.outcomes import Status, classify
from judgecore.run.batch._sub import Sub
from judgecore.run.batch._vocab import Harvest, Harvested, PollFailed, Say, Snapshot
from judgecore.run.subbatch import SubEvent, SubState, Trigger

if TYPE_CHECKING:
    from judgecore.run.batch._machine import BatchRun

E, T = SubEvent, Trigger


def on_snapshot(run: BatchRun, event: Snapshot) -> BatchRun:
    if event.batch.refused is not None:
        return _refused(run._put(run.subs[event.sub_id], snap=event.batch), event.sub_id, event.batch.refused)
    return _polled(run._put(run.subs[event.sub_id], snap=event.batch), event.sub_id, event.at)


def _refused(run: BatchRun, sub_id: int, reason: str) -> BatchRun:
    """The batch failed validation after its create (OpenAI's `failed`, e.g. `token_limit_exceeded`):
    none of it ran, so it was not a send. Its requests go again in this round as two halves (as after a
    413); a one-request sub-batch, or an earlier run's (whose requests this run does not hold), frees its
    ids for the next round."""
    s = run.subs[sub_id]
    assert s.snap is not None
    run = attrs.evolve(run, answered=True, sent=max(0, run.sent - s.n))
    run = run._move(s, E.INVALIDATED, T.SETTLED, f"failed validation: {reason}")
    text = f"batch {s.snap.id} failed validation ({reason}): none of its {s.n:,} requests ran"
    if s.n > 1 and s.requests:
        first, second = s.requests[: s.n // 2], s.requests[s.n // 2 :]
        run = attrs.evolve(run, queue=(first, second, *run.queue))
        return run._emit(Say("warning", f"{text}; sent again in two halves"))
    return run._emit(Say("warning", f"{text}; its ids go in the next round"))


def _polled(run: BatchRun, sub_id: int, at: float) -> BatchRun:
    s = run.subs[sub_id]
    assert s.snap is not None
    action = next_poll_action(at, s.snap, run.settings.poll)
    deadline = run.settings.deadline
    if deadline is not None and not isinstance(action, HarvestNow):
        if at >= deadline:  # the end: its ids stay pending (a rerun resumes the batch), nothing new
            run = attrs.evolve(run, stop_creating=True)._step(s, T.STOPPED)
            return run._emit(
                Say("warning", f"batch {s.snap.id}: {_ended(deadline)} ({s.n:,} ids left in it)")
            )
        if isinstance(action, PollIn) and at + action.seconds > deadline:
            action = PollIn(deadline - at)  # no wait runs past the deadline
    match action:
        case HarvestNow():
            return run._step(s, T.ENDED, due=at)
        case Overdue():
            note = "still not ended past its deadline (expires_at + grace)"
            run = run._move(s, E.OVERDUE, T.OVERDUE, note)
            return attrs.evolve(run, stuck=(*run.stuck, s.snap.id))
        case PollIn(seconds):
            return run._step(s, T.STILL_LIVE, due=at + seconds)
    raise AssertionError("unreachable")  # pragma: no cover


def on_poll_failed(run: BatchRun, event: PollFailed) -> BatchRun:
    sub, error = run.subs[event.sub_id], event.error
    assert sub.snap is not None
    if (halted := run._first_contact(error, f"retrieving batch {sub.snap.id}")) is not None:
        return halted._step(sub, T.STOPPED)
    if error.status == 404:
        run = attrs.evolve(run, answered=True)
        run = run._move(sub, E.LOST, T.SETTLED, "the API no longer knows this batch (404)")
        return run._emit(
            Say(
                "warning",
                f"batch {sub.snap.id}: the API no longer knows it (404); its {sub.n:,} ids are resent",
            )
        )
    outcome = classify(error)
    if error.kind != "connection_error":
        run = attrs.evolve(run, answered=True)
    if outcome.status is Status.FATAL:
        return run._fatal(outcome, f"retrieving batch {sub.snap.id}")._step(sub, T.STOPPED)
    run = run._emit(Say("info", f"batch {sub.snap.id}: retrieve failed ({outcome.reason}); will poll again"))
    return _polled(run, sub.sub_id, event.at)


def harvest_op(run: BatchRun, s: Sub) -> Harvest:
    """The harvest of `s`'s batch: it settles its group only once every other batch of it is harvested."""
    assert s.snap is not None
    group: tuple[int, ...] = ()
    settle: tuple[int, ...] = (s.sub_id,)
    if s.group is not None:
        members = [m for m in run.subs.values() if m.group == s.group]
        group = tuple(sorted(m.sub_id for m in members))
        others_done = all(
            m.state is SubState.GROUP_HARVESTED
            for m in members
            if m.sub_id != s.sub_id and m.snap is not None
        )
        settle = group if others_done else ()
    return Harvest(s.sub_id, s.snap.id, group, settle, run.breaker, run.held)


def on_harvested(run: BatchRun, h: Harvested) -> BatchRun:
    run = attrs.evolve(run, answered=True)
    sub = run.subs[h.sub_id]
    assert sub.snap is not None
    still_held = {x.custom_id for x in h.held}
    # held lines the gate let through during this stream were recorded (final), whatever becomes of
    # the sub-batch itself: a part of an orphan group, a cut stream (a tripped gate drops them)
    released = [] if h.breaker.tripped else [x for x in run.held if x.custom_id not in still_held]
    run = run.finalized((x.custom_id, run.position(x.custom_id, x.sub_id)) for x in released)
    run = attrs.evolve(run, breaker=h.breaker, held=h.held)
    if h.breaker.tripped and run.stop is None:
        run = attrs.evolve(run, stop=h.breaker.reason(), held=())._emit(Say("warning", h.breaker.reason()))
    if h.fatal is not None and h.fatal.account_state and sub.recovered:
        # the account as it was when an earlier run's batch ran, not as it is now: its errored ids
        # stay pending and this run's next round sends them (a create refused now stops the run)
        run = run._emit(Say("warning", _earlier_account(h, sub)))
    elif h.fatal is not None:
        run = run._fatal(h.fatal, h.fatal_where)
    if h.error is not None:
        return _cut(run, sub, h)
    opened = sub.open | h.open
    cost = sub.cost + (0.0 if run.price is None else answer_cost(h.usage, run.price, "batch"))
    settle = harvest_op(run, sub).settle
    if sub.group is not None and sub.sub_id not in settle:
        return run._move(sub, E.GROUP_PART_HARVESTED, T.GROUPED, None, open=opened, cost=cost)
    not_final = opened | still_held
    final: list[tuple[str, int]] = []
    members = [run.subs[i] for i in settle]
    not_final |= frozenset().union(*(m.open for m in members))
    cost += sum(m.cost for m in members if m.sub_id != sub.sub_id)
    run = attrs.evolve(
        run,
        budget=run.budget.settle(sum(m.bound for m in members), cost),
        expect=run.expect.learn(cost, h.answers) if run.price is not None else run.expect,
    )
    for m in members:
        final.extend(pair for pair in zip(m.ids, m.at, strict=True) if pair[0] not in not_final)
        run = run._move(m, E.HARVESTED, T.SETTLED, None, open=frozenset())
    return run.finalized(final)


def _earlier_account(h: Harvested, sub: Sub) -> str:
    """The warning for an account-state line in a batch an earlier run sent."""
    assert h.fatal is not None and sub.snap is not None
    return (
        f"batch {sub.snap.id} (sent by an earlier run) answered some requests with an account state "
        f"({h.fatal.reason}); they are pending and sent again"
    )


def _cut(run: BatchRun, sub: Sub, h: Harvested) -> BatchRun:
    """The stream of `sub`'s batch was cut: stream it again later, or leave it for a rerun."""
    assert h.error is not None and sub.snap is not None
    outcome = classify(h.error)
    if outcome.status is Status.FATAL and h.error.status != 404:
        return run._fatal(outcome, f"fetching results of batch {sub.snap.id}")._step(sub, T.STOPPED)
    tries = sub.tries + 1
    if tries < run.settings.harvest_attempts:
        due = h.at + run._delay(tries - 1, h.u, h.error.retry_after)
        run = run._step(sub, T.CUT, tries=tries, due=due)
        return run._emit(
            Say("warning", f"batch {sub.snap.id}: results stream cut ({outcome.reason}); resuming it by id")
        )
    note = "results not fully fetched; a rerun resumes the harvest"
    run = run._move(sub, E.HARVEST_CUT, T.GAVE_UP, note)
    return run._emit(
        Say(
            "warning",
            f"batch {sub.snap.id}: results could not be fetched in full; its remaining ids stay pending",
        )
    )
