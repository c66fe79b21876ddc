"""The real batch machine, its real interpreter and the real checkpoint, against a model of the API that
answers any operation in any order, fails, hangs, expires, and a process that can crash at any step.

Hypothesis chooses, step by step: which operation in flight is answered next and how (a create that
fails before or after it made the batch, a 413, a 401, a listing that fails, a poll that fails, a
results stream that is cut or that the process dies in), when time passes, when the process dies (a
new `BatchRun` is then built from what the checkpoint holds at that instant, on a reopened store), and
when a finished run is run again. The model API checks what is *sent* against what the checkpoint
knew at that moment; the teardown finishes the job with a well-behaved API and checks every run ends.
"""

from __future__ import annotations

import asyncio
import random
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import attrs
import orjson
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import BatchApiError, CreateBody, body_of
from adapters.providers.port import BatchMeta, Found, OneCallCreate, Upload
from adapters.run.batch import BatchSettings, BatchShell
from adapters.run.clock import FakeClock
from judgecore.decide.polling import BatchSnapshot, PollPolicy, RequestCounts
from judgecore.results.outcomes import Outcome, RawResult, classify
from judgecore.run.batch import (
    BatchRun,
    Begin,
    Create,
    Done,
    Harvest,
    Poll,
    Reconcile,
    Record,
    Release,
    Say,
    Wait,
)
from judgecore.run.subbatch import TERMINAL, Phase

from .fakes import RESULTS, TEMPLATE, bind, make_requests

SHM = Path("/dev/shm")  # fsyncs on tmpfs cost nothing: the checkpoint's order is what is under test
KINDS = ("succeeded", "succeeded", "succeeded", "max_tokens", "invalid_request", "api_error", "expired")
RETRIABLE = {"api_error", "expired", "canceled", "overloaded_error", "rate_limit_error"}


class Crash(BaseException):
    """The process dies here."""


def _http(status: int, error_type: str) -> BatchApiError:
    return BatchApiError(
        RawResult(kind="http_error", status=status, error_type=error_type, message=error_type)
    )


@attrs.define
class ServerBatch:
    id: str
    ids: tuple[str, ...]
    kinds: dict[str, str]
    created_at: float
    expires_at: float
    ends_at: float  # at expires_at at the latest (the API's promise); unrun lines are then `expired`


class ModelApi(OneCallCreate):
    """A batch port (`OneCallCreate`: Anthropic's shape) whose every answer is chosen by the test (`mode`), and which checks what it is sent."""

    def __init__(self, machine: BatchLife) -> None:
        self.m = machine
        self.batches: dict[str, ServerBatch] = {}
        self.mode = "ok"
        self.kind_seed = 0
        self.duration = 100.0
        self.cut_after = 0
        self.violations: list[str] = []
        self.creates = 0
        self.unheard: dict[str, int] = {}  # custom_id -> listings so far when a batch of it was made unheard

    def now(self) -> float:
        return self.m.now

    def _status(self, b: ServerBatch) -> str:
        return "ended" if self.now() >= b.ends_at else "in_progress"

    def _snap(self, b: ServerBatch) -> BatchSnapshot:
        status = self._status(b)
        n = len(b.ids)
        counts = RequestCounts(succeeded=n) if status == "ended" else RequestCounts(processing=n)
        return BatchSnapshot(
            id=b.id, status=status, created_at=b.created_at, expires_at=b.expires_at, counts=counts
        )  # type: ignore[arg-type]

    def _check_send(self, ids: tuple[str, ...]) -> None:
        """What is sent never repeats an answer the job could have kept, nor an id another batch may
        answer; an id in a batch whose create may have succeeded is resent only after a listing."""
        final = self.m.store.job_state().final
        for c in ids:
            if c in self.unheard and self.m.listings <= self.unheard[c]:
                self.violations.append(f"{c} resent with no reconciliation since its unheard-of batch")
            if c in final:
                self.violations.append(f"final id {c} sent again")
            for b in self.batches.values():
                if c not in b.kinds:
                    continue
                if self._status(b) != "ended":
                    self.violations.append(f"{c} sent while batch {b.id} (live) holds it")
                elif b.kinds[c] not in RETRIABLE and b.kinds[c] != "invalid_request":
                    self.violations.append(f"{c} sent again though batch {b.id} answered it {b.kinds[c]}")

    async def create(self, create: CreateBody | Upload, meta: BatchMeta | None = None) -> BatchSnapshot:
        body = bytes(body_of(create))
        mode = self.mode
        if mode in ("413",) and len(orjson.loads(body)["requests"]) >= 1:
            raise _http(413, "request_too_large")
        if mode == "401":
            raise _http(401, "authentication_error")
        if mode == "500":
            raise _http(500, "api_error")
        if mode == "drop":
            raise BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
        ids = tuple(r["custom_id"] for r in orjson.loads(body)["requests"])
        self._check_send(ids)
        self.creates += 1
        rng = random.Random(self.kind_seed)
        now = self.m.started  # the server stamps a batch when the create reaches it, not when it answers
        b = ServerBatch(
            id=f"msgbatch_{len(self.batches) + 1:04d}",
            ids=ids,
            kinds={c: rng.choice(KINDS) for c in ids},
            created_at=now,
            expires_at=now + 86_400.0,
            ends_at=now + min(self.duration, 86_400.0),
        )
        self.batches[b.id] = b
        self.m.sends += len(ids)
        if mode.startswith("persist_then"):  # the client never hears of this batch: only a listing can
            self.unheard.update({c: self.m.listings for c in ids})
        match mode:
            case "persist_then_500":
                raise _http(500, "api_error")
            case "persist_then_drop":
                raise BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
            case "persist_then_crash":
                raise Crash()
        return self._snap(b)

    async def retrieve(self, batch_id: str) -> BatchSnapshot:
        if self.mode == "500":
            raise _http(500, "api_error")
        return self._snap(self.batches[batch_id])

    async def list_recent(self) -> AsyncIterator[BatchSnapshot]:
        if self.mode == "500":
            raise _http(500, "api_error")
        self.m.listings += 1
        for b in sorted(self.batches.values(), key=lambda b: (b.created_at, b.id), reverse=True):
            yield self._snap(b)

    async def cancel(self, batch_id: str) -> BatchSnapshot:  # pragma: no cover - not used by a run
        raise NotImplementedError

    async def results(self, batch_id: str) -> AsyncIterator[list[tuple[str, Outcome]]]:
        b = self.batches[batch_id]
        if self._status(b) != "ended":
            raise BatchApiError(RawResult(kind="connection_error", message="no results_url: not ended"))
        hung = b.ends_at >= b.expires_at
        for n, c in enumerate(b.ids):
            if self.mode in ("cut", "crash") and n == self.cut_after:
                if self.mode == "crash":
                    raise Crash()
                raise BatchApiError(RawResult(kind="connection_error", message="peer closed connection"))
            kind = "expired" if hung else b.kinds[c]
            b.kinds[c] = kind
            yield [(c, classify(RESULTS[kind]))]


class BatchLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory(dir=SHM if SHM.is_dir() else None)
        self.loop = asyncio.new_event_loop()
        self.clock = FakeClock()  # what the shell reads: moved only by the test
        self.sends = 0
        self.listings = 0
        self.api = ModelApi(self)
        self.crashes = 0

    @property
    def now(self) -> float:
        return self.clock.now()

    @now.setter
    def now(self, when: float) -> None:
        self.clock.set(when)

    @invariant()
    def the_shell_never_sleeps(self) -> None:
        """Waiting is the interpreter's (`Wait`), not the shell's operations'."""
        assert [] == self.clock.sleeps

    @initialize(
        n=st.integers(1, 12),
        max_requests=st.integers(1, 5),
        max_attempts=st.integers(1, 3),
        concurrency=st.integers(1, 3),
    )
    def start(self, n: int, max_requests: int, max_attempts: int, concurrency: int) -> None:
        self.requests = make_requests(n)
        self.settings = BatchSettings(
            max_batch_requests=max_requests,
            max_attempts=max_attempts,
            concurrency=concurrency,
            create_attempts=3,
            harvest_attempts=2,
            poll=PollPolicy(interval=3_600.0, grace=600.0),
            write_group=2,
        )
        self.state = Path(self.tmp.name) / "state"
        self.store = Store.open(self.state)
        bind(self.store, self.requests)
        self._new_run()

    def _new_run(self) -> None:
        self.run = BatchRun.start(
            self.store.checkpoint(self.settings.breaker.k),
            requests=self.requests,
            settings=self.settings,
            now=self.now,
        )
        self.shell = BatchShell(
            self.store,
            TEMPLATE,
            self.api,
            self.clock,
            self.settings,
            lambda e: None,
            random.Random(0),  # type: ignore[arg-type]
        )
        self.ops: list[tuple[Create | Reconcile | Poll | Harvest, float]] = []  # with the time each started
        self.done: Done | None = None
        self.sleep: float | None = None
        self.steps = 0

    # -- the interpreter's moves -----------------------------------------------------------------

    @precondition(lambda self: self.done is None)
    @rule()
    def advance(self) -> None:
        """Ask the machine what to do now; perform the effects; put the operations in flight."""
        self.steps += 1
        self.run, actions = self.run.advance(self.now)
        self.sleep = None
        for action in actions:
            match action:
                case Record() | Release() | Begin() | Say():
                    self.shell.effect(action)
                case Create() | Reconcile() | Poll() | Harvest():
                    self.ops.append((action, self.now))
                case Wait(until):
                    self.sleep = until
                case Done():
                    assert not self.ops
                    self.done = action

    @precondition(lambda self: self.done is None and bool(self.ops))
    @rule(
        data=st.data(),
        mode=st.sampled_from(
            [
                "ok",
                "ok",
                "ok",
                "500",
                "drop",
                "persist_then_500",
                "persist_then_drop",
                "persist_then_crash",
                "413",
                "401",
                "cut",
                "crash",
            ]
        ),
        seed=st.integers(0, 50),
        duration=st.sampled_from([0.0, 30.0, 3_600.0, 86_400.0]),
        cut_after=st.integers(0, 4),
    )
    def answer(self, data: st.DataObject, mode: str, seed: int, duration: float, cut_after: int) -> None:
        """The API answers one operation in flight (any of them, in any order), as `mode` says."""
        op, self.started = self.ops.pop(data.draw(st.integers(0, len(self.ops) - 1)))
        self.api.mode, self.api.kind_seed, self.api.duration, self.api.cut_after = (
            mode,
            seed,
            duration,
            cut_after,
        )
        try:
            event = self.loop.run_until_complete(self.shell.perform(op))
        except Crash:
            self._crash()
            return
        finally:
            self.api.mode = "ok"
        self.run = self.run.on(event)

    @precondition(lambda self: self.done is None and self.sleep is not None and not self.ops)
    @rule()
    def sleep_until_due(self) -> None:
        assert self.sleep is not None
        self.now = max(self.now, self.sleep)

    @rule(seconds=st.sampled_from([1.0, 120.0, 3_600.0, 90_000.0]))
    def time_passes(self, seconds: float) -> None:
        self.now += seconds

    @rule()
    def crash(self) -> None:
        """kill -9 at this instant: a new machine from what the checkpoint holds."""
        self._crash()

    @precondition(lambda self: self.done is not None)
    @rule()
    def rerun(self) -> None:
        self._rerun_makes_progress()

    def _crash(self) -> None:
        self.crashes += 1
        self.store.close()
        self.store = Store.open(self.state)
        self._new_run()

    def _drain(self, bound: int = 5_000) -> Done:
        """Run the current machine to its end with a well-behaved API; a run ends in bounded steps (a
        day-long batch of each of 12 requests, polled hourly, over 3 rounds, takes about 1,000)."""
        for _ in range(bound):
            if self.done is not None:
                return self.done
            if self.ops:
                op, self.started = self.ops.pop(0)
                self.run = self.run.on(self.loop.run_until_complete(self.shell.perform(op)))
                self._check_all()
            elif self.sleep is not None:
                self.now = max(self.now, self.sleep)
                self.sleep = None
            else:
                self.advance()
        raise AssertionError(f"the run did not end in {bound} steps")

    def _check_all(self) -> None:
        self.nothing_is_paid_twice_nor_sent_while_another_batch_may_answer()
        self.no_custom_id_sits_in_two_live_batches()
        self.no_create_is_in_flight_while_listing()

    def _rerun_makes_progress(self) -> None:
        """After exit 3, a rerun sends something, records something, or ends: with exit 0, or with exit 4
        when what it learned is fatal (e.g. the breaker trips on the lines of a batch an earlier run left
        stuck: those lines are dropped, not recorded, and a loop that reruns until exit 0 stops on 4)."""
        assert self.done is not None
        before = (self.sends, self.store.counts())
        last = self.done.exit_status
        self._new_run()
        done = self._drain()
        if last == 3:
            progressed = self.sends > before[0] or self.store.counts() != before[1]
            assert progressed or done.exit_status in (0, 4), (before, self.store.counts())

    # -- invariants -------------------------------------------------------------------------------

    @invariant()
    def nothing_is_paid_twice_nor_sent_while_another_batch_may_answer(self) -> None:
        assert [] == self.api.violations

    @invariant()
    def no_create_is_in_flight_while_listing(self) -> None:
        """A reconciliation never runs beside a create (a sibling's batch is never taken for an orphan)."""
        phases = self.run.phases
        assert not (Phase.CREATING in phases and Phase.LISTING in phases)
        # and what the shell has in flight agrees with the phases: a create or a listing handed out and
        # not yet answered is a sub-batch creating or listing
        kinds = {type(o) for o, _ in self.ops}
        assert (Create in kinds) == (Phase.CREATING in phases)
        assert (Reconcile in kinds) == (Phase.LISTING in phases)

    @invariant()
    def a_sub_batch_is_settled_exactly_when_its_state_is_terminal(self) -> None:
        assert all((s.phase is Phase.SETTLED) == (s.state in TERMINAL) for s in self.run.subs.values())

    @invariant()
    def no_custom_id_sits_in_two_live_batches(self) -> None:
        live = [c for b in self.api.batches.values() if self.api._status(b) != "ended" for c in b.ids]
        assert len(live) == len(set(live))

    @invariant()
    def what_the_checkpoint_holds_as_final_stays_final(self) -> None:
        if not hasattr(self, "store"):
            return
        final = self.store.job_state().final
        assert getattr(self, "_final", frozenset()) <= final
        self._final = final

    def teardown(self) -> None:
        try:
            if hasattr(self, "store"):
                self.api.duration = 30.0
                for _ in range(4):  # rerun until exit 0 (or a fatal stop): a loop that ends
                    done = self._drain()
                    if done.exit_status != 3:
                        break
                    self._rerun_makes_progress()
                assert [] == self.api.violations
                self.store.close()
        finally:
            self.loop.close()
            self.tmp.cleanup()


