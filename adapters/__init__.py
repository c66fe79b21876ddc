"""The imperative shell: the only code that touches the anthropic SDK, the clock, the disk and the
terminal. `judge` / `ajudge` run a whole job from Python; the CLI (`adapters.cli`) is a thin layer
over them. The decisions themselves live in the pure core, `judgecore`.

Names are loaded on first use, so `judgecore --help`, `status` and `--dry-run` never pay for
importing the SDK (about two seconds).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.job import JobSettings, JudgeResult, UsageError, ajudge, judge

__all__ = ["JobSettings", "JudgeResult", "UsageError", "ajudge", "judge"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from adapters import job

        return getattr(job, name)
    raise AttributeError(f"module 'adapters' has no attribute {name!r}")
