"""The sync run's vocabulary: its policy, what it keeps per item (a todo, its tries, a request in
flight, a retry waiting), the rows it records, and the actions it hands the shell and the event the
shell answers with (in the manner of h11's `_events.py`); `Wait`, `Say` and `Done` are every
machine's (`judgecore.run.vocab`)."""

from __future__ import annotations

from typing import Final

import attrs

from judgecore.decide.backoff import BackoffPolicy
from judgecore.decide.ratelimit import Cost, PacingPolicy, RateLimitReading
from judgecore.results.outcomes import Outcome
from judgecore.run.vocab import Done, ExitStatus, Say, Wait

#: The shortest wait the machine asks for: epoch floats near 1.8e9 resolve about 0.2 microseconds,
#: so a shorter wait could spin without time moving.
MIN_WAIT: Final = 0.001

#: A retry wait this long (seconds) or longer is worth a note.
NOTE_WAIT: Final = 30.0


def _at_least_one(_inst: object, attribute: attrs.Attribute, value: int) -> None:
    if value < 1:
        raise ValueError(f"{attribute.name} must be >= 1, got {value}")


@attrs.frozen(kw_only=True)
class SyncPolicy:
    """The rules of one sync run."""

    #: Sends per item per run that may end in a non-429 failure before it is left pending.
    max_attempts: int = attrs.field(default=3, validator=_at_least_one)
    #: 429s per item per run before it is left pending (on top of `max_attempts`).
    max_rate_limited: int = attrs.field(default=10, validator=_at_least_one)
    backoff: BackoffPolicy = attrs.field(factory=BackoffPolicy)
    pacing: PacingPolicy = attrs.field(factory=PacingPolicy)
    #: Requests in flight at most (the ceiling of the AIMD `Concurrency`).
    concurrency: int = attrs.field(default=16, validator=_at_least_one)
    #: Find the concurrency a server without rate limits can hold (a served model): start at
    #: `concurrency` and follow `judgecore.decide.concurrency` (back off on 429/503 and rising latency,
    #: grow while throughput grows), never above `adaptive_maximum`. False: the AIMD `Concurrency`.
    adaptive: bool = False
    adaptive_maximum: int = attrs.field(default=512, validator=_at_least_one)
    #: Send the first item alone and resolve it before any other leaves (the prompt-cache warm-up).
    warm_up: bool = True
    #: The run's deadline (epoch seconds; None: none): no wait reaches past it, and from it nothing
    #: more is sent; the answers in flight are recorded as they come, the rest is left pending.
    deadline: float | None = None


@attrs.frozen(kw_only=True)
class Todo:
    """An item to send: its custom_id, its `max_tokens` (for the pacer) and the upper bound of its
    cost in US dollars (for the budget; 0 without one)."""

    custom_id: str
    max_tokens: int
    bound: float = 0.0
    #: The item's own id, for messages (the custom_id when empty).
    item_id: str = ""

    @property
    def name(self) -> str:
        return self.item_id or self.custom_id


@attrs.frozen(kw_only=True)
class Tries:
    """What this run has spent on one item: sends that came back, non-429 failures, 429s."""

    sends: int = 0
    failures: int = 0
    rate_limited: int = 0


@attrs.frozen(kw_only=True)
class Flight:
    """A request in flight: its item, its tries before this send, and what was reserved for it."""

    todo: Todo
    seq: int
    tries: Tries
    cost: Cost
    #: when it was sent (its answer's latency, for the adaptive concurrency)
    sent: float = 0.0


@attrs.frozen(kw_only=True, order=True)
class _Retry:
    due: float
    seq: int
    todo: Todo = attrs.field(order=False)
    tries: Tries = attrs.field(order=False)
    #: a refusal's retry that keeps its place in flight while it waits (adaptive concurrency: the
    #: slot a full server refused is not handed to a fresh request, which it would refuse too)
    holds: bool = attrs.field(default=False, order=False)


@attrs.frozen(kw_only=True)
class Row:
    """One outcome to record durably: final, or the last retriable one of an item left pending.
    `attempts` is this run's sends of the item that came back."""

    custom_id: str
    outcome: Outcome
    attempts: int


@attrs.frozen(kw_only=True)
class Tally:
    """Counts of this run so far, for progress and the run's result."""

    sends: int = 0
    retries: int = 0
    rate_limited: int = 0
    succeeded: int = 0
    miss: int = 0
    quarantined: int = 0
    left_pending: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0

    @property
    def finals(self) -> int:
        return self.succeeded + self.miss + self.quarantined


# --- actions -------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Launch:
    """Send this item now; `cost` (pacing) and `bound` (budget) are reserved for it."""

    todo: Todo
    cost: Cost
    retry: bool


@attrs.frozen(kw_only=True)
class Record:
    """Write these rows durably, in this order, before anything else."""

    rows: tuple[Row, ...]


Effect = Record | Say
Action = Effect | Launch | Wait | Done


@attrs.frozen(kw_only=True)
class Answered:
    """An answer came back for `custom_id` at `now`; `u` is a uniform draw in [0, 1) for jitter."""

    custom_id: str
    outcome: Outcome
    reading: RateLimitReading
    now: float
    u: float = 0.0


def exit_status(stop: str | None, pending: int) -> int:
    """The exit status a run's items give: 4 stopped, 3 some pending, 0 all final."""
    if stop is not None:
        return ExitStatus.FATAL
    return ExitStatus.PENDING if pending else ExitStatus.OK
