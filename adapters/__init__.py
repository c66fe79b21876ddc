"""The imperative shell: the only code that touches the anthropic SDK, the clock, the disk and the
terminal. `judge` / `ajudge` run a whole job from Python; the CLI (`adapters.cli`) is a thin layer
over them. The decisions themselves live in the pure core, `judgecore`.

Names are loaded on first use, so `judgecore --help`, `status` and `--dry-run` never pay for
importing the SDK (about two seconds).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.job import JobSettings, JudgeResult, UsageError, ajudge, judge, judge_dry_run

__all__ = ["JobSettings", "JudgeResult", "UsageError", "ajudge", "judge", "judge_dry_run"]


def keep_bytecode() -> None:
    """Let this process write the bytecode of what it imports into its own virtual environment.

    `PYTHONDONTWRITEBYTECODE=1` (common in containers) would otherwise make every start compile the SDK
    and its dependencies from source again (2-5 s a start). A virtual environment is the project's
    own (uv's, or `uv tool install`'s): writing its bytecode once is what `uv sync --compile-bytecode`
    does. Outside one (a system Python) the setting is left as the user made it.
    """
    if sys.dont_write_bytecode and sys.prefix != sys.base_prefix:
        sys.dont_write_bytecode = False


# The `judgecore` command keeps its bytecode from its first module on: the console script, or
# `python -m adapters.cli` (and `python -m adapters`), while whose module is being found the interpreter
# sets argv[0] to "-m". Later would be too late for the modules the command has imported by then
# (`adapters.cli` itself: about 3 ms compiled again at every start). A program importing `adapters` is
# left as it is.
_argv0 = (getattr(sys, "argv", None) or [""])[0]
if _argv0 == "-m" or Path(_argv0).stem == "judgecore":
    keep_bytecode()
del _argv0


def __getattr__(name: str) -> Any:
    if name in __all__:
        from adapters import job

        return getattr(job, name)
    raise AttributeError(f"module 'adapters' has no attribute {name!r}")
