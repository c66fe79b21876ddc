"""`judgecore run`: the checks before anything is sent and the dry run's plan. A run that sends goes on
in `adapters.cli.sending` (the command's dispatch loads it only then): this module imports neither the
run's machines nor its progress view, nor asyncio."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson

from adapters.checkpoint.fresh import fresh_key_of
from adapters.cli.flags import _read_rubric, _settings
from adapters.cli.remembered import KeptJob, _check_manifest, _remembered, _run_flags_given
from adapters.files.paths import input_problem, out_problem, output_problem, state_problem
from adapters.files.readers import input_kind
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.run.streamed import streamed_dry_run, streams
from adapters.usage import EXIT_OK, UsageError
from judgecore.summary.plan_text import plan_json, render_plan

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HUNG_UP = 129  # 128 + SIGHUP

#: `adapters.cli.sending.send`: the run that sends, given by the command's dispatch
Send = Callable[..., int]
#: `adapters.run.deadline.dry_run_deadline` and `render_deadline`: what a dry run shows of `--deadline`,
#: given by the command's dispatch when the flag is (a dry run without one loads neither the deadline's
#: rule nor the polling it reasons with)
Deadline = tuple[Callable[..., dict[str, Any] | None], Callable[[dict[str, Any]], str]]
#: `adapters.cli.held.held_dry_run`: the dry run that holds the items (a design, an existing checkpoint,
#: `--count-tokens`), given by the command's dispatch, which loads its module only when it is called
HeldDryRun = Callable[..., int]


def cmd_run(
    ns: argparse.Namespace,
    argv: Sequence[str],
    send: Send | None = None,
    deadline: Deadline | None = None,
    *,
    stored: KeptJob | None,
    held_dry_run: HeldDryRun | None = None,
) -> int:
    """`judgecore run`: every check before anything is read, created or sent, then the dry run's plan,
    or `send` (`adapters.cli.sending.send`, which the command's dispatch gives for a run that sends).
    `held_dry_run`: the dry run that holds the items (`adapters.cli.held.held_dry_run`), when the plan
    is not made as the file is read. `stored`: the job `--state` holds
    (`adapters.cli.resumed.StoredJob`, given by the dispatch; None when it holds none, and then
    nothing of the checkpoint's, nor SQLite, is loaded)."""
    kept = _remembered(ns, argv, stored)
    kind = _input_of(ns)
    given = _run_flags_given(argv)
    if "model" in given and ns.judges and any(j != ns.model for j in ns.judges):
        raise UsageError(
            f"--model {ns.model} with --judge: a panel's models are its --judge flags "
            f"({', '.join(ns.judges)}); leave --model out, or name it with --judge {ns.model} "
            "(nothing was sent)"
        )
    try:
        settings = _settings(ns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if ns.json and not ns.dry_run:
        raise UsageError("--json goes with --dry-run (the output file is JSONL already)")
    if ns.count_tokens and not ns.dry_run:
        raise UsageError("--count-tokens goes with --dry-run (a run learns from its answers)")
    if ns.state is None and not ns.dry_run:
        raise UsageError("--state DIR is required: it is where the run checkpoints and resumes")
    out = ns.out or (ns.state / "output.jsonl" if ns.state is not None else None)
    if out is not None:  # a relative --out is the current directory's: shown, and remembered, whole
        out = Path(os.path.normpath(out.absolute()))  # `..` folded, symlinks kept (as named)
    _check_run_paths(ns, out)
    rubric = _read_rubric(ns.rubric)
    _check_manifest(ns, kept, settings.manifest(rubric), stored)
    if not ns.dry_run:
        assert send is not None, "a run that sends is dispatched with its module (adapters.cli.sending)"
        return send(ns, argv, kept, kind, given, settings, rubric, out)
    # No messages held: a dry run needs the sizes, and the digests and custom_ids only to check an
    # existing checkpoint (on a fresh state dir, which keeps nothing: its custom_ids, derived only if read).
    fresh = stored is None
    key_of = fresh_key_of if stored is None else stored.key_of
    ids_job = key_of(ns.state, settings.manifest(rubric))  # the custom_ids are the job's own
    held = bool(ns.count_tokens)  # the messages held only when one prompt is counted (--count-tokens)
    if streams(settings, fresh=fresh, count_tokens=held):  # nothing kept of the items: flat memory
        planned = streamed_dry_run(ns.input, kind=kind, rubric=rubric, settings=settings, job=ids_job)
        return show_plan(ns, planned, settings, deadline)
    assert held_dry_run is not None, "a dry run that holds its items is dispatched with its module"
    return held_dry_run(ns, kept, kind, rubric, settings, deadline, stored, job=ids_job)


def _input_of(ns: argparse.Namespace) -> Any:
    """The input's format when it is not told by its name (`"inspect"` for `--from-inspect LOG`, which
    becomes `ns.input`); exit 2 unless exactly one of INPUT and `--from-inspect` is given."""
    if ns.from_inspect is not None:
        if ns.input is not None:
            raise UsageError("give INPUT or --from-inspect LOG, not both (see `judgecore run --help`)")
        ns.input = ns.from_inspect
        return "inspect"
    if ns.input is None:
        raise UsageError(
            "the following arguments are required: INPUT (or --from-inspect LOG) (see `judgecore run --help`)"
        )
    return None


def show_plan(
    ns: argparse.Namespace, result: JudgeResult, settings: JobSettings, deadline: Deadline | None
) -> int:
    """Print a dry run's plan (`--json`: as JSON), with what `--deadline` would do."""
    assert result.plan is not None
    assert deadline is not None or settings.deadline is None, "--deadline is dispatched with its module"
    shown_deadline = None
    if deadline is not None:
        figures, render_deadline = deadline
        shown_deadline = figures(time.time(), settings, result.plan)
    if ns.json:
        shown = plan_json(result.plan) | ({"deadline": shown_deadline} if shown_deadline is not None else {})
        sys.stdout.write(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(
            render_plan(result.plan) + (render_deadline(shown_deadline) if shown_deadline else "")
        )
    return EXIT_OK


def _check_run_paths(ns: argparse.Namespace, out: Path | None) -> None:
    """Every path `run` will read or write, checked before anything is read, created or sent."""
    flag = "--from-inspect" if ns.from_inspect is not None else "INPUT"
    dataset = ns.input.is_dir() and ns.from_inspect is None  # a log is a file, never a directory
    if dataset:  # a saved dataset, or exit 2 before the state dir is made
        input_kind(ns.input)
    problem = None if dataset else input_problem(ns.input, flag)
    if problem is None and ns.rubric is not None:
        problem = input_problem(ns.rubric, "--rubric")
    if problem is None and ns.state is not None:
        problem = state_problem(ns.state, create=not ns.dry_run)
    if problem is None and out is not None and not ns.dry_run:
        read = (ns.input, ns.rubric, ns.template, ns.verdict)  # every file the run reads
        problem = out_problem(out, inputs=tuple(p for p in read if p is not None), state=ns.state)
    if problem is None and out is not None and not ns.dry_run:
        problem = output_problem(out)  # a Parquet output whose extra is missing
    if problem:
        raise UsageError(problem)
