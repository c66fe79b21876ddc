"""The imperative shell: the only code that touches the anthropic SDK, the clock, the disk and the
terminal. `judge` / `ajudge` run a whole job from Python; the CLI (`adapters.cli`) is a thin layer
over them. The decisions themselves live in the pure core, `judgecore`.

Names are loaded on first use, so `judgecore --help`, `status` and `--dry-run` never pay for
importing the SDK (about two seconds).
"""

from __future__ import annotations

import gc
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from adapters.run.job import JobSettings, JudgeResult, UsageError, ajudge, judge, judge_dry_run

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
#: The command turned cyclic garbage collection off at its start (`release_collector`).
COLLECTOR_HELD = False
if _argv0 == "-m" or Path(_argv0).stem == "judgecore":
    keep_bytecode()


def _the_command() -> bool:
    """This process is the `judgecore` command itself: its console script, `python -m adapters.cli`
    or `python -m adapters` (not another module run with `-m`, nor a program importing `adapters`)."""
    words = iter((getattr(sys, "orig_argv", None) or [""])[1:])
    for word in words:  # the interpreter's own options, up to the module, the code or the script
        if word.startswith("-m"):
            return (word[2:] or next(words, "")) in ("adapters", "adapters.cli")
        if word in ("-X", "-W"):
            next(words, None)  # the option's value
        elif not word.startswith("-") or word.startswith("-c"):
            break
    return Path(sys.argv[0]).stem == "judgecore"


# Its imports make tens of thousands of objects and no garbage worth a collection pass (about 7 ms of
# a dry run's start went to those passes): the collector stays off until the command knows what it
# runs (`adapters.cli.main`), and a dry run, which makes no cycles to speak of, ends without it.
if _the_command() and gc.isenabled():
    gc.disable()
    COLLECTOR_HELD = True
del _argv0


def release_collector() -> None:
    """Turn cyclic garbage collection on again if the command's start turned it off (a run, `status`:
    anything but a dry run, which ends without it)."""
    global COLLECTOR_HELD
    if COLLECTOR_HELD:
        COLLECTOR_HELD = False
        gc.enable()


def __getattr__(name: str) -> Any:
    if name in __all__:
        from adapters.run import job

        return getattr(job, name)
    raise AttributeError(f"module 'adapters' has no attribute {name!r}")
