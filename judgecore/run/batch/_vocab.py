"""The batch run's vocabulary: its settings, the view of the checkpoint it starts from, the actions it
hands the shell and the events the shell answers with (in the manner of h11's `_events.py`)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.breaker import Breaker, BreakerPolicy
from judgecore.decide.polling import BatchSnapshot, PollPolicy
from judgecore.results.outcomes import Outcome, RawResult, Usage
from judgecore.run.batch.batching import Intent, OrphanWindow, could_fit
from judgecore.run.batch.gate import Held
from judgecore.run.subbatch import SubEvent, SubState
from judgecore.run.vocab import Done, Say, Wait
from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS
from judgecore.wire.requests import Request


@attrs.frozen(kw_only=True)
class BatchSettings:
    """Knobs of the batch run; the defaults are the CLI's."""

    max_batch_requests: int = MAX_REQUESTS
    max_batch_bytes: int = MAX_BYTES
    poll: PollPolicy = attrs.field(factory=PollPolicy)
    backoff: BackoffPolicy = attrs.field(factory=BackoffPolicy)
    #: rounds per run: each id is offered at most this many times per run
    max_attempts: int = 3
    #: creates in flight at once
    concurrency: int = 8
    breaker: BreakerPolicy = attrs.field(factory=BreakerPolicy)
    #: create calls (and reconciliations) per sub-batch before its ids are left pending for a rerun
    create_attempts: int = 5
    #: result streams per ended batch before it is left `ended` (a rerun resumes the harvest)
    harvest_attempts: int = 4
    #: which listed batch can be an intent's (see `judgecore.run.batch.batching.OrphanWindow`)
    orphan_window: OrphanWindow = attrs.field(factory=OrphanWindow)
    #: the run's deadline (epoch seconds; None: none): no wait runs past it, and at it the live
    #: batches are left (their ids pending, exit 3; a rerun resumes them)
    deadline: float | None = None
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


# -- actions: effects (performed at once, in order) and operations (each ends in one event) ----------


@attrs.frozen
class Record:
    """Make the sub-batch's move durable (`batch` with CREATED/ADOPTED: its id and times)."""

    sub_id: int
    event: SubEvent
    state: SubState
    note: str | None = None
    batch: BatchSnapshot | None = None
    n: int = 0
    group: int | None = None


@attrs.frozen
class Release:
    """Record these lines now (held quarantines the breaker let through; a request no batch can hold)."""

    held: tuple[Held, ...]


@attrs.frozen
class Begin:
    """Round `number` starts: `n` requests in `sub_batches` sub-batches."""

    number: int
    n: int
    sub_batches: int


@attrs.frozen
class Create:
    """Write the intent stamped `at` (re-stamp it when `written`: a resend after a reconciliation proved
    no batch was made), then POST the sub-batch's create once."""

    sub_id: int
    round: int
    requests: Sequence[Request]
    at: float
    written: bool = False


@attrs.frozen
class Reconcile:
    """List recent batches, newest first, down to `oldest` (at most `limit`), to adopt these intents.

    The listing is the workspace's: a listed batch `worth_checking` (ended, and of an intent's size and
    window) has the first custom_id of its results read, so that one of another job is never adopted
    (`Listed.first_ids`)."""

    intents: tuple[Intent, ...]
    oldest: float
    limit: int
    window: OrphanWindow = attrs.field(factory=OrphanWindow)

    def worth_checking(self, batch: BatchSnapshot) -> bool:
        return not batch.live and any(could_fit(i, batch, self.window) for i in self.intents)


@attrs.frozen
class Poll:
    sub_id: int
    batch_id: str


@attrs.frozen
class Harvest:
    """Stream the results of `batch_id` into the checkpoint, each line through `breaker` (`held`: lines
    it holds so far). `group`: the sub-batches whose ids the batch may answer for (itself alone when
    empty). `settle`: the sub-batches whose missing lines become retriable once the stream is whole."""

    sub_id: int
    batch_id: str
    group: tuple[int, ...]
    settle: tuple[int, ...]
    breaker: Breaker
    held: tuple[Held, ...]


Effect = Record | Release | Begin | Say
Operation = Create | Reconcile | Poll | Harvest
Action = Effect | Operation | Wait | Done


# -- events -------------------------------------------------------------------------------------------


@attrs.frozen
class Created:
    sub_id: int
    batch: BatchSnapshot
    at: float


@attrs.frozen
class CreateFailed:
    sub_id: int
    error: RawResult
    at: float
    u: float  # the jitter draw in [0, 1)


@attrs.frozen
class Listed:
    batches: tuple[BatchSnapshot, ...]
    conclusive: bool  # reached `oldest` or the end of the list
    at: float
    #: `(batch_id, custom_id)`: the first result line's custom_id of each batch `worth_checking`
    first_ids: tuple[tuple[str, str], ...] = ()
    #: `(sub_id, batch)`: batches the provider found by the name the sub-batch gave them (adopted as
    #: they are, whatever the listing holds)
    named: tuple[tuple[int, BatchSnapshot], ...] = ()
    #: sub-batches whose upload the provider holds (its file id now recorded) and whose batch it
    #: proved absent: created from that upload (`Create`, nothing uploaded again), within the
    #: sub-batch's create attempts, each failure a `CreateFailed` like any create's
    uploaded: tuple[int, ...] = ()


@attrs.frozen
class ListFailed:
    error: RawResult
    at: float
    u: float


@attrs.frozen
class Snapshot:
    sub_id: int
    batch: BatchSnapshot
    at: float


@attrs.frozen
class PollFailed:
    sub_id: int
    error: RawResult
    at: float


@attrs.frozen
class Harvested:
    """A harvest's result. `error`: the stream was cut (None when whole). `open`: the ids it recorded as
    not final (retriable, fatal, or with no line at all); every other id of the settled sub-batches was
    recorded final, or is held. `fatal`: a line that stops the run (recorded as it came)."""

    sub_id: int
    at: float
    u: float
    breaker: Breaker
    held: tuple[Held, ...]
    open: frozenset[str] = frozenset()
    error: RawResult | None = None
    fatal: Outcome | None = None
    fatal_where: str = ""
    usage: Usage = attrs.field(factory=Usage)  # the sum of its answers' usage (what the batch cost)
    answers: int = 0  # how many answers `usage` sums (the lines that carried a usage)


Event = Created | CreateFailed | Listed | ListFailed | Snapshot | PollFailed | Harvested
