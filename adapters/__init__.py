"""The imperative shell: the only code that touches the anthropic SDK, the clock, the disk and the
terminal. `adapters.api` is the Python API (`judge` / `ajudge` run a whole job, `judge_dry_run` plans
one); the CLI (`adapters.cli`) is a thin layer over the same functions. The decisions themselves live in the pure core, `judgecore`.

The packages, by concern, each importing only those below it (the contracts in pyproject.toml, checked
by `lint-imports`):

- `cli`: the `judgecore` command: its grammar, flags and commands (`demo`: the demo command's job)
- `report`: `judgecore summary` and the HTML report (`simulator`: the embedded fake API, beside it)
- `run`: the interpreters of the machines: the job (the Python API), its operations, the batch and
  sync paths, the dry run, the job's plan and cost model, settings, clock, events, progress
- `files`: the user's files: input readers, inspect_ai logs, items in, messages kept, output writers
  and the output file, path checks
- `providers`: each provider's wire and SDK (`providers.anthropic`)
- `checkpoint`: a state dir: the store, every read of it, the job key, the run lock, the finished record
- `usage` (exit statuses, defaults, `UsageError`) and `argtypes`: what every layer may import

- `api`: the Python API, beside `cli` (each is a way in; neither imports the other); `launch`: the
  console script's function, which loads `cli` with the garbage collector off

This module imports nothing of the packages at its top: importing `adapters.cli` for a dry run does not
load the run (asyncio, the machines, the store), which `adapters.api` does. The Python API's names are
importable from the package too (`from adapters import judge, JobSettings`, as docs/python-api.md
shows), loaded from `adapters.api` when first asked for (the package's one hook, PEP 562).
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path


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
# sets argv[0] to "-m". This is the one thing done on import, and only for the command: every module
# the command imports is this package's, so later would be too late for the imports below (each
# would be compiled again at every start). A program importing `adapters` is left as it is.
_argv0 = (getattr(sys, "argv", None) or [""])[0]
if _argv0 == "-m" or Path(_argv0).stem == "judgecore":
    keep_bytecode()
del _argv0


#: The Python API (`adapters.api`), importable from the package itself.
_API = frozenset({"JobSettings", "JudgeResult", "UsageError", "ajudge", "judge", "judge_dry_run"})


def __getattr__(name: str) -> object:
    if name not in _API:
        raise AttributeError(f"module 'adapters' has no attribute {name!r}")
    return getattr(importlib.import_module("adapters.api"), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_API})


__all__ = sorted(_API)
