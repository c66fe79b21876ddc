"""A run's deadline, as the shell measures it: the `Watch` of `judgecore.decide.deadline` built from
the settings and the checkpoint, and the start's decision (batches, or this run all sync)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecore.decide.deadline import AllSync, Pile, SyncPace, Unfinished, Watch, deadline_start

if TYPE_CHECKING:
    from adapters.run.settings import JobSettings


def watch_of(settings: JobSettings, *, left: int, otpm_read: int | None) -> Watch | None:
    """The watch of a run with `left` requests not final (None: no deadline). Each is expected to
    take `max_tokens` output tokens (the most it can: the sync route's time is not underestimated);
    the OTPM is `--otpm`, else the tier read, else the one assumed."""
    if settings.deadline is None or settings.deadline.at is None:
        return None
    if settings.otpm is not None:
        otpm, source = settings.otpm, "flag"
    elif otpm_read is not None:
        otpm, source = otpm_read, "read"
    else:
        otpm, source = settings.route_policy.assumed_otpm, "assumed"
    pace = SyncPace(otpm=otpm, otpm_source=source, concurrency=settings.concurrency or 16)  # type: ignore[arg-type]
    return Watch(
        deadline=settings.deadline.at,
        unfinished=Unfinished(unsent=Pile.of(left, float(settings.max_tokens))),
        pace=pace,
    )


def all_sync_reason(now: float, settings: JobSettings, *, left: int, otpm_read: int | None) -> str | None:
    """Why this run goes all sync (a deadline too close for any batch), or None: it may use batches.
    A forced route is the user's: a deadline does not override it."""
    watch = watch_of(settings, left=left, otpm_read=otpm_read)
    if watch is None or settings.force is not None or left == 0:
        return None
    start = deadline_start(now, watch)
    return start.reason if isinstance(start, AllSync) else None
