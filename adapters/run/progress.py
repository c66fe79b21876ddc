"""Progress: a live view on a terminal (rich), one plain log line per change elsewhere.

Both are `Emit` callbacks over the events of `adapters.run.events`; they hold only what they draw. Progress
comes from the clock and from ended batches, never from an in-progress batch's counts (which stay at
`processing=N` until the batch ends).
"""

from __future__ import annotations

import contextlib
import sys
import time
from typing import IO, Any

from rich.console import Console, Group
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from adapters.run.events import (
    BatchCreated,
    BatchHarvested,
    BatchPolled,
    BatchStuck,
    Emit,
    Event,
    Notice,
    RoundStarted,
    SyncProgress,
)

HEARTBEAT = 60.0  # seconds: off a terminal, a live batch gets a line at least this far apart


def plural(n: int, one: str, many: str | None = None) -> str:
    """`1 request`, `2 requests`, `1,000 requests`."""
    return f"{n:,} {one if n == 1 else (many or one + 's')}"


def _span(seconds: float) -> str:
    s = max(0, int(seconds))
    h, rem = divmod(s, 3600)
    m, sec = divmod(rem, 60)
    return f"{h}h{m:02d}m" if h else (f"{m}m{sec:02d}s" if m else f"{sec}s")


def _left(seconds: float) -> str:
    """Time left to a deadline, as a phrase."""
    return f"{_span(seconds)} to deadline" if seconds > 0 else "past its deadline"


def _clock() -> str:
    return time.strftime("%H:%M:%S")


def sync_line(p: SyncProgress) -> str:
    """The sync tally in words: the whole job's items done, and how many of them succeeded."""
    details = [f"{p.earlier:,} before this run"] if p.earlier else []
    if p.succeeded is not None:
        this_run = f"{p.succeeded:,} succeeded" + (f", {p.pending:,} pending" if p.pending else "")
        details.append(f"this run: {this_run}" if p.earlier else this_run)
    head = f"{p.done + p.earlier:,}/{p.total + p.earlier:,} done" + (
        f" ({'; '.join(details)})" if details else ""
    )
    rate = (p.done - p.probed) / p.elapsed if p.elapsed > 0 else 0.0  # of this run's sends
    return (
        f"{head}; {rate:.1f}/s, {plural(p.retries, 'retry', 'retries')}, {p.rate_limited:,} 429s, "
        f"concurrency {p.concurrency}"
    )


class PlainProgress:
    """One line per change, to `stream` (stderr by default): for logs, CI and pipes.

    A live batch whose status does not change still gets a heartbeat line (status, age, time to its
    deadline) once `heartbeat` seconds of the run's clock have passed since its last line.
    """

    def __init__(
        self, stream: IO[str] | None = None, *, sync_every: float = 10.0, heartbeat: float = HEARTBEAT
    ) -> None:
        self._stream = stream or sys.stderr
        self._status: dict[int, str] = {}
        self._said_at: dict[int, float] = {}
        self._sync_every = sync_every
        self._heartbeat = heartbeat
        self._last_sync = -1e18

    def _say(self, text: str) -> None:
        print(f"[{_clock()}] {text}", file=self._stream, flush=True)

    def _polled(self, e: BatchPolled) -> None:
        age = f" for {_span(e.now - e.created_at)}" if e.created_at is not None else ""
        if e.status == "ended":
            self._status[e.sub_id] = e.status
            # how long it ran, by its own clock: a resume polls a batch that ended hours ago
            end = e.ended_at if e.ended_at is not None else e.now
            after = f" after {_span(end - e.created_at)}" if e.created_at is not None else ""
            self._say(f"sub-batch {e.sub_id}: {e.batch_id} ended{after}")
            return
        changed = self._status.get(e.sub_id) != e.status
        due = e.now - self._said_at.get(e.sub_id, -1e18) >= self._heartbeat
        if changed or due:
            self._status[e.sub_id] = e.status
            self._said_at[e.sub_id] = e.now
            self._say(f"sub-batch {e.sub_id}: {e.batch_id} {e.status}{age}, {_left(e.deadline - e.now)}")

    def __call__(self, event: Event) -> None:
        match event:
            case Notice(level="warning", message=m):
                print(f"warning: {m}", file=self._stream, flush=True)
            case Notice(message=m):
                self._say(m)
            case RoundStarted(round=r, n=n, sub_batches=k):
                self._say(f"round {r}: {plural(n, 'request')} in {plural(k, 'sub-batch', 'sub-batches')}")
            case BatchCreated(sub_id=i, batch_id=b, n=n, expires_at=exp, adopted=adopted, now=now):
                self._status[i] = "in_progress"
                now = time.time() if now is None else now
                self._said_at[i] = now
                verb = "adopted orphan" if adopted else "created"
                self._say(
                    f"sub-batch {i}: {verb} {b} ({plural(n, 'request')}), expires in {_span(exp - now)}"
                )
            case BatchPolled() as e:
                self._polled(e)
            case BatchHarvested(sub_id=i, batch_id=b, counts=c):
                self._status[i] = "harvested"
                tally = ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()) if v)
                self._say(f"sub-batch {i}: {b} harvested ({tally or 'nothing new'})")
            case BatchStuck(sub_id=i, batch_id=b, n=n):
                self._status[i] = "stuck"
                print(
                    f"warning: batch {b} (sub-batch {i}, {plural(n, 'request')}) passed its deadline without "
                    "ending; its items stay pending: a rerun waits for it again, `judgecore cancel` stops it "
                    "and a rerun then sends them again",
                    file=self._stream,
                    flush=True,
                )
            case SyncProgress() as p:
                if p.done >= p.total or p.elapsed - self._last_sync >= self._sync_every:
                    self._last_sync = p.elapsed
                    self._say(f"sync: {sync_line(p)}")
            case _:
                pass


