"""The `judgecore` command's entry point (its console script, and `python -m adapters`): `command`
turns cyclic garbage collection off, then loads the command's modules and runs it.

What a command imports makes tens of thousands of objects and no garbage worth a collection pass
(about 5 ms of a dry run's start, `bench/startup.py`). So the collector is turned off here, before the
CLI is imported, in the function the console script calls, not on any module's import: a program that
imports `adapters` (the Python API) keeps its collector as it was. `adapters.cli.command` turns it on
again once it knows the command, for anything but a dry run.
"""

from __future__ import annotations

import gc
from typing import NoReturn


def command() -> NoReturn:
    """The `judgecore` command: the collector off while its modules load, then `adapters.cli.command`."""
    held = gc.isenabled()
    gc.disable()
    from adapters.cli import command as run_command  # the command's dispatch: loaded with the collector off

    run_command(collector_held=held)


__all__ = ["command"]
