"""Progress events: what the batch and sync paths report as they go, as plain values.

The paths call an `Emit` callback with these; the terminal view (rich on a TTY, one log line per event
elsewhere) and tests subscribe. An event never carries a credential.
"""

from __future__ import annotations

from collections.abc import Callable

from judgecore.values import frozen


@frozen(kw_only=True)
class RoundStarted:
    """A batch round begins: `n` requests in `sub_batches` sub-batches (round 1 is the first send)."""

    round: int
    n: int
    sub_batches: int


@frozen(kw_only=True)
class BatchCreated:
    sub_id: int
    batch_id: str
    n: int
    expires_at: float
    adopted: bool = False  # an orphan found by listing, not a new create
    created_at: float | None = None  # the batch's own created_at (epoch seconds)
    now: float | None = None  # the run's clock when the create returned


@frozen(kw_only=True)
class BatchPolled:
    sub_id: int
    batch_id: str
    status: str
    n: int
    deadline: float
    now: float
    created_at: float | None = None  # the batch's own created_at, for its age
    ended_at: float | None = None  # the batch's own ended_at: how long it ran, whenever it is polled


@frozen(kw_only=True)
class BatchHarvested:
    sub_id: int
    batch_id: str
    counts: dict[str, int]  # outcome status -> count, for this harvest


@frozen(kw_only=True)
class BatchStuck:
    sub_id: int
    batch_id: str
    n: int
    deadline: float


@frozen(kw_only=True)
class SyncProgress:
    """Sync path tally so far; `total` is the number of items this run sends (and the probe answered).

    `done` counts this run's items that ended (final, or pending once their sends are spent), of
    which `succeeded` succeeded and `pending` stay pending (the routing probe's answer of this run
    among them: `probed` is 1 then, and the rate leaves it out); `earlier` counts the job's items an
    earlier run made final. `succeeded` and
    `pending` are None from an emitter that does not break `done` down.
    """

    done: int
    total: int
    retries: int
    rate_limited: int
    in_flight: int
    concurrency: int
    output_tokens: int
    elapsed: float
    succeeded: int | None = None
    pending: int | None = None
    earlier: int = 0
    probed: int = 0


@frozen(kw_only=True)
class Notice:
    """A one-line warning or note for stderr (names the id or batch it is about)."""

    level: str  # "warning" | "info"
    message: str


Event = RoundStarted | BatchCreated | BatchPolled | BatchHarvested | BatchStuck | SyncProgress | Notice
Emit = Callable[[Event], None]


def discard(_: Event) -> None:
    """An `Emit` that drops every event."""
