"""Creating sub-batches: handing out creates within the concurrency and the budget, and taking their
answers; reconciling the intents whose create may have made a batch (listing recent batches, adopting
the orphans found, grouping those a batch may hold, resending those proven absent)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import attrs

from judgecore.decide.polling import BatchSnapshot, PollIn, next_poll_action
from judgecore.decide.spend import budget_line, cut_line, rerun_budget
from judgecore.results.outcomes import classify
from judgecore.run.batch._sub import Sub
from judgecore.run.batch._vocab import (
    Create,
    Created,
    CreateFailed,
    Listed,
    ListFailed,
    Operation,
    Release,
    Say,
)
from judgecore.run.batch.batching import (
    Fatal,
    GiveUp,
    Intent,
    RetryCreate,
    Split,
    after_create_error,
    match_orphans,
    orphan_groups,
)
from judgecore.run.batch.batching import Reject as RejectDecision
from judgecore.run.batch.gate import Held
from judgecore.run.subbatch import IN_FLIGHT, Phase, SubEvent, SubState, Trigger
from judgecore.wire.requests import Request, Requests, custom_ids_of, item_ids_of

if TYPE_CHECKING:
    from judgecore.run.batch._machine import BatchRun

E, T = SubEvent, Trigger


def start_creates(run: BatchRun, now: float, ops: list[Operation], creating: int) -> BatchRun:
    """Hand out creates while fewer than `concurrency` are in flight: the intents a listing proved were
    never made first, then the queue's next sub-batches, each cut to what the budget can cover."""
    room = run.settings.concurrency - creating
    if room <= 0 or run.stop is not None or run.stop_creating:
        return run
    for s in sorted(run.subs.values(), key=lambda s: s.sub_id):
        if room <= 0:
            return run
        if s.phase is Phase.RESEND and s.due <= now:
            # a reconciliation proved no batch was made: send it again, its intent stamped anew
            ops.append(Create(s.sub_id, s.round, s.requests, now, written=True))
            run = run._step(s, T.CREATE_SENT, tries=s.tries + 1, intent_at=now)
            room -= 1
    queue = list(run.queue)
    while room > 0 and queue:
        reqs = queue.pop(0)
        bounds = tuple(map(run._bound, custom_ids_of(reqs))) if run.price is not None else ()
        cut: tuple[Sequence[Request], ...] = ()
        if bounds:
            fit = run.budget.fit(bounds)
            if fit == 0:
                if any(s.bound > 0 for s in run._active()):
                    # a sub-batch in flight frees its bound once harvested (its real spend is known):
                    # the rest waits for that, in the queue
                    return attrs.evolve(run, queue=(reqs, *queue))
                # nothing in flight can free room: stop creating; what is live is harvested
                return _out_of_budget(run, (reqs, *queue), bounds[0])
            if fit < len(reqs):  # cut to what fits; the rest waits in the queue for room
                run = _say_cut(run, fit, len(reqs) + sum(map(len, queue)), bounds[0])
                cut, queue = (reqs[fit:], *queue), []
            reqs, bounds = reqs[:fit], bounds[:fit]
            run = attrs.evolve(run, budget=run.budget.reserve(sum(bounds)))
        sub = Sub(
            sub_id=run.next_sub,
            round=run.last_round,
            n=len(reqs),
            intent_at=now,
            state=SubState.INTENT,
            phase=Phase.CREATING,  # born with its create handed out
            ids=reqs.custom_ids if isinstance(reqs, Requests) else custom_ids_of(reqs),  # a view: no copy
            at=_positions(run, reqs),
            requests=reqs,
            tries=1,
            bound=sum(bounds),
        )
        ops.append(Create(sub.sub_id, sub.round, reqs, now))
        run = attrs.evolve(run, subs={**run.subs, sub.sub_id: sub}, next_sub=run.next_sub + run.sub_step)
        room -= 1
        if cut:
            return attrs.evolve(run, queue=cut)
    return attrs.evolve(run, queue=tuple(queue))


def _say_cut(run: BatchRun, fit: int, of: int, bound: float) -> BatchRun:
    """The first cut of the run says how many rounds its budget is likely to take (once a run)."""
    if run.cut_said:
        return run
    b = run.budget
    assert b.cap is not None
    text = cut_line(fit=fit, of=of, room=b.cap - b.spent - b.reserved, bound=bound, expect=run.expect)
    run = attrs.evolve(run, cut_said=True)
    return run._emit(Say("warning", text)) if text else run


def _positions(run: BatchRun, reqs: Sequence[Request]) -> Sequence[int]:
    """The column positions of `reqs` (a view of the run's requests, as the queue holds: its own)."""
    if isinstance(reqs, Requests):
        return reqs.positions
    return tuple(run.position(r.custom_id) for r in reqs)