TestBatchLife = BatchLife.TestCase
# each example runs the real store: the default profile keeps it to a few seconds; "thorough" goes long
_QUICK = settings().max_examples <= 60
TestBatchLife.settings = settings(
    settings(),
    max_examples=40 if _QUICK else settings().max_examples,
    stateful_step_count=30 if _QUICK else 60,
)


# -- the same life on OpenAI's shape of the port: an upload, then a create from it, each found by name --


@attrs.define
class ServerFile:
    body: bytes
    filename: str
    created_at: float


class OpenAIModelApi(ModelApi):
    """The model API with OpenAI's two steps: `upload` makes a file (named by the sub-batch), `create`
    a batch from it (named in its metadata); `find_upload` and `find_batch` find them by name, for
    sure. An operation's fault falls on its upload or on its create (by the seed's parity). It also
    checks that nothing is uploaded twice: never a file for a sub-batch that already has one."""

    def __init__(self, machine: BatchLife) -> None:
        super().__init__(machine)
        self.files: dict[str, ServerFile] = {}
        self.named: dict[str, BatchMeta] = {}  # batch id -> the name it was created with
        self.discarded: list[str] = []

    def _fault_on_upload(self) -> bool:
        return self.kind_seed % 2 == 0

    async def upload(self, body: CreateBody, meta: BatchMeta) -> Upload:
        mode = self.mode if self._fault_on_upload() else "ok"
        if mode == "413":
            raise _http(413, "request_too_large")
        if mode == "401":
            raise _http(401, "authentication_error")
        if mode in ("500", "drop"):
            raise (
                _http(500, "api_error")
                if mode == "500"
                else BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
            )
        if any(f.filename == meta.filename for f in self.files.values()):
            self.violations.append(f"{meta.filename} uploaded twice")
        file_id = f"file-{len(self.files) + 1:04d}"
        self.files[file_id] = ServerFile(bytes(body), meta.filename, self.m.started)
        match mode:
            case "persist_then_500":
                raise _http(500, "api_error")
            case "persist_then_drop":
                raise BatchApiError(RawResult(kind="connection_error", message="Server disconnected"))
            case "persist_then_crash":
                raise Crash()
        if self._fault_on_upload():
            self.mode = "ok"  # the fault was the upload's: the create goes through
        return Upload(file_id)

    async def find_upload(self, meta: BatchMeta, since: float | None = None) -> Upload | None:
        if self.mode == "500":
            raise _http(500, "api_error")
        for file_id, f in reversed(self.files.items()):
            if f.filename == meta.filename and (since is None or f.created_at >= since):
                return Upload(file_id)
        return None

    async def create(self, create, meta=None):  # type: ignore[no-untyped-def]
        assert isinstance(create, Upload) and create.file_id is not None and meta is not None
        snap = None
        try:
            snap = await super().create(self.files[create.file_id].body)
        finally:
            made = max(self.batches, default=None)
            if made is not None and made not in self.named:
                self.named[made] = meta
        return snap

    async def find_batch(self, meta: BatchMeta, since: float | None = None) -> Found:
        if self.mode == "500":
            raise _http(500, "api_error")
        self.m.listings += 1  # a reconciliation: what an unheard-of batch waits for
        for b in sorted(self.batches.values(), key=lambda b: (b.created_at, b.id), reverse=True):
            if self.named.get(b.id) == meta and (since is None or b.created_at >= since):
                return Found(self._snap(b), conclusive=True)
        return Found(None, conclusive=True)

    async def discard(self, batch_id: str) -> None:
        self.discarded.append(batch_id)


class OpenAIBatchLife(BatchLife):
    """`BatchLife` through OpenAI's shape of the port (upload, file id, create, found by name)."""

    def __init__(self) -> None:
        super().__init__()
        self.api = OpenAIModelApi(self)


TestOpenAIBatchLife = OpenAIBatchLife.TestCase
TestOpenAIBatchLife.settings = TestBatchLife.settings
