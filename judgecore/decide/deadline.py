"""A deadline: every item final by a given time, at the least cost the deadline allows.

Theory of operation. A batch costs half the sync route's price, but its latency is a distribution
with a 24-hour tail, and its `request_counts` say nothing until it ends. The sync route is full price
and bounded by the rate limit. So the run sends what it can on the batch route and keeps, at every
poll, the time the sync route would need for everything not yet final (`sync_seconds`):

    max(T / (headroom x OTPM) minutes,  ceil(N / C) x L,  N / RPM minutes)

for N requests expecting T tokens in all, at the tokens-per-minute limit OTPM (read or assumed: the
output tokens per minute of Anthropic, for which T counts output alone; OpenAI's TPM, for which T counts
input and output, as that limit does) paced at `headroom` of it, C requests in flight answering in L
seconds each, and the requests-per-minute limit RPM when known. To that it adds a margin (`DeadlinePolicy`: 25% of it plus
60 s, plus 120 s for canceled batches to end while any batch is live). The latest switch time is

    deadline - (sync_seconds + margin)

and a wait never reaches past it: at that moment (or any later poll) a live `in_progress` batch
answers `Switch`: cancel the live batches, harvest what they completed (never resent: canceled
requests are not billed), and send the rest on the sync route. The items of a batch that is
`canceling` are still in a live batch: they are sent only once it has ended and been harvested
(`Switch.after_cancel`); only items in no batch go at once (`Switch.send_now`). At the deadline itself
a live batch answers `End`: stop waiting, write what is not final as `pending`. An ended batch is
harvested whenever it is seen: its answers exist and are paid for; recording them is no wait.

The margin's share is a quarter, not a tenth: until the first answers the estimate rests on two priors
(an answer's output tokens, a call's latency), and `bench/deadline.py` shows the wider margin buys
on-time jobs for almost nothing (a switch a few minutes earlier seldom gives up a batch that would
have ended in those minutes).

Before any batch is created, `deadline_start` says whether a batch is worth sending at all: when the
latest switch time is less than `min_batch_window` away (a batch cannot plausibly end, and would only
be created to be canceled), the job is all sync from the start (`AllSync.short_by`: how far the sync
route is expected to fall short when even it cannot finish by the deadline).

Without a deadline nothing changes: `next_deadline_action(now, batch, policy, None)` is
`next_poll_action(now, batch, policy)`. So is it with a deadline so far off that the latest switch
time falls after the batch's own deadline (`expires_at + grace`).

Pure: `now` and the deadline are epoch seconds given in; nothing here reads a clock.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Literal

import attrs

from judgecore.decide.polling import (
    BatchSnapshot,
    Harvest,
    Overdue,
    PollAction,
    PollIn,
    PollPolicy,
    next_poll_action,
)
from judgecore.decide.prices import BATCH_DISCOUNT

OtpmSource = Literal["read", "flag", "assumed"]


@attrs.frozen(kw_only=True)
class Pile:
    """Some requests not final yet, and the tokens they are expected to take in all against the sync
    route's token limit (`output_tokens`): their output for an OTPM (Anthropic's), their input and
    output for a TPM (OpenAI's, which counts both). The shell says what a request takes (`of`)."""

    requests: int = 0
    output_tokens: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.requests < 0 or not (math.isfinite(self.output_tokens) and self.output_tokens >= 0):
            raise ValueError(f"a pile needs requests >= 0 and output tokens >= 0, got {self}")

    @classmethod
    def of(cls, requests: int, tokens_each: float) -> Pile:
        """`requests` requests expecting `tokens_each` tokens each (as the limit counts them)."""
        return cls(requests=requests, output_tokens=requests * tokens_each)

    def __add__(self, other: Pile) -> Pile:
        return Pile(
            requests=self.requests + other.requests, output_tokens=self.output_tokens + other.output_tokens
        )


NONE = Pile()


@attrs.frozen(kw_only=True)
class Unfinished:
    """What is not final: in live batches (`in_progress` or `canceling`), on no route yet, and in
    flight on the sync route. `sync_usd_each`: the estimated cost of one request at the sync price
    (None: no price known; the extra cost of a switch is then not told)."""

    in_batches: Pile = NONE
    unsent: Pile = NONE
    in_flight: Pile = NONE
    sync_usd_each: float | None = None

    @property
    def total(self) -> Pile:
        return self.in_batches + self.unsent + self.in_flight

    @property
    def movable(self) -> int:
        """Requests a switch moves to the sync route: those in live batches and those on no route
        (what is in flight on the sync route is there already)."""
        return self.in_batches.requests + self.unsent.requests

    def extra_usd(self) -> float | None:
        """The most a switch adds to the cost: every movable request at the sync price instead of the
        batch price (less when the canceled batches had completed some)."""
        if self.sync_usd_each is None:
            return None
        return self.movable * self.sync_usd_each * (1.0 - BATCH_DISCOUNT)


@attrs.frozen(kw_only=True)
class SyncPace:
    """What the sync route can do: the token limit per minute (`otpm`) and where it came from, the RPM
    limit if known, the requests in flight (concurrency), a typical answer's latency (seconds), and the
    pacing headroom (`judgecore.decide.ratelimit.PacingPolicy.headroom`: the pacer aims at that share of
    each limit). `limit_name`: what the token limit is, in words (`OTPM`, or OpenAI's `TPM`)."""

    otpm: int
    otpm_source: OtpmSource = "assumed"
    rpm: int | None = None
    concurrency: int = 16
    latency: float = 10.0
    headroom: float = 0.95
    limit_name: str = "OTPM"

    def __attrs_post_init__(self) -> None:
        if self.otpm < 1 or self.concurrency < 1 or (self.rpm is not None and self.rpm < 1):
            raise ValueError(f"OTPM, RPM and concurrency must be >= 1, got {self}")
        if not (math.isfinite(self.latency) and self.latency >= 0) or not 0 < self.headroom <= 1:
            raise ValueError(f"latency must be >= 0 and headroom in (0, 1], got {self}")

    def seconds(self, pile: Pile) -> float:
        """Seconds the sync route needs for `pile` (no margin): the slowest of its three bounds."""
        if pile.requests == 0:
            return 0.0
        by_tokens = pile.output_tokens / (self.headroom * self.otpm) * 60.0
        by_slots = math.ceil(pile.requests / self.concurrency) * self.latency
        by_rpm = pile.requests / (self.headroom * self.rpm) * 60.0 if self.rpm else 0.0
        return max(by_tokens, by_slots, by_rpm)


@attrs.frozen(kw_only=True)
class DeadlinePolicy:
    """The margin added to the sync route's time: `share` of it plus `fixed` seconds, plus `cancel`
    seconds for canceled batches to end whenever a batch is live; and the shortest window before the
    latest switch time for which a batch is worth creating (`min_batch_window`)."""

    share: float = 0.25
    fixed: float = 60.0
    cancel: float = 120.0
    min_batch_window: float = 300.0

    def __attrs_post_init__(self) -> None:
        for name in ("share", "fixed", "cancel", "min_batch_window"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, got {value}")

    def needed(self, sync_seconds: float, *, batches_live: bool) -> float:
        """The sync route's time with the margin."""
        return sync_seconds * (1.0 + self.share) + self.fixed + (self.cancel if batches_live else 0.0)


@attrs.frozen(kw_only=True)
class Watch:
    """A run's deadline (epoch seconds) and what it is measured against, at one poll."""

    deadline: float
    unfinished: Unfinished
    pace: SyncPace
    policy: DeadlinePolicy = DeadlinePolicy()

    @property
    def sync_seconds(self) -> float:
        """What the sync route needs for everything not final, without the margin."""
        return self.pace.seconds(self.unfinished.total)

    @property
    def needed(self) -> float:
        """What the sync route needs for everything not final, with the margin."""
        live = self.unfinished.in_batches.requests > 0
        return self.policy.needed(self.sync_seconds, batches_live=live)

    @property
    def latest_switch(self) -> float:
        """The last moment the sync route could still finish everything not final by the deadline."""
        return self.deadline - self.needed

    def batched(self) -> Watch:
        """The same watch with what is on no route counted as sent in batches (the plan of a job
        whose batches are about to be created)."""
        u = self.unfinished
        return attrs.evolve(self, unfinished=attrs.evolve(u, in_batches=u.in_batches + u.unsent, unsent=NONE))

    def needs(self) -> str:
        """What the sync route needs by when, and from which figures, in words."""
        total = self.unfinished.total
        rpm = f", RPM {self.pace.rpm:,}" if self.pace.rpm else ""
        return (
            f"deadline {clock_time(self.deadline)}: the sync route needs about "
            f"{_duration(self.sync_seconds)} (+ margin {_duration(self.needed - self.sync_seconds)}) for "
            f"{total.requests:,} requests not final at {self.pace.limit_name} {self.pace.otpm:,} "
            f"({self.pace.otpm_source}){rpm}"
            f", concurrency {self.pace.concurrency:,}"
        )

    def reason(self, now: float) -> str:
        """Why a switch happens now, in one line."""
        late = "" if now <= self.latest_switch else f" ({_duration(now - self.latest_switch)} late)"
        return f"{self.needs()}; the latest switch time is {clock_time(self.latest_switch)}{late}"


@attrs.frozen(kw_only=True)
class Switch:
    """Cancel every live batch, harvest what they completed, and send the rest on the sync route:
    `send_now` requests on no route go at once; the `after_cancel` requests of the live batches go once
    their batch has ended and been harvested (never while it is live, `canceling` included).
    `extra_usd`: the most the switch adds to the cost (None: no price known)."""

    at: float
    latest_switch: float
    send_now: int
    after_cancel: int
    reason: str
    extra_usd: float | None


@attrs.frozen(kw_only=True)
class End:
    """The deadline has come: stop waiting; what is not final is `pending` (exit 3). Answers already
    in flight on the sync route are recorded as they arrive."""

    deadline: float
    reason: str


@attrs.frozen(kw_only=True)
class UseBatches:
    """Send on the batch route; switch no later than `latest_switch`."""

    latest_switch: float


@attrs.frozen(kw_only=True)
class AllSync:
    """The deadline is too close for any batch: everything goes on the sync route from the start.
    `short_by`: seconds the sync route is expected to lack, with its margin, to finish everything by
    the deadline (0: it can; above 0: some items will still be pending at the deadline)."""

    reason: str
    extra_usd: float | None
    short_by: float = 0.0


DeadlineAction = PollAction | Switch | End
StartAction = UseBatches | AllSync | End


def deadline_start(now: float, watch: Watch) -> StartAction:
    """Before any batch of the job is created: batches, all sync, or (a deadline come) the end.

    A batch is worth creating only when the latest switch time is at least `min_batch_window` away
    (counted as if the batch were live: its cancel allowance included)."""
    if now >= watch.deadline:
        return End(deadline=watch.deadline, reason=_ended(watch.deadline))
    as_batched = watch.batched()
    window = as_batched.latest_switch - now
    if window >= watch.policy.min_batch_window:
        return UseBatches(latest_switch=as_batched.latest_switch)
    why = (
        f"it leaves {_duration(max(0.0, window))} before the latest switch time"
        if window > 0
        else "the sync route needs all the time left"
    )
    short_by = max(0.0, now + watch.needed - watch.deadline)
    short = (
        f"; even so the sync route is {_duration(short_by)} short: some items will be pending at the deadline"
        if short_by > 0
        else ""
    )
    return AllSync(
        reason=f"{as_batched.needs()}: too close for any batch ({why}); everything goes sync{short}",
        extra_usd=watch.unfinished.extra_usd(),
        short_by=short_by,
    )


def next_deadline_action(
    now: float, batch: BatchSnapshot, policy: PollPolicy, watch: Watch | None = None
) -> DeadlineAction:
    """`next_poll_action` grown a deadline (see the module docstring). Without one (`watch` None), it
    is `next_poll_action(now, batch, policy)`. With one, by priority: an ended batch is harvested; at
    or past the deadline a live batch is the `End`; at or past the latest switch time an `in_progress`
    batch is the `Switch`; otherwise today's answer, its wait cut at the latest switch time (an
    `in_progress` batch) or at the deadline (a `canceling` one: its cancel is under way already)."""
    today = next_poll_action(now, batch, policy)
    if watch is None or isinstance(today, Harvest):
        return today
    if now >= watch.deadline:
        return End(deadline=watch.deadline, reason=_ended(watch.deadline))
    until = watch.deadline
    if batch.status == "in_progress":
        latest = watch.latest_switch
        if now >= latest:
            return Switch(
                at=now,
                latest_switch=latest,
                send_now=watch.unfinished.unsent.requests,
                after_cancel=watch.unfinished.in_batches.requests,
                reason=watch.reason(now),
                extra_usd=watch.unfinished.extra_usd(),
            )
        until = latest
    if isinstance(today, Overdue):
        return today
    assert isinstance(today, PollIn)
    return _wait_until(now, today.seconds, until)


def _wait_until(now: float, seconds: float, until: float) -> PollIn:
    """`PollIn(seconds)`, cut so that it never reaches past `until` (> now): never overshoot by an ulp."""
    if now + seconds <= until:
        return PollIn(seconds)
    seconds = until - now
    while now + seconds > until:
        seconds = math.nextafter(seconds, 0.0)
    return PollIn(seconds)


@attrs.frozen(kw_only=True)
class DeadlineFigures:
    """What `--dry-run` shows of a deadline: the latest switch time (epoch seconds; None once all sync
    from the start), the sync route's time for everything with its margin, the all-batch cost, and the
    most the deadline can add to it (everything at the sync price)."""

    deadline: float
    latest_switch: float | None
    sync_seconds: float
    needed_seconds: float
    all_sync_from_start: bool
    all_batch_usd: float | None
    most_added_usd: float | None


def deadline_figures(
    now: float, watch: Watch, *, all_batch_usd: float | None, all_sync_usd: float | None
) -> DeadlineFigures:
    """The dry run's figures of a job about to be sent (`watch.unfinished` is what is left to send).
    The costs come from the plan (`judgecore.decide.planning.plan`: its estimate on the batch route, and its
    all-sync figure), which holds the price model (cache writes and reads, the batch discount)."""
    start = deadline_start(now, watch)
    batched = watch.batched()
    added = None
    if all_batch_usd is not None and all_sync_usd is not None:
        added = max(0.0, all_sync_usd - all_batch_usd)
    return DeadlineFigures(
        deadline=watch.deadline,
        latest_switch=start.latest_switch if isinstance(start, UseBatches) else None,
        sync_seconds=batched.sync_seconds,
        needed_seconds=batched.needed,
        all_sync_from_start=isinstance(start, AllSync),
        all_batch_usd=all_batch_usd,
        most_added_usd=added,
    )


def clock_time(epoch: float) -> str:
    """An instant as `2026-12-03 17:00:00 UTC` (whole seconds)."""
    try:
        return datetime.fromtimestamp(math.floor(epoch), tz=UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    except (OverflowError, ValueError, OSError):  # beyond the calendar (a sync route needing years)
        return f"epoch {epoch:.0f}" if math.isfinite(epoch) else "never"


def _duration(seconds: float) -> str:
    s = max(0, round(seconds))
    if s < 120:
        return f"{s} s"
    if s < 7200:
        return f"{round(s / 60)} min"
    return f"{s / 3600:.1f} h"


def _ended(deadline: float) -> str:
    return f"deadline {clock_time(deadline)} reached: what is not final stays pending; rerun to resume"