class LiveProgress:
    """A rich live view: a table of sub-batches with time left to each deadline, and a sync bar."""

    def __init__(self) -> None:

        self._console = Console(stderr=True)
        self._rows: dict[int, dict[str, Any]] = {}
        self._sync: SyncProgress | None = None
        self._round = ""
        self._skew = 0.0  # the run's clock minus the wall clock, from the last event that had both
        self._live = Live(
            get_renderable=self._render, console=self._console, refresh_per_second=4, transient=False
        )

    def __enter__(self) -> LiveProgress:
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._live.__exit__(None, None, None)

    def _render(self) -> Any:

        parts: list[Any] = []
        if self._rows:
            table = Table(title=f"judgecore batches {self._round}".strip(), expand=False)
            for col in ("sub", "batch id", "requests", "status", "to deadline", "results"):
                table.add_column(col, justify="right" if col in ("sub", "requests") else "left")
            now = time.time() + self._skew  # the view ticks between events, on the run's clock
            for i, row in sorted(self._rows.items())[-30:]:
                deadline = row.get("deadline")
                left = (
                    _span(deadline - now)
                    if deadline and row["status"] in ("in_progress", "canceling")
                    else ""
                )
                table.add_row(
                    str(i), row["batch_id"], f"{row['n']:,}", row["status"], left, row.get("results", "")
                )
            if len(self._rows) > 30:
                table.caption = f"(showing the last 30 of {len(self._rows)} sub-batches)"
            parts.append(table)
        if self._sync is not None:
            p = self._sync
            parts.append(
                ProgressBar(total=max(1, p.total + p.earlier), completed=p.done + p.earlier, width=50)
            )
            parts.append(
                Text(
                    f"sync {sync_line(p)}  in flight {p.in_flight}/{p.concurrency}  "
                    f"output tokens {p.output_tokens:,}"
                )
            )
        return Group(*parts) if parts else Text("judgecore: starting ...")

    def __call__(self, event: Event) -> None:
        match event:
            case Notice(level=level, message=m):
                prefix = "[yellow]warning:[/yellow] " if level == "warning" else ""
                self._console.print(f"{prefix}{m}", markup=True, highlight=False)
            case RoundStarted(round=r, n=n, sub_batches=k):
                self._round = f"(round {r}: {plural(n, 'request')}, {plural(k, 'sub-batch', 'sub-batches')})"
            case BatchCreated(sub_id=i, batch_id=b, n=n):
                self._rows[i] = {"batch_id": b, "n": n, "status": "in_progress", "deadline": None}
            case BatchPolled(sub_id=i, batch_id=b, status=st, n=n, deadline=d, now=now):
                self._skew = now - time.time()
                row = self._rows.setdefault(i, {"batch_id": b, "n": n})
                row.update(status=st, deadline=d)
            case BatchHarvested(sub_id=i, counts=c):
                row = self._rows.setdefault(i, {"batch_id": "?", "n": 0})
                row["status"] = "harvested"
                row["results"] = ", ".join(f"{k} {v:,}" for k, v in sorted(c.items()) if v)
            case BatchStuck(sub_id=i, batch_id=b, n=n):
                row = self._rows.setdefault(i, {"batch_id": b, "n": n})
                row["status"] = "stuck"
                self._console.print(
                    f"[yellow]warning:[/yellow] batch {b} passed its deadline without ending; its items stay "
                    "pending: a rerun waits for it again, `judgecore cancel` stops it and a rerun then sends them again"
                )
            case SyncProgress() as p:
                self._sync = p
            case _:
                pass


def stderr_progress(stack: contextlib.ExitStack) -> Emit:
    """The CLI's progress on stderr: the live view on a terminal (entered on `stack`), else plain lines."""
    if sys.stderr.isatty():
        return stack.enter_context(LiveProgress())
    return PlainProgress()
