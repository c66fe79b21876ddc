"""The imperative shell: the only code that touches the anthropic SDK, the clock, the disk and the
terminal. `judge` / `ajudge` run a whole job from Python; the CLI (`adapters.cli`) is a thin layer
over them. The decisions themselves live in the pure core, `judgecore`.
"""

from adapters.job import JobSettings, JudgeResult, UsageError, ajudge, judge

__all__ = ["JobSettings", "JudgeResult", "UsageError", "ajudge", "judge"]
