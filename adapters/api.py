"""The Python API: `judge` and `ajudge` run (or resume) a whole job, `judge_dry_run` plans one, with
`JobSettings` for the knobs, `JudgeResult` for what comes back and `UsageError` for bad input
(docs/python-api.md). Importing it loads the run (asyncio, the machines, the checkpoint's store).

May import: `adapters.run`, `adapters.usage`.
"""

from __future__ import annotations

from adapters.run.dryrun import judge_dry_run
from adapters.run.job import ajudge, judge
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import UsageError

__all__ = ["JobSettings", "JudgeResult", "UsageError", "ajudge", "judge", "judge_dry_run"]