def _out_of_budget(run: BatchRun, unsent: tuple[Sequence[Request], ...], next_bound: float) -> BatchRun:
    """The next request cannot fit at its bound and nothing in flight can free room: stop creating
    and say what the rest needs, from what the answers really cost."""
    n = sum(len(reqs) for reqs in unsent)
    live = sum(len(s.ids) for s in run.subs.values() if s.state in IN_FLIGHT)
    text = budget_line(run.budget, run.expect, left=n, in_flight=live, next_bound=next_bound, noun="request")
    rerun = rerun_budget(run.budget, run.expect, left=n, in_flight=live, next_bound=next_bound)
    return attrs.evolve(run, queue=(), stop_creating=True, rerun_budget=rerun)._emit(Say("warning", text))


def on_created(run: BatchRun, event: Created) -> BatchRun:
    sub = run.subs[event.sub_id]
    run = attrs.evolve(run, answered=True, claimed=run.claimed | {event.batch.id}, sent=run.sent + sub.n)
    return _created(run, sub, event.batch, event.at, adopted=False)


def _created(
    run: BatchRun, sub: Sub, batch: BatchSnapshot, at: float, *, adopted: bool, group: int | None = None
) -> BatchRun:
    note = None
    if adopted:
        note = "adopted orphan" if group is None else f"adopted orphan of group {group}"
    action = next_poll_action(at, batch, run.settings.poll)
    due = at + action.seconds if isinstance(action, PollIn) else at
    event, trigger = (E.ADOPTED, T.ADOPTED) if adopted else (E.CREATED, T.CREATED)
    run = run._move(sub, event, trigger, note, snap=batch, due=due, group=group, tries=0)
    if adopted:
        extra = " (as one of a group: lines go to the sub-batch owning their id)" if group is not None else ""
        run = attrs.evolve(run, adopted=(*run.adopted, batch.id))._emit(
            Say(
                "warning",
                f"sub-batch {sub.sub_id}: adopted orphan batch {batch.id}, created before its id was recorded{extra}",
            )
        )
    return run


