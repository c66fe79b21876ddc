"""What a judge job ends with: `JudgeResult`, the value `judge`, `ajudge` and `judge_dry_run` return."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from adapters.files.cells import records_frame
from adapters.run.settings import Fatal
from judgecore.decide.planning import Plan
from judgecore.decide.routing import Route
from judgecore.values import frozen


@frozen(kw_only=True)
class JudgeResult:
    """What a run ended with. `records` maps item id -> its output object (CONTRACT.md's shape); it is
    empty when the run was asked not to keep them (`keep_records=False`: the output file has them)."""

    exit_code: int
    route: Route | None
    counts: Mapping[str, int]
    # never in the repr: asyncio formats a finished task's result, and 90,000 records took seconds
    records: Mapping[str, dict[str, Any]] = attrs.field(repr=lambda r: f"<{len(r):,} records>")
    fatal: Fatal | None = None
    stuck_batches: tuple[str, ...] = ()
    output_path: Path | None = None
    cache_hit_rate: float | None = None
    plan: Plan | None = None
    #: US dollars: the job's answers so far (earlier runs included), the same answers all-sync, and the
    #: dry-run estimate of the whole job on its route; None where the model has no price.
    spend_usd: float | None = None
    all_sync_usd: float | None = None
    estimate_usd: float | None = None
    #: succeeded answers whose verdict could not be read (`VERDICT_UNPARSED`), as the output counts them
    unparsed: int = 0
    #: every warning line the run said, in order, whatever `progress` was (the CLI prints them as
    #: `warning: ...`): why items stay pending (`budget: ...`), a sub-batch refused, a stuck batch
    warnings: tuple[str, ...] = ()
    #: when `--budget` stopped the run with items left pending: the `--budget` (US dollars) a rerun
    #: needs to send them all, from what the answers so far really cost; None otherwise
    rerun_budget: float | None = None

    def to_pandas(self) -> Any:
        """The records as a pandas DataFrame, one row per item in input order (the `data` extra)."""

        return records_frame(self.records.values())
