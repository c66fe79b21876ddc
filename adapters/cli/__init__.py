"""`judgecore`: the command line, a thin layer over `adapters.run.job` (see `judgecore --help`).

The package's modules, one idea each: `parser` (the grammar), `helptext` (the
description and epilogs `--help` prints), `flags` (what `run`'s
flags hold), `remembered` (how a job was started, for its rerun), `run`, `status` (the commands that
read a checkpoint: status, summary, export), `cancel`, `version` (`--version`'s line) and `relaunch` (the words that start judgecore
again), `sending` (`run` without `--dry-run`: the run that sends), `resumed` (what `run`'s checks read of
the job a state dir holds: loaded only when it holds one), `held` (`run --dry-run` that holds the items:
a design, a checkpoint, `--count-tokens`; loaded only then). This module maps each command to its handler and a `UsageError` to exit 2.

May import: every package of the shell, and `judgecore`. `adapters.demo`, `adapters.report` and
`adapters.simulator` are imported where their command is dispatched.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from adapters import keep_bytecode
from adapters.cli.parser import build_parser
from adapters.cli.remembered import KeptJob, _holds_checkpoint
from adapters.cli.run import EXIT_HUNG_UP, EXIT_INTERRUPTED, EXIT_TERMINATED, cmd_run
from adapters.files.paths import directory_problem
from adapters.usage import EXIT_LOCAL, EXIT_OK, EXIT_USAGE, UsageError, checkpoint_fault, disk_fault

__all__ = [
    "EXIT_HUNG_UP",
    "EXIT_INTERRUPTED",
    "EXIT_TERMINATED",
    "build_parser",
    "command",
    "main",
]

# Each command's module is imported when it is dispatched (below), the one place a module is imported
# inside a function besides each provider's SDK (bench/deferred_imports.py): `--help` and a dry run load
# neither the run that sends (`sending`: the machines, asyncio, the SDK), `status`, `cancel`, the demo
# nor the simulator.


def cmd_simulator(ns: argparse.Namespace) -> int:
    from adapters.simulator.cli import scenario_from_args
    from adapters.simulator.logic import Simulator
    from adapters.simulator.server import run_server_forever

    if not 0 <= ns.port <= 65_535:
        raise UsageError(f"--port must be in 0..65535 (0: any free port), got {ns.port}")
    try:
        scenario = scenario_from_args(ns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    try:
        run_server_forever(Simulator(scenario), ns.host, ns.port)
    except OSError as exc:  # the port is taken, the host is not ours: nothing was served
        raise UsageError(
            f"--host {ns.host} --port {ns.port}: cannot listen there ({exc.strerror or exc})"
        ) from None
    return EXIT_OK


def stored_job(state: Path | None) -> KeptJob | None:
    """The job `--state` holds, read by `adapters.cli.resumed` (the store, SQLite), loaded only when
    the dir holds a checkpoint: `run` on a fresh dir (a dry run most of all) loads neither."""
    if not _holds_checkpoint(state):
        return None
    from adapters.cli.resumed import StoredJob

    assert state is not None
    return StoredJob(state)


def held_dry_run(*args: Any, **kwargs: Any) -> int:
    """`adapters.cli.held.held_dry_run`, its module (the job's planning, the items held) loaded only
    when a dry run is not planned as its file is read: a dry run of a new job loads neither."""
    from adapters.cli.held import held_dry_run as held

    return held(*args, **kwargs)


def main(argv: Sequence[str] | None = None, *, collector_held: bool = False) -> int:
    """Run one command; its exit status. `collector_held`: the command's start turned cyclic garbage
    collection off (`command`); it is turned on again for anything but a dry run, which makes no
    cycles to speak of and ends without it."""
    keep_bytecode()  # the command's own start did it already; `main()` called by another program does it here
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    ns = parser.parse_args(argv)
    if collector_held and not (ns.command == "run" and ns.dry_run):
        gc.enable()
    try:
        from adapters.cli.flags import check_environment

        check_environment(os.environ, values=ns.command in ("run", "demo"))
        match ns.command:
            case "run" if ns.dry_run and ns.deadline is None:
                return cmd_run(ns, argv, stored=stored_job(ns.state), held_dry_run=held_dry_run)
            case "run" if ns.dry_run:  # the deadline's figures: its rule and the polling it reasons with
                from adapters.run.deadline import dry_run_deadline, render_deadline

                deadline = (dry_run_deadline, render_deadline)
                return cmd_run(
                    ns, argv, deadline=deadline, stored=stored_job(ns.state), held_dry_run=held_dry_run
                )
            case "run":
                from adapters.cli.sending import send

                return cmd_run(ns, argv, send, stored=stored_job(ns.state))
            case "status":
                from adapters.cli.status import cmd_status

                return cmd_status(ns)
            case "cancel":
                from adapters.cli.cancel import cmd_cancel

                return cmd_cancel(ns)
            case "summary":
                from adapters.cli.status import cmd_summary

                if ns.html is None:
                    return cmd_summary(ns)
                from adapters.report.page import write_html_report  # the page's plots: matplotlib

                return cmd_summary(ns, write_html_report)
            case "export":
                from adapters.cli.status import cmd_export

                return cmd_export(ns)
            case "demo":
                from adapters.demo import demo_dir_problem, run_demo

                if ns.dir is not None and (
                    problem := directory_problem(ns.dir, "--dir", probe=True) or demo_dir_problem(ns.dir)
                ):
                    raise UsageError(problem)
                return run_demo(n=ns.n, directory=ns.dir)
            case "simulator":
                return cmd_simulator(ns)
    except UsageError as exc:
        message = str(exc)
        if message.startswith("line ") and ns.command == "run":
            message = f"{ns.input}:{message[5:]}"
        print(f"error: {message}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:
        if (unreadable := checkpoint_fault(exc, getattr(ns, "state", None))) is not None:
            print(f"error: {unreadable}", file=sys.stderr)
            return EXIT_USAGE
        if (fault := disk_fault(exc, getattr(ns, "state", None) or getattr(ns, "dir", None))) is None:
            raise
        print(f"error: {fault}", file=sys.stderr)
        return EXIT_LOCAL
    parser.error(f"unknown command {ns.command!r}")  # pragma: no cover
    return EXIT_USAGE  # pragma: no cover


def command(*, collector_held: bool | None = None) -> NoReturn:
    """The `judgecore` command (its console script, `python -m adapters.cli`, `python -m adapters`):
    `main()`, then out of the process without tearing the interpreter down.

    When `main` returns, everything the command wrote is committed and closed (a run's checkpoint, its
    output, a report), and no thread of its is left. What the interpreter would still do is free every
    module it imported, the SDK's pydantic models most of all: about 0.45 s of CPU at the end of a
    20,000-item job (bench/floor.py), for nothing. So the standard streams are flushed and the
    process ends here, as mypy's command does. A flush that fails (the reader of a pipe went away)
    exits 120, as Python's own shutdown would, and so does a write that fails that way while the
    command runs (`judgecore status | head -3`): quietly, not with a traceback. An exception out of
    `main` (argparse's `--help` and usage errors are `SystemExit`s) takes the usual way out. A
    program calling `main()` itself gets its exit status back instead.
    """
    # What a command imports makes tens of thousands of objects and no garbage worth a collection pass:
    # the collector is off until `main` knows the command, and a dry run ends without it.
    # `collector_held`: whether it was on before `adapters.launch.command` (the console script) turned
    # it off to load this module; None: whether it is on now.
    held = gc.isenabled() if collector_held is None else collector_held
    gc.disable()
    try:
        code = main(collector_held=held)
    except BrokenPipeError:
        # what is left to write has no reader: point the streams at /dev/null so that the flushes
        # below (and any at exit) fail no more
        null = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError, AttributeError):
                os.dup2(null, stream.fileno())
        code = 120
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe, a stream someone closed
            code = code or 120
    os._exit(code)
