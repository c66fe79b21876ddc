"""The job machine's words (`judgecore.run.job._machine`): the actions it asks (effects and operations), the
events that answer them, and `MOVES`, which event answers the operation out in each phase.

The phases, the actions and events, and the table of moves; the machine (`_machine`) imports them.
"""

from __future__ import annotations

import enum
from collections.abc import Set

import attrs

from judgecore.decide.routing import Route
from judgecore.results.status import Status
from judgecore.run.vocab import Done, Say, Wait


class Phase(enum.StrEnum):
    START = "start"
    PROBING = "probing"
    RUNNING = "running"
    BATCH = "batch"
    SYNC = "sync"
    OUTPUT = "output"
    WRITING = "writing"
    DONE = "done"


# -- actions -----------------------------------------------------------------------------------


@attrs.frozen
class Connect:
    """The run will send: build the client and hand the messages to the checkpoint."""


@attrs.frozen
class RecordRoute:
    """Store the route decided in this run (a kept route is not written again)."""

    route: Route


@attrs.frozen
class Estimate:
    """Keep the dry-run's estimate of the whole job on this route."""

    route: Route


@attrs.frozen
class Probe:
    """Send this item alone (the sync machine limited to it); answer with `Probed`."""

    custom_id: str


@attrs.frozen
class RunBatch:
    """Run the batch machine over these ids (a `Picked` of the job's: their positions too); answer
    with `BatchRan`. `switched`: an earlier run made the deadline's switch: create nothing, cancel
    what is live, harvest it."""

    ids: Set[str]
    switched: bool = False


@attrs.frozen(kw_only=True)
class RunSync:
    """Run the sync machine over these ids (those final already are skipped by it); answer with
    `SyncRan`. `otpm`: the tier to pace by when no reading is stored (`--otpm`, or None). `ids` is
    a `Picked` of the job's ids (their positions too). `probed`: the final status this run's probe
    gave its item (one of `ids`, final already), or None; the tally counts it as this run's."""

    ids: Set[str]
    warm_up: bool
    contacted: bool
    otpm: int | None
    probed: Status | None = None


@attrs.frozen
class WriteOutput:
    """Write the output from the checkpoint; `reuse`: an output file the last run wrote from this
    same checkpoint may be left as it is. Answer with `Wrote`."""

    reuse: bool


Effect = Connect | RecordRoute | Estimate | Say
Operation = Probe | RunBatch | RunSync | WriteOutput
Action = Effect | Operation | Wait | Done


# -- events ------------------------------------------------------------------------------------


@attrs.frozen(kw_only=True)
class Probed:
    """What the probe found: a stop (`fatal`), or its outcome's status, reason and the tier read."""

    item_id: str = ""
    status: Status | None = None
    reason: str | None = None
    otpm: int | None = None
    fatal: str | None = None


@attrs.frozen(kw_only=True)
class BatchRan:
    fatal: str | None = None
    stuck: tuple[str, ...] = ()
    #: the `--budget` a rerun needs, when the cap stopped the part
    budget: float | None = None
    #: the part switched to the sync route (the deadline's switch); `live`: ids still in a live batch
    #: after it (a batch still canceling at the deadline), never sent on the sync route
    switched: bool = False
    live: frozenset[str] = frozenset()


@attrs.frozen(kw_only=True)
class SyncRan:
    fatal: str | None = None
    cache_hit_rate: float | None = None
    #: the `--budget` a rerun needs, when the cap stopped the part
    budget: float | None = None


@attrs.frozen
class Wrote:
    """The output was written: this many items are still pending."""

    pending: int


Event = Probed | BatchRan | SyncRan | Wrote


#: `(phase, event type) -> phase`: what answers each operation; anything else is a bug.
MOVES: dict[tuple[Phase, type], Phase] = {
    (Phase.PROBING, Probed): Phase.RUNNING,
    (Phase.BATCH, BatchRan): Phase.RUNNING,
    (Phase.SYNC, SyncRan): Phase.OUTPUT,
    (Phase.WRITING, Wrote): Phase.DONE,
}
#: The phases an operation is out in: `advance` has nothing to do until its event comes.
AWAITING = frozenset(phase for phase, _ in MOVES)


__all__ = [
    "AWAITING",
    "MOVES",
    "Action",
    "BatchRan",
    "Connect",
    "Effect",
    "Estimate",
    "Event",
    "Operation",
    "Phase",
    "Probe",
    "Probed",
    "RecordRoute",
    "RunBatch",
    "RunSync",
    "SyncRan",
    "WriteOutput",
    "Wrote",
]
