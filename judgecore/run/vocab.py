"""The vocabulary every run machine shares (in the manner of h11's `_events.py`): how a run ends
(`ExitStatus`, `Done`), a line for the user (`Say`), and when to ask again (`Wait`).

The three machines, the job's (`judgecore.run.job.JobRun`), the batch run's (`judgecore.run.batch.BatchRun`)
and the sync run's (`judgecore.run.sync.SyncRun`), have one interface, in the manner of h11's
`Connection`:

    machine, actions = machine.advance(now)   # (*effects, *operations, Wait | Done)
    machine = machine.on(event)               # an operation's answer

`advance` hands out, in order, the effects to perform at once (`Say`, and each machine's own), the
operations to start (each answered by one event through `on`), and last exactly one `Wait` (nothing
more can start before `until`, or before an answer: advance again then) or `Done` (the run is over).
The shell performs them with one interpreter of this shape (`adapters.run.interpreter`).

One exit status per idea, the same in the core, the shell and the CLI:

- `OK` (0): every item is final;
- `USAGE` (2): bad usage or input, found before anything was sent;
- `PENDING` (3): some items are left pending (a budget, stuck batches, retries spent);
- `FATAL` (4): the run stopped early (a fatal API configuration, an account state);
- `INTERRUPTED` (130), `TERMINATED` (143) and `HUNG_UP` (129): 128 + SIGINT, SIGTERM or SIGHUP, the
  CLI's own.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Literal

import attrs


class ExitStatus(IntEnum):
    """How a run (or a command) ended; the process's exit status."""

    OK = 0
    USAGE = 2
    PENDING = 3
    FATAL = 4
    INTERRUPTED = 130
    TERMINATED = 143
    HUNG_UP = 129


@attrs.frozen
class Say:
    """One line for stderr."""

    level: Literal["warning", "info"]
    text: str


@attrs.frozen
class Wait:
    """Nothing more can start now: advance again at `until` (epoch seconds), or as soon as an
    operation in flight answers, whichever comes first (`until` None: only when one answers)."""

    until: float | None


@attrs.frozen
class Done:
    """The run is over, with this exit status; `reason` says why it stopped early (or None)."""

    exit_status: int
    reason: str | None


__all__ = ["Done", "ExitStatus", "Say", "Wait"]
