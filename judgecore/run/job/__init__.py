"""The whole job as a machine (`JobRun`): probe, keep or decide the route, run the batch part, run the
sync part, write the output, done. Its theory of operation is `_machine`'s docstring.

Modules: `_vocab` (the phases, the actions it asks, the events that answer them, the table of moves
`MOVES`), `_machine` (`JobRun`: `start`, `advance`, `on`, `dry_run`; `History`, `JobPolicy`).
May import: `judgecore.decide`, `judgecore.results`, `judgecore.job`, `judgecore.run.vocab`.
"""

from judgecore.run.job._machine import (
    DryRunPlan,
    History,
    IllegalJobMove,
    JobPolicy,
    JobRun,
    exit_status,
)
from judgecore.run.job._vocab import (
    AWAITING,
    MOVES,
    Action,
    BatchRan,
    Connect,
    Effect,
    Estimate,
    Event,
    Operation,
    Phase,
    Probe,
    Probed,
    RecordRoute,
    RunBatch,
    RunSync,
    SyncRan,
    WriteOutput,
    Wrote,
)

__all__ = [
    "AWAITING",
    "MOVES",
    "Action",
    "BatchRan",
    "Connect",
    "DryRunPlan",
    "Effect",
    "Estimate",
    "Event",
    "History",
    "IllegalJobMove",
    "JobPolicy",
    "JobRun",
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
    "exit_status",
]
