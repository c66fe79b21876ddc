"""The batch path's interpreter: performs what `judgecore.run.batch.BatchRun` decides, in checkpoint order.

Theory of operation. Every decision (rounds, creates and their retries, reconciliation, polling,
deadlines, what a harvest means, the breaker, the per-run retry budget, when to stop) is the pure
machine's. This module only performs: the one interpreter loop (`adapters.run.interpreter`) asks
`run.advance(now)` what to do, performs the effects at once and in order, starts the operations as
tasks (creates concurrently, up to `concurrency`), and feeds each answer back with `run.on(event)`. Durable writes keep the order of `adapters.checkpoint.store`: the
intent before its create call, the batch id right after the call returns, each harvested line before
it counts (a harvest streams its lines into `OutcomeWriter`, in group commits; memory: 8 bytes and one
bit per request of the batch, not the lines).

It talks to one `adapters.providers.port.BatchPort` and never branches on a provider. A create is the
port's two steps: the upload (an OpenAI file, its id durable in the checkpoint, `store.record_upload`,
before the create; Anthropic's hands the body on), then the create, naming the sub-batch (`BatchMeta`:
the state dir's batch tag and the sub-batch's id). A reconciliation asks the port's finders first: a
batch found by its name is adopted; an intent with an upload but no batch goes back to the machine
(`Listed.uploaded`), which creates it from that upload like any create (nothing uploaded twice); where
the port cannot tell (Anthropic), it lists and matches as before. Once a harvested batch is recorded
`harvested`, the port discards what it left on the provider (OpenAI: its files, unless `--keep-files`).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Awaitable, Mapping, Sequence
from typing import assert_never

import attrs

from adapters.checkpoint.store import OutcomeRow, Store
from adapters.files.checkpointed import CheckpointMessages
from adapters.providers.port import BatchApiError, BatchMeta, BatchPort, CreateBody, Upload
from adapters.run.clock import Clock
from adapters.run.events import (
    BatchCreated,
    BatchHarvested,
    BatchPolled,
    BatchStuck,
    Emit,
    Notice,
    RoundStarted,
)
from adapters.run.interpreter import Interpreter
from adapters.run.switch import Switcher
from judgecore.decide.planning import ModelPrice
from judgecore.decide.polling import BatchSnapshot
from judgecore.decide.spend import Budget, Expect
from judgecore.results.resultlines import ResultLine
from judgecore.run import batch as br
from judgecore.run.batch import BatchSettings
from judgecore.run.batch.gate import IdSet
from judgecore.run.batch.harvest import HarvestFold
from judgecore.run.subbatch import SubEvent, SubState
from judgecore.values import frozen
from judgecore.wire.chunking import body_size
from judgecore.wire.encoding import create_body
from judgecore.wire.requests import Request, Requests, RequestTemplate, custom_ids_of

__all__ = [
    "BatchRunResult",
    "BatchSettings",
    "BatchShell",
    "create_body",
    "run_batch",
]

_GROUP = 256  # result lines handed to the harvest's fold at a time


@frozen(kw_only=True)
class BatchRunResult:
    """What a run of the batch path did; the outputs themselves are in the store (`Store.latest()`)."""

    fatal: str | None
    stuck: tuple[str, ...]
    rounds: int
    counts: Mapping[str, int]  # empty when `run_batch` was asked not to count (`count=False`)
    sent: int  # requests put in batch creates this run (adopted orphans not counted)
    adopted: tuple[str, ...]
    exit_status: int = 0
    #: the `--budget` a rerun needs to send what the cap left unsent (None: the cap did not stop it)
    rerun_budget: float | None = None
    #: the deadline's switch was made (or resumed): what is not final goes on the sync route
    switched: bool = False

    @property
    def pending(self) -> int:
        return self.counts.get("pending", 0)


@attrs.define
class BatchShell:
    """Performs a `BatchRun`'s actions against the store, the API, the clock and the terminal: `effect`
    at once, `perform` (an operation) to its one event. `run_batch` drives it; so can a test."""

    store: Store
    template: RequestTemplate
    api: BatchPort
    clock: Clock
    settings: BatchSettings
    emit: Emit
    rng: random.Random
    priced: bool = attrs.field(default=False, kw_only=True)  # sum each harvest's usage (a budget is kept)
    tag: str = attrs.field(default="", kw_only=True)  # the state dir's (`Store.drawn_batch_tag`)
    #: the panel lane whose batches these are (`adapters.run.lanes.lane_of`), kept on each intent
    lane: str | None = attrs.field(default=None, kw_only=True)
    #: batches harvested whole this run, by sub-batch: discarded once recorded `harvested`
    harvested: dict[int, str] = attrs.field(factory=dict, kw_only=True)
    discards: list[str] = attrs.field(factory=list, kw_only=True)

    def meta(self, sub_id: int) -> BatchMeta:
        return BatchMeta(self.tag or self.store.drawn_batch_tag(), str(sub_id))

    def _recorded_upload(self, sub_id: int) -> Upload | None:
        file_id = self.store.upload_of(sub_id)
        return None if file_id is None else Upload(file_id)

    async def discard_harvested(self) -> None:
        """Discard what each batch recorded `harvested` left on the provider (a failure is a warning:
        the answers are safe; the files stay)."""
        while self.discards:
            batch_id = self.discards.pop(0)
            try:
                await self.api.discard(batch_id)
            except BatchApiError as exc:
                self._warn(f"batch {batch_id}: its files could not be deleted ({exc}); they stay")

    def deadline(self, snap: BatchSnapshot) -> float:
        return self.settings.poll.deadline(snap)

    # -- effects: at once, in order --------------------------------------------------------------

    def effect(self, action: br.Record | br.Release | br.Begin | br.Say) -> None:
        store = self.store
        match action:
            case br.Record(sub_id, SubEvent.CREATED | SubEvent.ADOPTED as event, _, note, batch, n, group):
                assert batch is not None  # a created batch's id was written as the call returned, too
                at, ends = batch.created_at, batch.expires_at
                store.record_created(
                    sub_id, batch_id=batch.id, created_at=at, expires_at=ends, note=note, group=group
                )
                adopted = event is SubEvent.ADOPTED
                self.emit(
                    BatchCreated(
                        sub_id=sub_id,
                        batch_id=batch.id,
                        n=n,
                        expires_at=ends,
                        adopted=adopted,
                        created_at=at,
                        now=self.clock.now(),
                    )
                )
            case br.Record(sub_id, SubEvent.OVERDUE, state, note, batch, n):
                assert batch is not None
                store.set_state(sub_id, state, note)
                self.emit(BatchStuck(sub_id=sub_id, batch_id=batch.id, n=n, deadline=self.deadline(batch)))
            case br.Record(sub_id, _, state, note, _, _, group):
                store.set_state(sub_id, state, note, group)
                if state is SubState.HARVESTED and sub_id in self.harvested:
                    self.discards.append(self.harvested.pop(sub_id))
            case br.Release(held):
                now = self.clock.now()
                store.record_outcomes(
                    OutcomeRow(custom_id=c, outcome=o, route="batch", at=now, sub_id=sub, batch_id=b)
                    for c, o, sub, b in held
                )
            case br.Begin(number, n, k):
                self.emit(RoundStarted(round=number, n=n, sub_batches=k))
            case br.Say(level, text):
                self.emit(Notice(level=level, message=text))
            case _:
                assert_never(action)

    # -- operations: each ends in one event ------------------------------------------------------

    async def perform(self, action: br.Create | br.Reconcile | br.Poll | br.Harvest) -> br.Event:
        match action:
            case br.Create():
                return await self.create(action)
            case br.Reconcile():
                return await self.reconcile(action)
            case br.Poll():
                return await self.poll(action)
            case br.Harvest():
                return await self.harvest(action)
            case _:
                assert_never(action)

    async def poll(self, action: br.Poll) -> br.Event:
        try:
            snap = await self.api.retrieve(action.batch_id)
        except BatchApiError as exc:
            return br.PollFailed(action.sub_id, exc.raw, self.clock.now())
        now, sub_id, n = self.clock.now(), action.sub_id, snap.counts.total
        deadline = self.deadline(snap)
        self.emit(
            BatchPolled(
                sub_id=sub_id,
                batch_id=snap.id,
                status=snap.status,
                n=n,
                deadline=deadline,
                now=now,
                created_at=snap.created_at,
                ended_at=snap.ended_at,
            )
        )
        return br.Snapshot(sub_id, snap, now)

    async def create(self, action: br.Create) -> br.Event:
        """The intent, then the create: its body streamed from the requests (`CreateBody`), their
        messages read back from the checkpoint a slice at a time as it streams (`CheckpointMessages`),
        so creates in flight (at most `settings.concurrency`) hold a few hundred KB each, not their
        bodies."""
        reqs = Requests.of(action.requests)
        # made once, for the intent, the messages read back and the body: a job's custom_ids are made
        # from their digests at each read (two more reads of every id sent: 0.6 CPU s at 720,000)
        cids = custom_ids_of(reqs)
        messages = CheckpointMessages(self.store, cids)
        body = CreateBody(reqs, self.template, messages, size=body_size(reqs.sizes), custom_ids=cids)
        if action.written:
            self.store.restamp_intent(action.sub_id, action.at)
        else:
            self.store.record_intent(
                sub_id=action.sub_id,
                round=action.round,
                custom_ids=cids,
                n_bytes=body.size,
                at=action.at,
                lane=self.lane,
            )
        meta = self.meta(action.sub_id)
        try:
            # an intent whose upload is recorded (this run's, or one a reconciliation found) is
            # created from it: nothing is uploaded twice
            upload = self._recorded_upload(action.sub_id)
            if upload is None:
                upload = await self.api.upload(body, meta)
                if upload.file_id is not None:  # durable before the create: a rerun creates from it
                    self.store.record_upload(action.sub_id, upload.file_id)
            snap = await self.api.create(upload, meta)
        except BatchApiError as exc:
            return br.CreateFailed(action.sub_id, exc.raw, self.clock.now(), self.rng.random())
        self.store.record_created(
            action.sub_id, batch_id=snap.id, created_at=snap.created_at, expires_at=snap.expires_at
        )
        return br.Created(action.sub_id, snap, self.clock.now())

    async def reconcile(self, action: br.Reconcile) -> br.Event:
        """The port's finders first (a batch found by name is adopted; an upload without a batch is
        created from); the intents they cannot tell about are matched against a listing."""
        named: list[tuple[int, BatchSnapshot]] = []
        uploaded: list[int] = []
        unsure = []
        try:
            for intent in action.intents:
                meta, since = self.meta(intent.sub_id), intent.intent_at - action.window.skew
                found = await self.api.find_batch(meta, since)
                if not found.conclusive:
                    unsure.append(intent)
                elif found.batch is not None:
                    named.append((intent.sub_id, found.batch))
                elif upload := self._recorded_upload(intent.sub_id) or await self.api.find_upload(
                    meta, since
                ):
                    if upload.file_id is not None and self.store.upload_of(intent.sub_id) is None:
                        self.store.record_upload(intent.sub_id, upload.file_id)  # what the create uses
                    uploaded.append(intent.sub_id)  # the machine creates it from its upload
        except BatchApiError as exc:
            return br.ListFailed(exc.raw, self.clock.now(), self.rng.random())
        if not unsure:
            return br.Listed((), True, self.clock.now(), (), tuple(named), tuple(uploaded))
        listed = []
        conclusive = False
        try:
            async with contextlib.aclosing(self.api.list_recent()) as stream:
                async for snap in stream:
                    if snap.created_at < action.oldest:
                        conclusive = True
                        break
                    listed.append(snap)
                    if len(listed) >= action.limit:
                        break
                else:
                    conclusive = True
        except BatchApiError as exc:
            return br.ListFailed(exc.raw, self.clock.now(), self.rng.random())
        first_ids = [
            (b.id, cid) for b in listed if action.worth_checking(b) and (cid := await self._first_id(b.id))
        ]
        return br.Listed(
            tuple(listed), conclusive, self.clock.now(), tuple(first_ids), tuple(named), tuple(uploaded)
        )

    async def _first_id(self, batch_id: str) -> str | None:
        """The custom_id of an ended batch's first result line (None: no line, or it could not be read):
        what tells a listed batch of this job from another job's before it is adopted."""
        try:
            async with contextlib.aclosing(self.api.results(batch_id)) as stream:
                async for lines in stream:
                    if lines:
                        return lines[0][0]
        except BatchApiError:
            return None
        return None

    async def harvest(self, action: br.Harvest) -> br.Event:
        """Stream an ended batch's lines into the store through the core's `HarvestFold`, a group of
        lines at a time; record the rows it lets through, say what it says; one `Harvested`."""
        store, batch_id, sub_id, clock = self.store, action.batch_id, action.sub_id, self.clock
        owners = [(m, store.iter_sub_batch_ids(m)) for m in action.group]  # an orphan group's
        ids = IdSet(store.iter_sub_batch_ids(sub_id) if not owners else (), owners)
        fold = HarvestFold.start(
            sub_id=sub_id,
            batch_id=batch_id,
            ids=ids,
            breaker=action.breaker,
            held=action.held,
            settle=action.settle,
            priced=self.priced,
        )
        with store.writer(self.settings.write_group, refetchable=True) as writer:

            def take(lines: list[ResultLine]) -> HarvestFold:
                folded, rows, say = fold.take(lines)
                writer.add_rows(rows, route="batch", at=clock.now())
                for text in say:
                    self._warn(text)
                return folded

            group: list[ResultLine] = []
            size = max(1, min(_GROUP, self.settings.write_group))  # none waits past a group commit
            try:
                async with contextlib.aclosing(self.api.results(batch_id)) as stream:
                    async for lines in stream:  # a list of lines at a time: no async step per line
                        group += lines
                        while len(group) >= size:
                            fold, group = take(group[:size]), group[size:]
                            if fold.stopped:
                                break
                        if fold.stopped:
                            break
            except BatchApiError as exc:
                fold = take(group).cut(exc.raw)
            else:
                fold = take(group)
        end = fold.finish(
            {m: store.unharvested_ids(m) for m in action.settle} if fold.error is None else {},
            at=clock.now(),
            u=self.rng.random(),
        )
        for text in end.say:
            self._warn(text)
        if end.rows:
            now = clock.now()
            store.record_outcomes(
                OutcomeRow(custom_id=c, outcome=o, route="batch", at=now, sub_id=m, batch_id=b)
                for c, o, m, b in end.rows
            )
        if end.counts is not None:
            self.emit(BatchHarvested(sub_id=sub_id, batch_id=batch_id, counts=end.counts))
        if fold.error is None:
            self.harvested[sub_id] = batch_id
        return end.event

    def _warn(self, message: str) -> None:
        self.emit(Notice(level="warning", message=message))


