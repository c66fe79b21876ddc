"""Batching decisions: what to do after a failed create, and which listed batch is an orphan's.

Theory of operation. A batch create is a POST with no idempotency key: one that fails in transit may
still have made a batch. So the shell never re-sends a create blindly: after a transient failure it
first *reconciles*, listing recent batches and adopting one that matches the intent (same request
count, created inside the intent's window, not already owned by another sub-batch); only when none
matches does it re-send. The same reconciliation adopts orphans on resume (a crash between the create
call and the write of its batch id). Both decisions are pure functions of values, here:

- `after_create_error(error, attempt=..., n=..., ...)` -> `Split` (HTTP 413: the size estimate was wrong,
  halve and retry; a 400 `request_body_timeout`: the body did not arrive in time, send smaller ones),
  `Reject` (413 on a single request: it can never fit; quarantined), `Fatal` (authentication,
  permission, unknown model, an account state: stop the run, its ids pending), `RetryCreate(delay)` (429, 5xx, connection:
  reconcile, then re-send), or `GiveUp` (the create was refused, or the attempt budget is spent).
- `after_cancel_error(state, batch_id, status, error)` -> the `Cancel` answer to a refused cancel: a
  400 or 409 means the batch had already ended (moved to be harvested by the next run); anything else
  is a warning, the batch's state untouched.
- `match_orphans(intents, listed, claimed=..., window=..., foreign=...)` -> the adoptions, never two
  intents on one batch, never a batch another sub-batch owns, never one whose results were read and
  carry none of the intent's custom_ids.

The listing is workspace-wide: every job of every user of the workspace shows up in it, so a count and
a time window alone can match another job's batch. Two defences: a job's custom_ids are its own
(`judgecore.job.ids`: salted with the job's key), and a listed batch that has ended is checked by the first
custom_id of its results before it is adopted (`Reconcile.worth_checking` says which; `foreign` carries
what was found). A batch still running when adopted is checked by its first result line at harvest: one
of another job records nothing, and its ids are sent again.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import Literal

from judgecore.decide.backoff import BackoffPolicy, backoff
from judgecore.decide.polling import BatchSnapshot
from judgecore.results.outcomes import REQUEST_BODY_TIMEOUT, Outcome, RawResult, Status, classify
from judgecore.run.subbatch import SubEvent, SubState, next_state
from judgecore.values import frozen

# -- after a refused cancel --------------------------------------------------------------------

#: The HTTP statuses a cancel of a batch that has already ended is refused with.
ALREADY_ENDED_STATUSES = frozenset({400, 409})


@frozen
class Cancel:
    """What to record after a cancel was refused: the sub-batch's move (None: none) with its note,
    and one line for the user."""

    state: SubState | None
    note: str
    level: Literal["info", "warning"]
    text: str


def after_cancel_error(state: SubState, batch_id: str, status: int | None, error: str) -> Cancel:
    """A cancel refused with 400 or 409: the batch had already ended, and the next run harvests it;
    any other refusal leaves the batch as it is, with a warning."""
    if status in ALREADY_ENDED_STATUSES:
        ended = next_state(state, SubEvent.ALREADY_ENDED)
        note = "ended before the cancel; the next run harvests it"
        return Cancel(ended, note, "info", f"batch {batch_id} had already ended; the next run harvests it")
    return Cancel(None, "", "warning", f"batch {batch_id}: cancel failed: {error}")


# -- after a failed create ---------------------------------------------------------------------


@frozen
class Split:
    """HTTP 413: the body was over the server's limit; send each half as its own sub-batch."""

    reason: str


@frozen
class Reject:
    """HTTP 413 on a one-request sub-batch: that request can never be sent in a batch."""

    outcome: Outcome


@frozen
class Fatal:
    """The run's configuration is wrong (authentication, permission, unknown model): stop."""

    outcome: Outcome


@frozen
class RetryCreate:
    """Transient: wait `delay` seconds, reconcile through the orphan check, then re-send if none matched."""

    delay: float
    reason: str


