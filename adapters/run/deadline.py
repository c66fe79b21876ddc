"""A run's deadline, as the shell measures it: the `Watch` of `judgecore.decide.deadline` built from
the settings and the checkpoint, and the start's decision (batches, or this run all sync)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from judgecore.decide.deadline import (
    AllSync,
    Pile,
    SyncPace,
    Unfinished,
    Watch,
    clock_time,
    deadline_figures,
    deadline_start,
)
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.job.when import When

if TYPE_CHECKING:
    from adapters.run.settings import JobSettings
    from judgecore.decide.planning import Plan


def sync_pace(
    settings: JobSettings, *, otpm_read: int | None, reading: RateLimitReading | None = None
) -> SyncPace:
    """The sync route's pace as a run will have it: the OTPM (`--otpm`, else the tier read, else the
    one assumed), the RPM when read, and the concurrency it runs at (`--concurrency`, else the tier's:
    `concurrency_for` the stored reading, else for the OTPM alone, as the sync part does)."""
    from judgecore.decide.ratelimit import concurrency_for

    read = otpm_read if otpm_read is not None else (reading.otpm if reading is not None else None)
    if settings.otpm is not None:
        otpm, source = settings.otpm, "flag"
    elif read:
        otpm, source = int(read), "read"
    else:
        otpm, source = settings.route_policy.assumed_otpm, "assumed"
    if reading is None:
        reading = RateLimitReading.for_otpm(otpm)
    rpm = reading.requests.limit
    return SyncPace(
        otpm=otpm,
        otpm_source=source,  # type: ignore[arg-type]
        rpm=int(rpm) if rpm else None,
        concurrency=settings.concurrency or concurrency_for(reading),
    )


def watch_of(settings: JobSettings, *, left: int, otpm_read: int | None) -> Watch | None:
    """The watch of a run with `left` requests not final (None: no deadline). Each is expected to
    take `max_tokens` output tokens (the most it can: the sync route's time is not underestimated);
    the pace is `sync_pace`'s."""
    if settings.deadline is None or settings.deadline.at is None:
        return None
    return Watch(
        deadline=settings.deadline.at,
        unfinished=Unfinished(unsent=Pile.of(left, float(settings.max_tokens))),
        pace=sync_pace(settings, otpm_read=otpm_read),
    )


def all_sync_reason(now: float, settings: JobSettings, *, left: int, otpm_read: int | None) -> str | None:
    """Why this run goes all sync (a deadline too close for any batch), or None: it may use batches.
    A forced route is the user's: a deadline does not override it."""
    watch = watch_of(settings, left=left, otpm_read=otpm_read)
    if watch is None or settings.force is not None or left == 0:
        return None
    start = deadline_start(now, watch)
    return start.reason if isinstance(start, AllSync) else None


def dry_run_deadline(now: float, settings: JobSettings, plan: Plan) -> dict[str, Any] | None:
    """What `--dry-run` shows of a deadline (None: none given): the latest switch time, the sync
    route's time with its margin, the all-batch cost and the most the deadline can add to it."""
    if settings.deadline is None:
        return None
    at = settings.deadline.resolve(now)
    resolved = attrs.evolve(settings, deadline=When(at=at))
    watch = watch_of(resolved, left=plan.to_send, otpm_read=None)
    assert watch is not None
    batch = plan.route.path == "batch"
    fig = deadline_figures(
        now,
        watch,
        all_batch_usd=plan.estimated_cost_usd if batch else None,
        all_sync_usd=plan.all_sync_cost_usd,
    )
    return {
        "deadline": fig.deadline,
        "latest_switch": fig.latest_switch,
        "sync_seconds": fig.sync_seconds,
        "needed_seconds": fig.needed_seconds,
        "all_sync_from_start": fig.all_sync_from_start or not batch,
        "all_batch_usd": fig.all_batch_usd,
        "most_added_usd": fig.most_added_usd,
    }


def render_deadline(d: Mapping[str, Any]) -> str:
    """The dry run's deadline lines (text)."""
    line = f"  deadline     {clock_time(d['deadline'])}"
    if d["latest_switch"] is None or d["all_sync_from_start"]:
        return f"{line}: this run goes on the sync route (too close for any batch, or not a batch job)\n"
    usd = "unknown" if d["all_batch_usd"] is None else f"${d['all_batch_usd']:,.2f}"
    most = "unknown" if d["most_added_usd"] is None else f"${d['most_added_usd']:,.2f}"
    return (
        f"{line}: switch to the sync route at {clock_time(d['latest_switch'])} at the latest "
        f"(it needs about {d['needed_seconds'] / 60:,.1f} min for everything, margin included)\n"
        f"               all-batch {usd}; the deadline adds at most {most} (everything on the sync route)\n"
    )