def on_create_failed(run: BatchRun, event: CreateFailed) -> BatchRun:
    sub, error, at = run.subs[event.sub_id], event.error, event.at
    if (halted := run._first_contact(error, f"creating sub-batch {sub.sub_id}")) is not None:
        return halted._move(sub, E.REFUSED, T.SETTLED, "not sent: the endpoint cannot be reached")
    decision = after_create_error(
        error,
        attempt=sub.tries - 1,
        n=sub.n,
        max_attempts=run.settings.create_attempts,
        policy=run.settings.backoff,
        u=event.u,
    )
    if error.kind != "connection_error":
        run = attrs.evolve(run, answered=True)
    if sub.recovered and isinstance(decision, Split | RejectDecision):
        # an earlier run's intent created from its found upload: this run holds none of its requests
        # to split or quarantine; its ids stay pending for a rerun's own sub-batches
        run = run._move(sub, E.REFUSED, T.SETTLED, "create from its upload refused")
        return run._emit(
            Say(
                "warning",
                f"sub-batch {sub.sub_id}: create refused ({error.status}); its {sub.n:,} ids stay pending",
            )
        )
    match decision:
        case Split(reason):
            first, second = sub.requests[: sub.n // 2], sub.requests[sub.n // 2 :]
            run = run._move(sub, E.TOO_LARGE, T.SETTLED, reason)
            run = attrs.evolve(run, queue=(first, second, *run.queue))
            limit = f"--max-batch-bytes {run.settings.max_batch_bytes:,}"
            tail = f" ({limit}); the size estimate was wrong" if error.status == 413 else f" ({limit})"
            return run._emit(Say("warning", f"sub-batch {sub.sub_id}: {reason}{tail}"))
        case RejectDecision(outcome):
            cid, item_id = custom_ids_of(sub.requests)[0], item_ids_of(sub.requests)[0]
            run = run._emit(Release((Held(cid, outcome, sub.sub_id, None),)))
            run = run._move(sub, E.REJECTED, T.SETTLED, outcome.reason)
            run = run.finalized([(cid, sub.at[0] if sub.at else run.position(cid))])
            return run._emit(Say("warning", f"item {item_id!r}: too large for any batch: quarantined"))
        case Fatal(outcome):
            run = run._fatal(outcome, f"creating sub-batch {sub.sub_id}")
            return run._move(sub, E.REFUSED, T.SETTLED, outcome.reason)
        case RetryCreate(delay, reason):
            run = run._step(sub, T.MAYBE_MADE, due=at + delay)
            return run._emit(
                Say(
                    "info",
                    f"sub-batch {sub.sub_id}: create failed ({reason}); checking for it, then retrying",
                )
            )
        case GiveUp(reason, maybe_created):
            if maybe_created:  # settle it by one last reconciliation
                return run._step(sub, T.MAYBE_MADE, due=at, tries=run.settings.create_attempts)
            run = run._move(sub, E.REFUSED, T.SETTLED, "create refused")
            return run._emit(
                Say("warning", f"sub-batch {sub.sub_id}: {reason}; its {sub.n:,} ids stay pending")
            )
    raise AssertionError(decision)  # pragma: no cover


def _listing(run: BatchRun) -> list[Sub]:
    return [s for s in run.subs.values() if s.phase in (Phase.LISTING, Phase.LISTING_PARKED)]


def on_listed(run: BatchRun, event: Listed) -> BatchRun:
    run = attrs.evolve(run, answered=True)
    for sub_id, batch in event.named:  # found by its own name: no count or window to match
        if sub_id in run.subs and run.subs[sub_id].phase in (Phase.LISTING, Phase.LISTING_PARKED):
            run = attrs.evolve(run, claimed=run.claimed | {batch.id})
            run = _created(run, run.subs[sub_id], batch, event.at, adopted=True)
    listing = _listing(run)
    intents = [Intent(sub_id=s.sub_id, n=s.n, intent_at=s.intent_at) for s in listing]
    window = run.settings.orphan_window
    foreign = _foreign(listing, event.first_ids)
    batches, claimed = event.batches, run.claimed
    adoptions = match_orphans(intents, batches, claimed=claimed, window=window, foreign=foreign)
    groups = orphan_groups(intents, batches, claimed=claimed, window=window, foreign=foreign)
    for bid in sorted({b for ids in foreign.values() for b in ids} - claimed):
        if all(bid in ids for ids in foreign.values()):
            run = run._emit(Say("info", f"batch {bid} holds another job's requests: not adopted"))
    for a in adoptions:
        run = attrs.evolve(run, claimed=run.claimed | {a.batch.id})
        run = _created(run, run.subs[a.sub_id], a.batch, event.at, adopted=True, group=a.group)
    adopted = {a.sub_id for a in adoptions}
    uploaded = set(event.uploaded)
    for s in listing:
        if s.sub_id in adopted:
            continue
        s = run.subs[s.sub_id]
        if s.sub_id in groups:  # one of its group's batches may hold its ids: settled with them
            group = groups[s.sub_id]
            note = f"no batch of its own; settled with orphan group {group}"
            run = run._move(s, E.GROUPED, T.GROUPED, note, group=group)
        elif s.sub_id in uploaded and s.phase is Phase.LISTING:
            if s.tries < run.settings.create_attempts:
                # its upload is on the provider and no batch was made from it: create from that
                # upload (a `Create` like any: its failure is a `CreateFailed`, its tries the sub-batch's)
                run = run._step(s, T.ABSENT)
            else:  # its creates are spent: the upload stays, for a rerun to create from
                run = run._step(s, T.GAVE_UP)
                run = run._emit(
                    Say(
                        "warning",
                        f"sub-batch {s.sub_id}: create from its upload failed {s.tries} times; its "
                        f"{s.n:,} ids stay pending (rerun to create it)",
                    )
                )
        elif event.conclusive and s.recovered:
            run = run._move(s, E.ABSENT, T.SETTLED, "no batch matched its intent")
            run = run._emit(
                Say("info", f"sub-batch {s.sub_id}: no batch was created for it; its {s.n:,} ids are resent")
            )
        elif event.conclusive and s.tries >= run.settings.create_attempts:
            run = run._move(s, E.REFUSED, T.SETTLED, "create failed; no batch was made")
            run = run._emit(
                Say("warning", f"sub-batch {s.sub_id}: create failed {s.tries} times; ids left for a retry")
            )
        elif event.conclusive:  # proven absent: send the same intent again
            run = run._step(s, T.ABSENT)
        else:
            run = _unconfirmed(run, s, event.at, 0.0, "could not list every batch that may be its own")
    return run


def on_list_failed(run: BatchRun, event: ListFailed) -> BatchRun:
    error = event.error
    run = run._first_contact(error, "listing batches") or run
    if error.kind != "connection_error":
        run = attrs.evolve(run, answered=True)
    run = run._emit(Say("warning", f"listing batches to find orphans failed: {classify(error).reason}"))
    for s in _listing(run):
        run = _unconfirmed(run, run.subs[s.sub_id], event.at, event.u, "listing batches failed")
    return run


def _unconfirmed(run: BatchRun, s: Sub, at: float, u: float, why: str) -> BatchRun:
    """A listing could not settle intent `s`: try again later, or leave it for a rerun."""
    if s.phase is Phase.LISTING_PARKED:  # already left for a rerun (and said so)
        return run._step(s, T.UNCONFIRMED)
    tries = s.tries + 1
    if s.recovered or tries >= run.settings.create_attempts or run.halted:
        run = run._step(s, T.GAVE_UP, tries=tries)
        return run._emit(
            Say(
                "warning",
                f"sub-batch {s.sub_id}: create not confirmed ({why}); its {s.n:,} ids stay pending "
                "(rerun to reconcile)",
            )
        )
    return run._step(s, T.UNCONFIRMED, tries=tries, due=at + run._delay(tries, u))


def _foreign(subs: Sequence[Sub], first_ids: tuple[tuple[str, str], ...]) -> dict[int, frozenset[str]]:
    """`{sub_id: batches}`: the listed batches whose results' first custom_id is none of the sub-batch's
    (they hold another job's requests, or another sub-batch's: never this one's)."""
    if not first_ids:
        return {}
    out: dict[int, frozenset[str]] = {}
    for s in subs:
        ours = set(s.ids) | set(custom_ids_of(s.requests))  # an earlier run's intent: its ids only
        out[s.sub_id] = frozenset(bid for bid, cid in first_ids if cid not in ours)
    return out