@frozen
class GiveUp:
    """Stop trying this sub-batch in this run.

    `maybe_created` is True when the last failure was transient: the batch may exist, so the intent
    must stay unresolved (its ids in flight) until a later reconciliation finds it or proves it absent.
    """

    reason: str
    maybe_created: bool


CreateDecision = Split | Reject | Fatal | RetryCreate | GiveUp


def after_create_error(
    error: RawResult, *, attempt: int, n: int, max_attempts: int, policy: BackoffPolicy, u: float
) -> CreateDecision:
    """What to do after create attempt number `attempt` (0-based) of an `n`-request sub-batch failed.

    `error` is the failure as a `RawResult` (`http_error` or `connection_error`); `u` is the jitter draw.
    """
    if error.status == 413:
        if n > 1:
            return Split(f"HTTP 413 for {n:,} requests: the size estimate was wrong; splitting in halves")
        return Reject(classify(error))
    if error.error_code == REQUEST_BODY_TIMEOUT and n > 1:  # one request alone: retried (transient)
        return Split(
            f"the body of {n:,} requests did not arrive in time ({REQUEST_BODY_TIMEOUT}); splitting in halves"
        )
    outcome = classify(error)
    if outcome.status is Status.FATAL:
        return Fatal(outcome)
    if outcome.status is not Status.RETRY:
        return GiveUp(f"create refused: {outcome.reason}: {error.message or ''}".rstrip(": "), False)
    if attempt + 1 >= max_attempts:
        return GiveUp(f"create failed {attempt + 1} times, last: {outcome.reason}", True)
    return RetryCreate(backoff(attempt, error.retry_after, policy, u), outcome.reason)


