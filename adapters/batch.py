"""The batch path: submit sub-batches, poll them to their deadlines, harvest results, retry in rounds.

Theory of operation. Every decision is a core function (`chunk`, `after_create_error`, `match_orphans`,
`next_poll_action`, `classify`, `diff_resume`, `breaker_tripped`); this module performs them, in the
order the checkpoint requires (see `adapters.store`): intent, create, batch id, outcomes. Every loop
has a bound, so a run always ends:

- creates: at most `create_attempts` per sub-batch, halving on 413 (depth at most log2 n); a create
  that failed in transit is never re-sent before the orphan check (list recent batches, adopt the
  match) says no batch was made; while a reconciliation runs no other create is in flight, so a
  sibling's fresh batch is never mistaken for an orphan;
- polling: one loop over every live batch, each bounded by its own `expires_at + grace` through
  `next_poll_action`; a batch still not ended at its deadline is recorded `stuck` (its ids pending,
  never re-sent while it might still end) and the run goes on;
- harvest: streams the results into `OutcomeWriter` as they arrive (memory: 8 bytes and one bit per
  request of the batch, not the lines); a cut stream resumes the same batch by id, at most
  `harvest_attempts` times, idempotently (rows are unique per sub-batch and custom_id); unknown and
  duplicate custom_ids are reported, never trusted;
- rounds: at most `max_attempts` per run; `diff_resume` picks what is re-sent.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import random
import re
from array import array
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence

import attrs

from adapters.batch_api import BatchApi, BatchApiError
from adapters.clock import Clock
from adapters.events import (
    BatchCreated,
    BatchHarvested,
    BatchPolled,
    BatchStuck,
    Emit,
    Notice,
    RoundStarted,
)
from adapters.store import OutcomeRow, Store, SubBatchRow
from judgecore import (
    BackoffPolicy,
    BatchSnapshot,
    BreakerPolicy,
    FailureClass,
    Harvest,
    JobState,
    Outcome,
    Overdue,
    PollPolicy,
    RawResult,
    Request,
    RequestTemplate,
    Status,
    Wait,
    backoff,
    breaker_tripped,
    chunk,
    classify,
    diff_resume,
    next_poll_action,
)
from judgecore.batching import (
    Fatal,
    GiveUp,
    Intent,
    OrphanWindow,
    Reject,
    RetryCreate,
    Split,
    after_create_error,
    match_orphans,
    split_halves,
)
from judgecore.chunking import create_body


@attrs.frozen(kw_only=True)
class BatchSettings:
    """Knobs of the batch path; the defaults are the CLI's."""

    max_batch_requests: int = 8000
    max_batch_bytes: int = 250_000_000
    poll: PollPolicy = attrs.field(factory=PollPolicy)
    backoff: BackoffPolicy = attrs.field(factory=BackoffPolicy)
    max_attempts: int = 3
    concurrency: int = 8
    breaker: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    #: create calls per sub-batch before its ids are left pending for a rerun
    create_attempts: int = 5
    #: result streams per ended batch before it is left `ended` (a rerun resumes the harvest)
    harvest_attempts: int = 4
    #: which listed batch can be an intent's (see `judgecore.batching.OrphanWindow`)
    orphan_window: OrphanWindow = attrs.field(factory=OrphanWindow)
    #: at most this many listed batches are scanned per reconciliation
    list_scan_limit: int = 2000
    #: outcome rows per durable commit during a harvest
    write_group: int = 5000

    def __attrs_post_init__(self) -> None:
        for name in (
            "max_batch_requests",
            "max_attempts",
            "concurrency",
            "create_attempts",
            "harvest_attempts",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1")


@attrs.frozen(kw_only=True)
class BatchRunResult:
    """What a run of the batch path did; the outputs themselves are in the store (`Store.latest()`)."""

    fatal: str | None
    stuck: tuple[str, ...]
    rounds: int
    counts: Mapping[str, int]
    sent: int  # requests put in batch creates this run (adopted orphans not counted)
    adopted: tuple[str, ...]

    @property
    def pending(self) -> int:
        return self.counts.get("pending", 0)


# -- small helpers ------------------------------------------------------------------------------


class _IdSet:
    """The custom_ids a batch may answer for, in 8 bytes each (sorted hashes), plus a seen-bit per id.

    `owner(i)` is the sub-batch that owns id number `i` (itself, except in an ambiguous orphan group).
    """

    def __init__(self, custom_ids: Iterable[str], owners: Sequence[tuple[int, Iterable[str]]] = ()) -> None:
        if not owners:
            self._keys = array("q", sorted(hash(c) for c in custom_ids))
            self._owners: array[int] | None = None
        else:
            pairs = sorted((hash(c), sub_id) for sub_id, ids in owners for c in ids)
            self._keys = array("q", (h for h, _ in pairs))
            self._owners = array("q", (o for _, o in pairs))
        self.n = len(self._keys)

    def owner(self, i: int, default: int) -> int:
        return default if self._owners is None else self._owners[i]

    def index(self, custom_id: str) -> int:
        """Position of `custom_id`, or -1 when it is not one of this sub-batch's."""
        h = hash(custom_id)
        i = bisect.bisect_left(self._keys, h)
        return i if i < self.n and self._keys[i] == h else -1

    def fresh_seen(self) -> bytearray:
        return bytearray((self.n + 7) // 8)


@attrs.define
class _Live:
    sub_id: int
    batch_id: str
    n: int
    snap: BatchSnapshot
    next_at: float


class _Gate:
    """Creates run concurrently; a reconciliation waits until none is in flight and holds new ones."""

    def __init__(self) -> None:
        self._cond = asyncio.Condition()
        self._creating = 0
        self._reconciling = False
        self._waiting = 0

    @contextlib.asynccontextmanager
    async def creating(self) -> AsyncIterator[None]:
        async with self._cond:
            await self._cond.wait_for(lambda: not self._reconciling and self._waiting == 0)
            self._creating += 1
        try:
            yield
        finally:
            async with self._cond:
                self._creating -= 1
                self._cond.notify_all()

    @contextlib.asynccontextmanager
    async def reconciling(self) -> AsyncIterator[None]:
        async with self._cond:
            self._waiting += 1
            try:
                await self._cond.wait_for(lambda: not self._reconciling and self._creating == 0)
            finally:
                self._waiting -= 1
            self._reconciling = True
        try:
            yield
        finally:
            async with self._cond:
                self._reconciling = False
                self._cond.notify_all()


_GROUP = re.compile(r"group=(\d+)")


def _group_tag(note: str | None) -> int | None:
    m = _GROUP.search(note or "")
    return int(m.group(1)) if m else None


_SHOWN = 5  # per batch, this many unknown / duplicate lines are named on stderr; the rest are counted


class _Run:
    def __init__(
        self,
        *,
        store: Store,
        requests: Sequence[Request],
        template: RequestTemplate,
        api: BatchApi,
        clock: Clock,
        settings: BatchSettings,
        emit: Emit,
        rng: random.Random,
    ) -> None:
        self.store = store
        self.requests = {r.custom_id: r for r in requests}
        self.all_ids = tuple(self.requests)
        self.template = template
        self.api = api
        self.clock = clock
        self.s = settings
        self.emit = emit
        self.rng = rng
        self.gate = _Gate()
        self.live: dict[int, _Live] = {}
        self.fatal: str | None = None
        self.stuck: list[str] = []
        self.adopted: list[str] = []
        self.sent = 0
        self.attempted: set[int] = set()  # sub-batches whose create was sent by this run
        self.round_no = max((r.round for r in store.sub_batches()), default=0)
        first = store.first_failures(settings.breaker.k)
        self.first: list[FailureClass | None] = [None if f is None else FailureClass(f) for f in first]
        self.breaker_settled = self._breaker_check()

    # -- events --------------------------------------------------------------------------------

    def warn(self, message: str) -> None:
        self.emit(Notice(level="warning", message=message))

    def info(self, message: str) -> None:
        self.emit(Notice(level="info", message=message))

    def _delay(self, attempt: int, retry_after: float | None = None) -> float:
        return backoff(attempt, retry_after, self.s.backoff, self.rng.random())

    # -- the run -------------------------------------------------------------------------------

    async def run(self) -> BatchRunResult:
        await self._recover()
        rounds = 0
        while self.fatal is None:
            await self._poll_all()
            if self.fatal is not None:
                break
            diff = diff_resume(self.all_ids, self._job_state(), max_attempts=self.s.max_attempts)
            if not diff.submit or rounds >= self.s.max_attempts:
                if not self.live:
                    break
                continue
            rounds += 1
            await self._submit_round(diff.submit)
        if diff_left := self._unsent_left():
            self.info(f"{diff_left:,} request(s) still pending; rerun the same command to resume")
        return BatchRunResult(
            fatal=self.fatal,
            stuck=tuple(self.stuck),
            rounds=rounds,
            counts=self.store.counts(),
            sent=self.sent,
            adopted=tuple(self.adopted),
        )

    def _unsent_left(self) -> int:
        return self.store.counts().get("pending", 0)

    def _job_state(self) -> JobState:
        """The store's view, with the ids of stuck batches kept in flight: they may still end."""
        state = self.store.job_state()
        stuck_ids: set[str] = set()
        for row in self.store.sub_batches(("stuck",)):
            stuck_ids.update(self.store.unharvested_ids(row.sub_id))
        if not stuck_ids:
            return state
        return attrs.evolve(state, in_flight=state.in_flight | stuck_ids)

    # -- resume ----------------------------------------------------------------------------------

    async def _recover(self) -> None:
        """Reconcile orphans, then put every unharvested batch of earlier runs back in the poll loop."""
        rows = self.store.sub_batches()
        orphans = [r for r in rows if r.state == "intent" and r.batch_id is None]
        if orphans:
            self.info(
                f"{len(orphans)} sub-batch(es) were being created when the last run stopped; reconciling"
            )
            adopted, conclusive = await self._reconcile([r.sub_id for r in orphans])
            for r in orphans:
                if r.sub_id in adopted:
                    continue
                if conclusive:
                    self.store.set_state(r.sub_id, "orphan_resubmitted", "no batch matched its intent")
                    self.info(
                        f"sub-batch {r.sub_id}: no batch was created for it; its {r.n:,} ids are resent"
                    )
                else:
                    self.warn(
                        f"sub-batch {r.sub_id}: could not list batches to check for an orphan; "
                        f"its {r.n:,} ids stay pending (rerun to retry)"
                    )
        now = self.clock.now()
        for r in self.store.sub_batches(("live", "canceled", "ended", "stuck")):
            if r.batch_id is None or r.sub_id in self.live:
                continue
            snap = BatchSnapshot(
                id=r.batch_id,
                status="ended" if r.state == "ended" else "in_progress",
                created_at=r.created_at or r.intent_at,
                expires_at=r.expires_at or (r.intent_at + 86_400.0),
            )
            self.live[r.sub_id] = _Live(r.sub_id, r.batch_id, r.n, snap, now)

    # -- submission --------------------------------------------------------------------------------

    async def _submit_round(self, custom_ids: Sequence[str]) -> None:
        self.round_no += 1
        round_no = self.round_no
        subs = chunk(
            [self.requests[c] for c in custom_ids],
            max_requests=self.s.max_batch_requests,
            max_bytes=self.s.max_batch_bytes,
        )
        self.emit(RoundStarted(round=round_no, n=len(custom_ids), sub_batches=len(subs)))
        sem = asyncio.Semaphore(self.s.concurrency)

        async def one(requests: tuple[Request, ...]) -> None:
            async with sem:
                if self.fatal is None:
                    await self._create(round_no, requests)

        await asyncio.gather(*(one(sb.requests) for sb in subs))

    async def _create(self, round_no: int, requests: tuple[Request, ...]) -> None:
        body = create_body(requests, self.template)
        sub_id = self.store.record_intent(
            round=round_no, custom_ids=[r.custom_id for r in requests], n_bytes=len(body), at=self.clock.now()
        )
        await self._send(sub_id, round_no, requests, body)

    async def _send(self, sub_id: int, round_no: int, requests: tuple[Request, ...], body: bytes) -> None:
        """Create the batch of intent `sub_id`; never re-sends before the orphan check clears it."""
        n = len(requests)
        unsure = False  # a failed create may have made a batch: reconcile before any re-send
        for attempt in range(self.s.create_attempts):
            if self.fatal is not None:
                break
            if unsure:
                adopted, conclusive = await self._reconcile([sub_id])
                if adopted:
                    return
                if not conclusive:
                    await self.clock.sleep(self._delay(attempt))
                    continue
                unsure = False
            async with self.gate.creating():
                self.attempted.add(sub_id)
                try:
                    snap = await self.api.create(body)
                except BatchApiError as exc:
                    error = exc.raw
                else:
                    self._created(sub_id, snap, n, adopted=False)
                    self.sent += n
                    return
            decision = after_create_error(
                error,
                attempt=attempt,
                n=n,
                max_attempts=self.s.create_attempts,
                policy=self.s.backoff,
                u=self.rng.random(),
            )
            match decision:
                case Split(reason):
                    self.store.set_state(sub_id, "split", reason)
                    self.warn(
                        f"sub-batch {sub_id}: {reason} (sized {len(body):,} bytes, "
                        f"--max-batch-bytes {self.s.max_batch_bytes:,}); the size estimate was wrong"
                    )
                    first, second = split_halves(requests)
                    await asyncio.gather(
                        self._create(round_no, first),  # type: ignore[arg-type]
                        self._create(round_no, second),  # type: ignore[arg-type]
                    )
                    return
                case Reject(outcome):
                    req = requests[0]
                    self.store.record_outcomes(
                        [
                            OutcomeRow(
                                custom_id=req.custom_id,
                                outcome=outcome,
                                route="batch",
                                at=self.clock.now(),
                                sub_id=sub_id,
                            )
                        ]
                    )
                    self.store.set_state(sub_id, "rejected", outcome.reason)
                    self.warn(
                        f"item {req.item_id!r}: too large for any batch ({len(body):,} bytes): quarantined"
                    )
                    return
                case Fatal(outcome):
                    self._set_fatal(outcome, f"creating sub-batch {sub_id}")
                    if not unsure and attempt == 0:
                        self.store.set_state(sub_id, "failed", outcome.reason)
                    return
                case RetryCreate(delay, reason):
                    self.info(f"sub-batch {sub_id}: create failed ({reason}); checking for it, then retrying")
                    await self.clock.sleep(delay)
                    unsure = True
                case GiveUp(reason, maybe_created):
                    unsure = unsure or maybe_created
                    break
        # out of attempts (or stopped): settle what we can, never re-send blind
        if unsure:
            adopted, conclusive = await self._reconcile([sub_id])
            if adopted:
                return
            if conclusive:  # proven absent: the ids go back to the pool for the next round
                self.store.set_state(sub_id, "failed", "create failed; no batch was made")
                self.warn(
                    f"sub-batch {sub_id}: create failed {self.s.create_attempts} times; ids left for a retry"
                )
                return
            self.store.set_state(sub_id, "intent", "create not confirmed; a rerun reconciles it")
            self.warn(
                f"sub-batch {sub_id}: create not confirmed; its {n:,} ids stay pending (rerun to reconcile)"
            )
        else:  # refused (nothing was made), or the run stopped before this sub-batch was sent
            why = "create refused" if self.fatal is None else "not sent: the run stopped"
            self.store.set_state(sub_id, "failed", why)
            self.warn(f"sub-batch {sub_id}: {why}; its {n:,} ids stay pending")

    def _created(
        self, sub_id: int, snap: BatchSnapshot, n: int, *, adopted: bool, group: int | None = None
    ) -> None:
        self.store.record_created(
            sub_id, batch_id=snap.id, created_at=snap.created_at, expires_at=snap.expires_at
        )
        if adopted:
            note = "adopted orphan" if group is None else f"adopted orphan; group={group}"
            self.store.set_state(sub_id, "live", note)
            self.adopted.append(snap.id)
        self.emit(
            BatchCreated(
                sub_id=sub_id,
                batch_id=snap.id,
                n=n,
                expires_at=snap.expires_at,
                adopted=adopted,
                created_at=snap.created_at,
                now=self.clock.now(),
            )
        )
        now = self.clock.now()
        action = next_poll_action(now, snap, self.s.poll)
        next_at = now + action.seconds if isinstance(action, Wait) else now
        self.live[sub_id] = _Live(sub_id, snap.id, n, snap, next_at)

    # -- orphan reconciliation --------------------------------------------------------------------

    async def _reconcile(self, sub_ids: Sequence[int]) -> tuple[set[int], bool]:
        """Adopt listed batches that match these intents; `(adopted sub_ids, listing was conclusive)`."""
        async with self.gate.reconciling():
            wanted = set(sub_ids) | self.attempted  # every create that may have made a batch
            rows = [
                r for r in self.store.sub_batches(("intent",)) if r.sub_id in wanted and r.batch_id is None
            ]
            if not rows:
                return self._resolved(sub_ids), True
            intents = [Intent(sub_id=r.sub_id, n=r.n, intent_at=r.intent_at) for r in rows]
            window = self.s.orphan_window
            oldest = window.oldest(intents)
            listed: list[BatchSnapshot] = []
            conclusive = False
            try:
                async with contextlib.aclosing(self.api.list_recent()) as stream:
                    scanned = 0
                    async for snap in stream:
                        if snap.created_at < oldest:
                            conclusive = True
                            break
                        listed.append(snap)
                        scanned += 1
                        if scanned >= self.s.list_scan_limit:
                            break
                    else:
                        conclusive = True
            except BatchApiError as exc:
                self.warn(f"listing batches to find orphans failed: {exc}")
                return set(), False
            adoptions = match_orphans(intents, listed, claimed=self.store.known_batch_ids(), window=window)
            n_of = {r.sub_id: r.n for r in rows}
            for a in adoptions:
                self._created(a.sub_id, a.batch, n_of[a.sub_id], adopted=True, group=a.group)
                note = " (as one of a group: lines go to the sub-batch owning their id)" if a.group else ""
                self.warn(
                    f"sub-batch {a.sub_id}: adopted orphan batch {a.batch.id}, created before its id was recorded{note}"
                )
            return self._resolved(sub_ids), conclusive

    def _resolved(self, sub_ids: Sequence[int]) -> set[int]:
        """Those of `sub_ids` that now have a batch (adopted here, or by a sibling's reconciliation)."""
        wanted = set(sub_ids)
        return {r.sub_id for r in self.store.sub_batches() if r.sub_id in wanted and r.batch_id is not None}

    # -- polling ----------------------------------------------------------------------------------

    async def _poll_all(self) -> None:
        """Poll every live batch until each has ended (and is harvested) or passed its deadline."""
        while self.live and self.fatal is None:
            now = self.clock.now()
            due = sorted((e for e in self.live.values() if e.next_at <= now), key=lambda e: e.sub_id)
            if not due:
                await self.clock.sleep(min(e.next_at for e in self.live.values()) - now)
                continue
            for entry in due:
                if self.fatal is not None:
                    return
                await self._poll_one(entry)

    async def _poll_one(self, e: _Live) -> None:
        try:
            e.snap = await self.api.retrieve(e.batch_id)
        except BatchApiError as exc:
            if exc.raw.status == 404:
                del self.live[e.sub_id]
                self._mark_stuck(e, "the API no longer knows this batch (404)")
                return
            outcome = classify(exc.raw)
            if outcome.status is Status.FATAL:
                self._set_fatal(outcome, f"retrieving batch {e.batch_id}")
                return
            self.info(f"batch {e.batch_id}: retrieve failed ({outcome.reason}); will poll again")
        now = self.clock.now()
        deadline = self.s.poll.deadline(e.snap)
        match next_poll_action(now, e.snap, self.s.poll):
            case Harvest():
                del self.live[e.sub_id]
                self.emit(
                    BatchPolled(
                        sub_id=e.sub_id,
                        batch_id=e.batch_id,
                        status="ended",
                        n=e.n,
                        deadline=deadline,
                        now=now,
                        created_at=e.snap.created_at,
                    )
                )
                await self._harvest(e)
            case Overdue():
                del self.live[e.sub_id]
                self._mark_stuck(e, f"still {e.snap.status} past its deadline (expires_at + grace)")
            case Wait(seconds):  # seconds > 0: at its deadline a batch is already Overdue
                e.next_at = now + seconds
                self.emit(
                    BatchPolled(
                        sub_id=e.sub_id,
                        batch_id=e.batch_id,
                        status=e.snap.status,
                        n=e.n,
                        deadline=deadline,
                        now=now,
                        created_at=e.snap.created_at,
                    )
                )

    def _mark_stuck(self, e: _Live, why: str) -> None:
        self.store.set_state(e.sub_id, "stuck", why)
        self.stuck.append(e.batch_id)
        deadline = self.s.poll.deadline(e.snap)
        self.emit(BatchStuck(sub_id=e.sub_id, batch_id=e.batch_id, n=e.n, deadline=deadline))
        self.warn(
            f"batch {e.batch_id} (sub-batch {e.sub_id}, {e.n:,} requests): {why}; its ids stay pending "
            "and are not resent while it may still end (`judgecore cancel` stops it; a rerun checks it again)"
        )

    # -- harvest ----------------------------------------------------------------------------------

    async def _harvest(self, e: _Live) -> bool:
        """Stream the results of an ended batch into the store; True once every line is recorded."""
        group = self._group_of(e.sub_id)
        if group:
            ids = _IdSet((), [(m, self.store.iter_sub_batch_ids(m)) for m in group])
        else:
            ids = _IdSet(self.store.iter_sub_batch_ids(e.sub_id))
        tally: Counter[str] = Counter()
        for attempt in range(self.s.harvest_attempts):
            try:
                tally = await self._harvest_pass(e, ids)
            except BatchApiError as exc:
                outcome = classify(exc.raw)
                if outcome.status is Status.FATAL and exc.raw.status != 404:
                    self._set_fatal(outcome, f"fetching results of batch {e.batch_id}")
                    return False
                self.warn(f"batch {e.batch_id}: results stream cut ({outcome.reason}); resuming it by id")
                await self.clock.sleep(self._delay(attempt, exc.raw.retry_after))
                continue
            break
        else:
            self.store.set_state(e.sub_id, "ended", "results not fully fetched; a rerun resumes the harvest")
            self.warn(
                f"batch {e.batch_id}: results could not be fetched in full; its remaining ids stay pending"
            )
            return False
        if group:
            self.store.set_state(e.sub_id, "group_harvested")
            rows = {r.sub_id: r for r in self.store.sub_batches() if r.sub_id in group}
            if all(r.state == "group_harvested" for r in rows.values()):
                for m in group:
                    tally[str(Status.RETRY)] += self._settle(m, rows[m].batch_id or e.batch_id)
        else:
            tally[str(Status.RETRY)] += self._settle(e.sub_id, e.batch_id)
        self.emit(BatchHarvested(sub_id=e.sub_id, batch_id=e.batch_id, counts=dict(tally)))
        if not self.breaker_settled:
            self.breaker_settled = self._breaker_check()
        return True

    def _group_of(self, sub_id: int) -> list[int] | None:
        """The sub-batches of an ambiguous orphan group `sub_id` belongs to (None when it is alone)."""
        rows = self.store.sub_batches()
        mine = next((r for r in rows if r.sub_id == sub_id), None)
        tag = _group_tag(mine.note if mine else None)
        if tag is None:
            return None
        return [r.sub_id for r in rows if _group_tag(r.note) == tag]

    def _settle(self, sub_id: int, batch_id: str) -> int:
        """Mark a fully harvested sub-batch; ids it had no result line for become retriable (not run)."""
        missing = self.store.unharvested_ids(sub_id)
        if missing:
            self.warn(
                f"batch {batch_id}: no result line for {len(missing):,} request(s), e.g. {missing[0]}; resent"
            )
            outcome = Outcome(
                status=Status.RETRY,
                failure=FailureClass.NOT_RUN,
                reason="batch ended without a result line for this request",
                error_type="missing_result",
            )
            now = self.clock.now()
            self.store.record_outcomes(
                OutcomeRow(
                    custom_id=c, outcome=outcome, route="batch", at=now, sub_id=sub_id, batch_id=batch_id
                )
                for c in missing
            )
        self.store.set_state(sub_id, "harvested")
        return len(missing)

    async def _harvest_pass(self, e: _Live, ids: _IdSet) -> Counter[str]:
        seen = ids.fresh_seen()
        tally: Counter[str] = Counter()
        unknown = duplicate = 0
        track = not self.breaker_settled
        clock = self.clock
        with self.store.writer(self.s.write_group, refetchable=True) as writer:
            async with contextlib.aclosing(self.api.results(e.batch_id)) as stream:
                async for custom_id, raw in stream:
                    i = ids.index(custom_id)
                    if i < 0:
                        unknown += 1
                        if unknown <= _SHOWN:
                            self.warn(
                                f"batch {e.batch_id}: result line for unknown custom_id {custom_id!r} ignored"
                            )
                        continue
                    byte, bit = divmod(i, 8)
                    if seen[byte] >> bit & 1:
                        duplicate += 1
                        if duplicate <= _SHOWN:
                            self.warn(
                                f"batch {e.batch_id}: duplicate result line for {custom_id!r}; first one kept"
                            )
                        continue
                    seen[byte] |= 1 << bit
                    outcome = classify(raw)
                    writer.add_outcome(
                        custom_id,
                        outcome,
                        route="batch",
                        at=clock.now(),
                        sub_id=ids.owner(i, e.sub_id),
                        batch_id=e.batch_id,
                    )
                    tally[outcome.status] += 1
                    if outcome.status is Status.FATAL and self.fatal is None:
                        self._set_fatal(outcome, f"result of {custom_id} in batch {e.batch_id}")
                    if track and len(self.first) < self.s.breaker.k:
                        self.first.append(outcome.failure)
        if unknown > _SHOWN or duplicate > _SHOWN:
            self.warn(
                f"batch {e.batch_id}: {unknown:,} unknown and {duplicate:,} duplicate result line(s) in all"
            )
        return Counter({str(k): v for k, v in tally.items()})

    # -- stopping ----------------------------------------------------------------------------------

    def _breaker_check(self) -> bool:
        """True once the breaker's verdict is known; trips the run when the first K were all invalid."""
        policy = self.s.breaker
        need = min(policy.k, len(self.all_ids))
        if breaker_tripped(self.first, total=len(self.all_ids), policy=policy):
            self.fatal = (
                f"FATAL_CONFIG: the first {need} results were all invalid requests; the requests themselves "
                "are malformed (check --model, --max-tokens and the rubric); stopping"
            )
            self.warn(self.fatal)
            return True
        return len(self.first) >= need or any(f is not FailureClass.INVALID_REQUEST for f in self.first)

    def _set_fatal(self, outcome: Outcome, where: str) -> None:
        if self.fatal is None:
            detail = f": {outcome.error_message}" if outcome.error_message else ""
            self.fatal = f"{outcome.failure or 'FATAL_CONFIG'}: {outcome.reason} ({where}){detail}; stopping"
            self.warn(self.fatal)


async def run_batch(
    *,
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    api: BatchApi,
    clock: Clock,
    settings: BatchSettings,
    emit: Emit,
    rng: random.Random,
) -> BatchRunResult:
    """Run (or resume) the batch path of a job bound to `store`; always returns, never wedges.

    `requests` are all the job's requests (ids already final are skipped). The result says whether the
    run stopped on a fatal error, which batches were stuck, and the store's item counts.
    """
    run = _Run(
        store=store,
        requests=requests,
        template=template,
        api=api,
        clock=clock,
        settings=settings,
        emit=emit,
        rng=rng,
    )
    return await run.run()


async def cancel_job(*, store: Store, api: BatchApi, clock: Clock, emit: Emit) -> list[str]:
    """Cancel every live (or stuck) batch of the job and record it; returns the batch ids canceled.

    A batch that has already ended is marked for harvest instead; the next `run` harvests, polls the
    canceling batches to their end, and resends whatever was not processed.
    """
    canceled: list[str] = []
    rows: list[SubBatchRow] = store.sub_batches(("live", "stuck", "intent"))
    for r in rows:
        if r.batch_id is None:
            emit(
                Notice(
                    level="warning",
                    message=f"sub-batch {r.sub_id}: create never confirmed; the next run reconciles it (cancel it then)",
                )
            )
            continue
        try:
            await api.cancel(r.batch_id)
        except BatchApiError as exc:
            raw: RawResult = exc.raw
            if raw.status in (400, 409):
                store.set_state(r.sub_id, "ended", "ended before the cancel; the next run harvests it")
                emit(
                    Notice(
                        level="info",
                        message=f"batch {r.batch_id} had already ended; the next run harvests it",
                    )
                )
            else:
                emit(Notice(level="warning", message=f"batch {r.batch_id}: cancel failed: {exc}"))
            continue
        store.set_state(r.sub_id, "canceled", f"cancel requested at {clock.now():.0f}")
        emit(Notice(level="info", message=f"batch {r.batch_id} ({r.n:,} requests): cancel requested"))
        canceled.append(r.batch_id)
    return canceled
