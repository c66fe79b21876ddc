"""Polling: how long to wait for a batch, and when to stop waiting.

Theory of operation. A batch's `request_counts` stay at `processing=N` until the whole batch ends, so
they say nothing about a stall; the only bound on a wait is the batch's own clock. Every live batch has
a deadline, `expires_at + grace`: the API promises to end a batch by `expires_at`, and `grace` covers
the lag before it reports so. Until then the batch is polled again later (`PollIn`: never past the deadline, never longer than
the poll interval); after it, the batch is `Overdue`: the shell fetches it once more and harvests
whatever exists. A run therefore always ends.
"""

from __future__ import annotations

import math
from typing import Literal

import attrs

BatchStatus = Literal["in_progress", "canceling", "ended"]


@attrs.frozen(kw_only=True)
class RequestCounts:
    """A batch's tally; meaningful only once the batch has ended."""

    processing: int = 0
    succeeded: int = 0
    errored: int = 0
    canceled: int = 0
    expired: int = 0

    @property
    def total(self) -> int:
        return self.processing + self.succeeded + self.errored + self.canceled + self.expired


@attrs.frozen(kw_only=True)
class BatchSnapshot:
    """What the API said about one batch at one moment; times are epoch seconds."""

    id: str
    status: BatchStatus
    created_at: float
    expires_at: float
    counts: RequestCounts = RequestCounts()
    ended_at: float | None = None
    #: why the batch was refused after its create (OpenAI's `failed`: validation, e.g.
    #: `token_limit_exceeded`): none of it ran or was billed. None for every batch that ran.
    refused: str | None = None

    @property
    def live(self) -> bool:
        """In progress or canceling: results are not there yet."""
        return self.status != "ended"


@attrs.frozen(kw_only=True)
class PollPolicy:
    """Poll every `interval` seconds; give a batch `grace` seconds past its `expires_at`."""

    interval: float = 60.0
    grace: float = 1800.0

    def __attrs_post_init__(self) -> None:
        if not self.interval > 0:
            raise ValueError(f"poll interval must be > 0, got {self.interval}")
        if not self.grace >= 0:
            raise ValueError(f"grace must be >= 0, got {self.grace}")

    def deadline(self, batch: BatchSnapshot) -> float:
        return batch.expires_at + self.grace


@attrs.frozen
class PollIn:
    """Retrieve the batch again in this many seconds (the batch machine makes the time it is due of
    it; what the machine hands the shell is `judgecore.run.vocab.Wait`)."""

    seconds: float


@attrs.frozen
class Harvest:
    """The batch has ended: stream its results."""

    batch_id: str


@attrs.frozen
class Overdue:
    """The deadline has passed: retrieve once more, harvest what exists, record the rest as stuck."""

    batch_id: str
    deadline: float


PollAction = PollIn | Harvest | Overdue


def next_poll_action(now: float, batch: BatchSnapshot, policy: PollPolicy) -> PollAction:
    """What to do about `batch` at time `now`: `Harvest` once ended; `Overdue` from its deadline on;
    otherwise a `PollIn` of more than 0 and at most `interval` seconds that never reaches past it."""
    if batch.status == "ended":
        return Harvest(batch.id)
    deadline = policy.deadline(batch)
    if now >= deadline:  # at the deadline itself the wait is over: a PollIn(0) would only spin
        return Overdue(batch.id, deadline)
    seconds = min(policy.interval, deadline - now)
    while now + seconds > deadline:  # `deadline - now` can round up by an ulp: never overshoot
        seconds = math.nextafter(seconds, 0.0)
    return PollIn(seconds)