def split_halves(items: Sequence[object]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The two halves of a sub-batch that was too large (the first gets the smaller half)."""
    mid = len(items) // 2
    return tuple(items[:mid]), tuple(items[mid:])


# -- orphan reconciliation ----------------------------------------------------------------------


#: seconds a create call may take in all (upload, server, answer) before the shell gives it up; the
#: orphan window (`OrphanWindow.window`) must exceed it
CREATE_DEADLINE = 600.0


@frozen(kw_only=True)
class Intent:
    """A sub-batch whose create may have made a batch we never heard of."""

    sub_id: int
    n: int
    intent_at: float


@frozen(kw_only=True)
class OrphanWindow:
    """A batch matches an intent when created in `[intent_at - skew, intent_at + window]`.

    `window` bounds how long after its intent a create can make a batch: the shell's hard deadline on
    a create call (`CREATE_DEADLINE`, the whole call, not the SDK's per-read timeout) plus a margin for
    the server to finish a body it received whole. `skew` allows for our clock running ahead of the
    API's. A create still unanswered at its deadline is given up as a failure that may have made a
    batch (reconciled before any resend).
    """

    window: float = 900.0
    skew: float = 300.0

    def oldest(self, intents: Iterable[Intent]) -> float:
        """The creation time below which no listed batch can match: listing may stop there."""
        return min((i.intent_at for i in intents), default=float("inf")) - self.skew


@frozen
class Adoption:
    """Intent `sub_id` is batch `batch.id`. `ambiguous`: more than one batch fitted.

    `group`: when several intents of one size were adopted together and some batch fitted more than
    one of them, nothing but the results can tell which batch holds whose ids. They then form a group
    (named by its smallest sub_id): each batch of the group is harvested against the union of the
    group's ids, each line recorded under the intent that owns its custom_id.
    """

    sub_id: int
    batch: BatchSnapshot
    ambiguous: bool
    group: int | None = None


#: no listed batch is known to hold another job's requests
NO_FOREIGN: Mapping[int, frozenset[str]] = MappingProxyType({})


def could_fit(intent: Intent, batch: BatchSnapshot, window: OrphanWindow) -> bool:
    """`batch` has the intent's request count and was created inside its window."""
    return (
        batch.counts.total == intent.n
        and intent.intent_at - window.skew <= batch.created_at <= intent.intent_at + window.window
    )


def _fits(
    intent: Intent, batch: BatchSnapshot, window: OrphanWindow, foreign: Mapping[int, frozenset[str]]
) -> bool:
    return could_fit(intent, batch, window) and batch.id not in foreign.get(intent.sub_id, ())


def orphan_groups(
    intents: Sequence[Intent],
    listed: Sequence[BatchSnapshot],
    *,
    claimed: frozenset[str],
    window: OrphanWindow,
    foreign: Mapping[int, frozenset[str]] = NO_FOREIGN,
) -> dict[int, int]:
    """`{sub_id: group}` for every intent that nothing but the results can tell apart from another.

    Intents and the unclaimed batches that fit them form a graph; each connected part holding two
    intents or more is a group, named by its smallest sub_id. Its intents with no batch of their own
    belong to it too: one of the group's batches may hold their ids (two same-size creates that failed
    in transit, one of which made a batch), so they are settled with the group, never resent before.
    """
    pool = [b for b in listed if b.id not in claimed]
    parent = {i.sub_id: i.sub_id for i in intents}

    def root(x: int) -> int:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for b in pool:
        fitting = [i.sub_id for i in intents if _fits(i, b, window, foreign)]
        for other in fitting[1:]:
            a, c = root(fitting[0]), root(other)
            parent[max(a, c)] = min(a, c)
    parts: dict[int, list[int]] = {}
    for i in intents:
        parts.setdefault(root(i.sub_id), []).append(i.sub_id)
    return {m: min(part) for part in parts.values() if len(part) > 1 for m in part}


def match_orphans(
    intents: Sequence[Intent],
    listed: Sequence[BatchSnapshot],
    *,
    claimed: frozenset[str],
    window: OrphanWindow,
    foreign: Mapping[int, frozenset[str]] = NO_FOREIGN,
) -> tuple[Adoption, ...]:
    """Pair intents with listed batches: same request count, created in the window, unclaimed, and
    not shown to hold other requests (`foreign[sub_id]`: batches whose results carry none of its ids).

    Intents are served oldest first, each taking the earliest-created fitting batch, so concurrent
    creates of equal size pair in order; where that would leave a batch unadopted that another intent
    could have taken (an intent took the one batch a later intent fits, which a batch shown to hold its
    ids fits instead), the pairing is mended along an augmenting path: as many intents as can be are
    paired, so no batch that may hold our ids is left behind while its ids are resent. No batch is
    adopted twice, none in `claimed` ever. An adoption of an intent that another could be told apart
    from only by the results carries its group (`orphan_groups`).
    """
    pool = sorted((b for b in listed if b.id not in claimed), key=lambda b: (b.created_at, b.id))
    groups = orphan_groups(intents, listed, claimed=claimed, window=window, foreign=foreign)
    order = sorted(intents, key=lambda i: (i.intent_at, i.sub_id))
    fits = {i.sub_id: [b for b in pool if _fits(i, b, window, foreign)] for i in order}
    holder: dict[str, int] = {}  # batch id -> the sub_id it is paired with

    def pair(sub_id: int, seen: set[str]) -> bool:
        """Kuhn's augmenting path: the earliest free batch, else one whose holder can move on."""
        fitting = [b.id for b in fits[sub_id] if b.id not in seen]
        for bid in fitting:
            if bid not in holder:
                holder[bid] = sub_id
                return True
        for bid in fitting:
            if bid in seen:
                continue
            seen.add(bid)
            if pair(holder[bid], seen):
                holder[bid] = sub_id
                return True
        return False

    for intent in order:
        pair(intent.sub_id, set())
    batch_of = {sub_id: bid for bid, sub_id in holder.items()}
    by_id = {b.id: b for b in pool}
    return tuple(
        Adoption(i.sub_id, by_id[batch_of[i.sub_id]], len(fits[i.sub_id]) > 1, groups.get(i.sub_id))
        for i in order
        if i.sub_id in batch_of
    )
