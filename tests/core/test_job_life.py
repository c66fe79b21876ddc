"""A job's whole life, driven through the batch machine (`judgecore.run.batch.BatchRun`) only, pure.

The checkpoint is an in-memory double that keeps what `adapters.checkpoint.store` keeps (sub-batch rows and their
ids, outcome rows unique per sub-batch and custom_id) and builds the same pure view
(`judgecore.run.batch.Checkpoint`); the API is a tiny model whose batches end when the test says, with
results drawn at random (`classify`-able answers, fatal ones left out: they end the run rather than an
item, see test_outcomes.py). Operations are answered in any order; time only moves forward; the
process may restart at any step (a new machine from the double's view). A create answered more than
`CREATE_DEADLINE` after its intent is what the shell sees when it gives the call up
(`AnthropicBatchApi`): a timeout, the batch made by the deadline or not at all (the API cannot make a
batch later than that plus the orphan window's margin; without this bound the double made batches days
after their intent, outside any window a reconciliation can look in). A harvest is performed as the
shell does it, through the core's own `HarvestFold`.
"""

from __future__ import annotations

from collections import Counter

import attrs
import orjson
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from strategies import non_fatal_results

from judgecore.decide.polling import BatchSnapshot, PollPolicy, RequestCounts
from judgecore.decide.resume import JobState, diff_resume
from judgecore.job.items import Item
from judgecore.results.outcomes import FINAL_STATUSES, Outcome, RawResult, Status, classify
from judgecore.run.batch import (
    BatchRun,
    BatchSettings,
    Begin,
    Checkpoint,
    Create,
    Created,
    CreateFailed,
    Done,
    Event,
    Harvest,
    Harvested,
    Listed,
    Poll,
    Reconcile,
    Record,
    Release,
    Say,
    Snapshot,
    SubView,
    Wait,
)
from judgecore.run.batch.batching import CREATE_DEADLINE
from judgecore.run.batch.gate import IdSet
from judgecore.run.batch.harvest import HarvestFold
from judgecore.run.subbatch import IN_FLIGHT, TERMINAL, Phase, SubEvent, SubState
from judgecore.wire.requests import RequestTemplate, build_requests


@attrs.define
class Row:
    sub_id: int
    round: int
    ids: tuple[str, ...]
    intent_at: float
    state: SubState = SubState.INTENT
    batch_id: str | None = None
    created_at: float | None = None
    expires_at: float | None = None
    group: int | None = None


class MemoryCheckpoint:
    """What the store keeps, in memory, and the same pure view of it."""

    def __init__(self) -> None:
        self.rows: dict[int, Row] = {}
        self.outcomes: dict[tuple[int, str], Outcome] = {}  # (sub_id, custom_id): unique, like the store
        self.order: list[Outcome] = []

    def record(self, sub_id: int, custom_id: str, outcome: Outcome) -> None:
        if (sub_id, custom_id) not in self.outcomes:
            self.outcomes[(sub_id, custom_id)] = outcome
            self.order.append(outcome)

    def final(self) -> frozenset[str]:
        return frozenset(c for (_, c), o in self.outcomes.items() if o.status in FINAL_STATUSES)

    def view(self, k: int) -> Checkpoint:
        subs = tuple(
            SubView(
                sub_id=r.sub_id,
                round=r.round,
                n=len(r.ids),
                intent_at=r.intent_at,
                state=r.state,
                batch_id=r.batch_id,
                created_at=r.created_at,
                expires_at=r.expires_at,
                group=r.group,
                ids=tuple(c for c in r.ids if (r.sub_id, c) not in self.outcomes)
                if r.state in IN_FLIGHT
                else (),
            )
            for r in sorted(self.rows.values(), key=lambda r: r.sub_id)
        )
        first = tuple(o.failure for o in self.order if o.final)[:k]
        return Checkpoint(subs=subs, final=self.final(), first_final=first)


class JobLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = 1_700_000_000.0
        self.cp = MemoryCheckpoint()
        self.server: dict[str, tuple[BatchSnapshot, tuple[str, ...]]] = {}
        self.answers: dict[str, RawResult] = {}  # (drawn when its batch ends)
        self.sent_after_final: list[str] = []
        self.sends_this_run: Counter[str] = Counter()

    @initialize(
        n=st.integers(1, 25),
        max_attempts=st.integers(1, 4),
        max_requests=st.integers(1, 8),
        concurrency=st.integers(1, 4),
        ttl=st.floats(60.0, 86_400.0),
        interval=st.floats(0.5, 600.0),
        grace=st.floats(0.0, 3_600.0),
    )
    def start(self, n, max_attempts, max_requests, concurrency, ttl, interval, grace):
        items = [
            Item(
                id=f"q{i}-s{i % 3}",
                line=i + 1,
                messages_json=orjson.dumps([{"role": "user", "content": f"q{i}"}]),
            )
            for i in range(n)
        ]
        template = RequestTemplate.build(
            model="claude-sonnet-4-6", max_tokens=64, rubric="Rate 1-5.", path="batch"
        )
        self.requests = build_requests(items, template)
        self.ids = tuple(r.custom_id for r in self.requests)
        self.ttl = ttl
        self.settings = BatchSettings(
            max_batch_requests=max_requests,
            max_attempts=max_attempts,
            concurrency=concurrency,
            poll=PollPolicy(interval=interval, grace=grace),
        )
        self._restart()

    def _restart(self) -> None:
        """A new process: a new machine from what the checkpoint holds now."""
        view = self.cp.view(self.settings.breaker.k)
        self.run = BatchRun.start(view, requests=self.requests, settings=self.settings, now=self.now)
        self.ops: list[Create | Reconcile | Poll | Harvest] = []
        self.done: Done | None = None
        self.sleep: float | None = None
        self.sends_this_run = Counter()

    # --- the interpreter ------------------------------------------------------------------------

    @precondition(lambda self: self.done is None)
    @rule()
    def advance(self):
        self.run, actions = self.run.advance(self.now)
        assert isinstance(actions[-1], Wait | Done), "advance ends with one Wait or Done"
        assert not any(isinstance(a, Wait | Done) for a in actions[:-1])
        self.sleep = None
        for action in actions:
            match action:
                case Record(sub_id, event, state, _, batch, _, group):
                    row = self.cp.rows[sub_id]
                    row.state, row.group = state, group if group is not None else row.group
                    if event in (SubEvent.CREATED, SubEvent.ADOPTED):
                        assert batch is not None
                        row.batch_id, row.created_at, row.expires_at = (
                            batch.id,
                            batch.created_at,
                            batch.expires_at,
                        )
                case Release(held):
                    for h in held:
                        self.cp.record(h.sub_id, h.custom_id, h.outcome)
                case Begin() | Say():
                    pass
                case Create() | Reconcile() | Poll() | Harvest():
                    self.ops.append(action)
                case Wait(until):
                    assert until is None or until > self.now
                    self.sleep = until
                case Done():
                    assert not self.ops
                    self.done = action

    @precondition(lambda self: self.done is None and bool(self.ops))
    @rule(data=st.data(), rtt=st.floats(0.0, 5.0))
    def answer(self, data, rtt):
        """The model API answers one operation in flight, any of them."""
        op = self.ops.pop(data.draw(st.integers(0, len(self.ops) - 1)))
        self.now += rtt
        self.run = self.run.on(self._perform(op, data))

    @precondition(lambda self: self.done is None and self.sleep is not None and not self.ops)
    @rule()
    def sleep_until_due(self):
        self.now = max(self.now, self.sleep)

    @rule(seconds=st.floats(0.0, 2 * 86_400.0))
    def time_passes(self, seconds):
        self.now += seconds

    @rule(data=st.data())
    def api_ends_a_batch(self, data):
        live = sorted(b for b, (snap, _) in self.server.items() if snap.live)
        if live:
            self._end(data.draw(st.sampled_from(live)), data)

    @rule()
    def process_restarts(self):
        self._restart()

    @precondition(lambda self: self.done is not None)
    @rule()
    def rerun(self):
        self._restart()

    # --- the model API ----------------------------------------------------------------------------

    def _end(self, batch_id, data=None):
        snap, cids = self.server[batch_id]
        for c in cids:
            self.answers[f"{batch_id}/{c}"] = (
                data.draw(non_fatal_results) if data else RawResult(kind="succeeded")
            )
        self.server[batch_id] = (attrs.evolve(snap, status="ended", ended_at=self.now), cids)

    def _snap(self, batch_id):
        snap, cids = self.server[batch_id]
        if snap.live and self.now >= snap.expires_at:  # the API's promise: ended by expires_at
            for c in cids:
                self.answers[f"{batch_id}/{c}"] = RawResult(kind="expired")
            snap = attrs.evolve(snap, status="ended", ended_at=self.now)
            self.server[batch_id] = (snap, cids)
        return snap

    def _perform(self, op, data=None) -> Event:
        match op:
            case Create(sub_id, round_, requests, at, written):
                ids = tuple(r.custom_id for r in requests)
                if written:
                    self.cp.rows[sub_id].intent_at = at
                else:
                    self.cp.rows[sub_id] = Row(sub_id, round_, ids, at)
                final = self.cp.final()
                self.sent_after_final += [c for c in ids if c in final]
                # the shell gives a create call up at its deadline (`AnthropicBatchApi`): answered later,
                # it failed in a way that may have made a batch, made by the deadline at the latest
                late = self.now > at + CREATE_DEADLINE
                made = not late or data is None or data.draw(st.booleans(), label="late create made")
                created_at = min(self.now, at + CREATE_DEADLINE)
                if made:  # a send: the API holds the ids (a create that made nothing is retried, not a send)
                    self.sends_this_run.update(ids)
                    batch_id = f"msgbatch_{len(self.server) + 1:04d}"
                    snap = BatchSnapshot(
                        id=batch_id,
                        status="in_progress",
                        created_at=created_at,
                        expires_at=created_at + self.ttl,
                        counts=RequestCounts(processing=len(ids)),
                    )
                    self.server[batch_id] = (snap, ids)
                if late:
                    timeout = RawResult(kind="connection_error", error_type="timeout")
                    return CreateFailed(sub_id, timeout, self.now, 0.5)
                return Created(sub_id, snap, self.now)
            case Reconcile():
                listed = tuple(self._snap(b) for b in sorted(self.server, reverse=True))
                return Listed(listed, True, self.now)
            case Poll(sub_id, batch_id):
                return Snapshot(sub_id, self._snap(batch_id), self.now)
            case Harvest():
                return self._harvest(op)
        raise AssertionError(op)

    def _harvest(self, op: Harvest) -> Harvested:
        """The core's `HarvestFold` over the fake server's lines, performed as `BatchShell.harvest`
        performs it: its rows recorded, then the missing rows of a whole stream."""
        owners = [(m, self.cp.rows[m].ids) for m in op.group]
        ids = IdSet(self.cp.rows[op.sub_id].ids if not owners else (), owners)
        fold = HarvestFold.start(
            sub_id=op.sub_id,
            batch_id=op.batch_id,
            ids=ids,
            breaker=op.breaker,
            held=op.held,
            settle=op.settle,
        )
        _, cids = self.server[op.batch_id]
        fold, rows, _ = fold.take((c, classify(self.answers[f"{op.batch_id}/{c}"])) for c in cids)
        for h in rows:
            self.cp.record(h.sub_id, h.custom_id, h.outcome)
        unanswered = {
            m: [c for c in self.cp.rows[m].ids if (m, c) not in self.cp.outcomes] for m in op.settle
        }
        end = fold.finish(unanswered, at=self.now, u=0.5)
        for h in end.rows:
            self.cp.record(h.sub_id, h.custom_id, h.outcome)
        return end.event

    # --- invariants -------------------------------------------------------------------------------

    def _state(self) -> JobState:
        view = self.cp.view(20)
        in_flight = frozenset(c for s in view.subs for c in s.ids)
        return JobState(final=view.final, in_flight=in_flight - view.final)

    @invariant()
    def the_checkpoint_partitions_the_job(self):
        if not hasattr(self, "ids"):
            return
        diff = diff_resume(self.ids, self._state())
        sets = [set(diff.submit), diff.poll, diff.final, diff.exhausted]
        assert len(self.ids) == sum(len(s) for s in sets)

    @invariant()
    def no_create_is_in_flight_while_listing(self):
        phases = self.run.phases
        assert not (Phase.CREATING in phases and Phase.LISTING in phases)

    @invariant()
    def a_sub_batch_is_settled_exactly_when_its_state_is_terminal(self):
        assert all((s.phase is Phase.SETTLED) == (s.state in TERMINAL) for s in self.run.subs.values())

    @invariant()
    def live_batches_never_share_an_id(self):
        live = [c for snap, cids in self.server.values() if snap.live for c in cids]
        assert len(live) == len(set(live))

    @invariant()
    def no_final_id_is_ever_resubmitted(self):
        assert [] == self.sent_after_final

    @invariant()
    def no_id_is_sent_more_than_max_attempts_in_one_run(self):
        if hasattr(self, "settings"):
            assert all(n <= self.settings.max_attempts for n in self.sends_this_run.values())

    def teardown(self):
        """However the job got here, it finishes: each run in bounded steps, reruns until none is pending."""
        if not hasattr(self, "ids"):
            return
        for _ in range(self.settings.max_attempts + 3):
            for _step in range(5_000):
                if self.done is not None:
                    break
                if self.ops:
                    op = self.ops.pop(0)
                    self.run = self.run.on(self._perform(op))
                    for b, (snap, _) in list(self.server.items()):
                        if snap.live:
                            self._end(b)
                elif self.sleep is not None:
                    self.now = max(self.now, self.sleep)
                    self.sleep = None
                else:
                    self.advance()
            assert self.done is not None, "a run did not end"
            self.no_final_id_is_ever_resubmitted()
            self.no_id_is_sent_more_than_max_attempts_in_one_run()
            if self.done.exit_status != 3:
                break
            self._restart()
        assert self.done is not None and self.done.exit_status in (0, 4)
        if self.done.exit_status == 0:
            assert set(self.ids) == self.cp.final()
        assert all(o.status is not Status.FATAL for o in self.cp.outcomes.values())


TestJobLife = JobLife.TestCase