async def run_batch(
    *,
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    api: BatchPort,
    clock: Clock,
    settings: BatchSettings,
    emit: Emit,
    rng: random.Random,
    total: int | None = None,
    budget: Budget | None = None,
    price: ModelPrice | None = None,
    expect: Expect | None = None,
    switcher: Switcher | None = None,
    resumed_switch: bool = False,
    lane: str | None = None,
    sub_slot: tuple[int, int] = (0, 1),
    count: bool = True,
) -> BatchRunResult:
    """Run (or resume) the batch path of a job bound to `store`; always returns, never wedges.

    `requests` are the job's requests to run on the batch path (ids already final are skipped);
    `total` is the job's number of ids, for the breaker (default: `len(requests)`). `budget` (with the
    model's `price`) is the hard cap: its `spent` is raised to the job's spend so far in the checkpoint;
    `expect` (what one request is expected to cost) is the figure its last line starts from.
    `switcher`: the deadline's switch (`adapters.run.switch`); `resumed_switch`: an earlier run made it.
    `lane`: the panel lane whose batches these are (None: every sub-batch of the checkpoint is this
    run's): the run sees, reconciles and records that lane's sub-batches only, numbered in `sub_slot`.
    `count=False`: the result's `counts` is left empty, for a caller that counts the items itself (the
    job counts them as it writes its output): the count reads every item's latest row (0.35 s of CPU at
    720,000 items).
    """
    capped = budget is not None and budget.cap is not None
    if budget is not None and capped:
        if price is None:
            raise ValueError("a budget needs the model's price")
        budget = attrs.evolve(budget, spent=max(budget.spent, store.spent_usd(price)))
    shell = BatchShell(
        store,
        template,
        api,
        clock,
        settings,
        emit,
        rng,
        priced=capped,
        tag=store.drawn_batch_tag(),
        lane=lane,
    )
    run = br.BatchRun.start(
        store.checkpoint(settings.breaker.k, lane=lane),
        requests=requests,
        settings=settings,
        now=clock.now(),
        total=total,
        budget=budget,
        price=price if capped else None,
        cached_bytes=len(template.system_json or b""),
        expect=expect,
        sub_slot=sub_slot,
    )
    if switcher is not None:
        run = switcher.start(run, resumed=resumed_switch)

    def perform(action: br.Action) -> Awaitable[br.Event] | None:
        match action:
            case br.Record() | br.Release() | br.Begin() | br.Say():
                shell.effect(action)
                return None
            case br.Create() | br.Reconcile() | br.Poll() | br.Harvest():
                return shell.perform(action)
            case br.Wait() | br.Done():  # pragma: no cover - the interpreter's
                raise AssertionError(action)
            case _:
                assert_never(action)

    loop = Interpreter(
        run,
        clock,
        perform,
        before=switcher.step if switcher is not None else None,
        wake=switcher.wake if switcher is not None else None,
        after=shell.discard_harvested,
    )
    done = await loop.run()
    run = loop.machine
    counts = store.counts() if count else {}
    # what is left pending is the job's to say (its closing lines), not this part's: a sync part may
    # follow this one in the same run
    return BatchRunResult(
        fatal=run.stop,
        stuck=run.stuck,
        rounds=run.rounds,
        counts=counts,
        sent=run.sent,
        adopted=run.adopted,
        exit_status=done.exit_status,
        rerun_budget=run.rerun_budget,
        switched=run.switched,
    )
