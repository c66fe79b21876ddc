"""`judgecore run` without `--dry-run`, once `adapters.cli.run` has checked it: the run itself with its
progress, its closing lines, and Ctrl-C and SIGTERM kept safe."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from adapters.checkpoint import finished
from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.records import collect_records
from adapters.checkpoint.store import Store
from adapters.cli.relaunch import command_line
from adapters.cli.remembered import (
    _NOT_REMEMBERED,
    _holds_checkpoint,
    _invocation,
)
from adapters.cli.resumed import _check_overlap
from adapters.cli.run import EXIT_HUNG_UP, EXIT_INTERRUPTED, EXIT_TERMINATED
from adapters.cli.status import _spend_line
from adapters.files.checkpointed import discard_unbound, load_input
from adapters.files.items_io import load_design_input
from adapters.files.messages import JobInput
from adapters.files.writers import write_records
from adapters.run.job import ajudge
from adapters.run.progress import plural, stderr_progress
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import EXIT_FATAL, EXIT_OK, EXIT_PENDING
from judgecore.results.verdicts import reads_none, spec_from_json
from judgecore.summary.job_summary import unreadable_warning


def send(
    ns: argparse.Namespace,
    argv: Sequence[str],
    kept: dict[str, Any] | None,
    kind: Any,
    given: Any,
    settings: JobSettings,
    rubric: str | None,
    out: Path | None,
) -> int:
    """The run that sends, once `adapters.cli.run.cmd_run` has checked everything: a finished job run
    again as it was prints its closing lines; else the input is read with its messages and the job
    run (or resumed) by `_run`."""
    if "verdict" in given and not ns.replace_verdict:
        settings = _verdict_that_reads(ns, kept, settings)
    done = None
    if kind is None:  # a finished job run again as it was: its closing lines
        assert out is not None
        flags = [v for k, v in vars(ns).items() if k not in _NOT_REMEMBERED]  # --rubric, --verdict...
        done = finished.key(
            _invocation(_as_rerun_sees(ns, settings, rubric), out), [ns.input, *finished.files_of(flags)]
        )
        if done is not None and (lines := finished.lines_if_finished(ns.state, done, out)) is not None:
            print("every item is final already: nothing to send, nothing read again", file=sys.stderr)
            for line in lines:
                print(line, file=sys.stderr)
            return EXIT_OK
    ids_job = ids_job_for(ns.state, settings.manifest(rubric))  # the custom_ids are the job's own
    single = settings.plain  # one request per item
    # each row expanded into its requests (judgecore.job.designs): their messages built, held by the shell
    items = (
        load_input(ns.input, job=ids_job, kind=kind, state_dir=ns.state)
        if single
        else load_design_input(ns.input, settings.design, job=ids_job, kind=kind)
    )
    assert out is not None  # a run has a --state
    try:
        _check_overlap(ns, kept, items.items.ids)
        if kind == "inspect":
            _remember_inspect_log(ns.state, ns.input)
        return _run(ns, argv, items, rubric, settings, out, done)
    except BaseException:  # refused before its job was bound: what the parse kept goes (exit 2 leaves none)
        made = getattr(items.messages, "made", None)
        discard_unbound(ns.state, made is not None)
        raise


class _Terminated(Exception):
    """The run was cancelled by SIGTERM (a scheduler's stop) or SIGHUP (the terminal went away): it
    ends as Ctrl-C does, exit 143 or 129."""


def _hung_up(ttys: Sequence[int]) -> None:
    """SIGHUP: the terminal the run writes to is gone (an ssh session dropped). The standard streams
    that were that terminal when the run began (`ttys`, their descriptors: a hung-up terminal no
    longer says it is one) are pointed at /dev/null, so what the run still writes while it stops (the
    live view, the closing lines) cannot fail and leave the output unwritten."""

    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in ttys:
            os.dup2(null, fd)
    finally:
        os.close(null)


def _as_rerun_sees(ns: argparse.Namespace, settings: JobSettings, rubric: str | None) -> argparse.Namespace:
    """`ns` as a rerun of this job will have it: a job started without `--max-tokens` is resumed with
    the max_tokens its manifest holds (`_remembered`), so its finished record is keyed by that value (or
    the first rerun after the job would not know it finished, and read every item again)."""
    if getattr(ns, "max_tokens", 0) is not None:
        return ns
    manifest = settings.manifest(rubric)
    if "max_tokens" not in manifest:
        return ns
    return argparse.Namespace(**{**vars(ns), "max_tokens": manifest["max_tokens"]})


def _verdict_that_reads(
    ns: argparse.Namespace, kept: dict[str, Any] | None, settings: JobSettings
) -> JobSettings:
    """A `--verdict` given anew on a job with answers, which reads a verdict from none of them, is a
    warning: the job keeps the spec it had (`--replace-verdict` takes the new one anyway)."""
    if settings.verdict is None or not _holds_checkpoint(ns.state):
        return settings

    store = Store.open_readonly(ns.state)
    try:
        old = store.verdict
        tried = (
            None
            if old == settings.verdict.to_json()
            else reads_none(settings.verdict, store.succeeded_texts())
        )
    finally:
        store.close()
    if tried is None:
        return settings

    was = (kept or {}).get("flags", {}).get("verdict")
    answers = f"{tried:,} answer" + ("" if tried == 1 else "s")
    if old is None:
        print(
            f"warning: --verdict {ns.verdict} reads no verdict from any of the job's {answers}: check it "
            "against a few answers' text",
            file=sys.stderr,
        )
        return settings
    print(
        f"warning: --verdict {ns.verdict} reads no verdict from any of the job's {answers}: the job keeps "
        f"the verdict spec it had{f' ({was})' if was else ''}; check the new one against a few answers' "
        "text, or give --replace-verdict to use it anyway",
        file=sys.stderr,
    )
    ns.verdict = Path(was) if was else None  # the job remembers the spec it keeps
    return attrs.evolve(settings, verdict=spec_from_json(old))


def _remember_inspect_log(state: Path, log: Path) -> None:
    """Keep the log's path in the checkpoint, for `judgecore export --to-inspect` to write it back."""

    store = Store.open(state)
    try:
        store.inspect_log = str(log.resolve())
    finally:
        store.close()


def _run(
    ns: argparse.Namespace,
    argv: Sequence[str],
    items: JobInput,
    rubric: str | None,
    settings: JobSettings,
    out: Path,
    done: finished.FinishedKey | None = None,
) -> int:
    """Run (or resume) the job through `ajudge`, with progress on stderr, Ctrl-C and SIGTERM kept safe;
    a run that finishes the job keeps the finished-job record `done` (`adapters.checkpoint.finished`).
    What only a run needs (the machines, the ports, asyncio, the progress and the summary) is this
    module's: the command's dispatch loads it for a run that sends, never for a dry run."""

    resume = command_line(without(argv, "--deadline"))  # a deadline is this run's: never resumed with
    terminated: list[tuple[str, int]] = []  # how a signal stopped the run: its word, its exit status
    ttys = [s.fileno() for s in (sys.stdout, sys.stderr) if s.isatty()]  # for a SIGHUP (`_hung_up`)

    async def judged() -> JudgeResult:
        # SIGTERM cancels the run the way asyncio.run's own Ctrl-C does: the main task is cancelled at
        # an await, never interrupted at an arbitrary bytecode (where a KeyboardInterrupt raised from a
        # signal handler could land in the event loop's own code and leave its shutdown waiting).
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(
            signal.SIGTERM, lambda: (terminated.append(("terminated", EXIT_TERMINATED)), task.cancel())
        )
        if hangup := signal.getsignal(signal.SIGHUP) is not signal.SIG_IGN:  # not under `nohup`
            loop.add_signal_handler(
                signal.SIGHUP,
                lambda: (_hung_up(ttys), terminated.append(("hung up", EXIT_HUNG_UP)), task.cancel()),
            )
        try:
            return await ajudge(
                items,
                rubric=rubric,
                state_dir=ns.state,
                settings=settings,
                out=out,
                progress=emit,
                keep_records=False,  # the output file has them; 90,000 in memory cost ~100 MB
                invocation=_invocation(ns, out),  # `run --state DIR` alone resumes it as it was
            )
        except asyncio.CancelledError:
            if terminated:
                raise _Terminated from None
            raise
        finally:
            loop.remove_signal_handler(signal.SIGTERM)
            if hangup:
                loop.remove_signal_handler(signal.SIGHUP)

    finished.clear(ns.state)
    with contextlib.ExitStack() as stack:
        emit = stderr_progress(stack)
        try:
            result = asyncio.run(judged())
        except (KeyboardInterrupt, _Terminated):
            stack.close()
            _write_after_interrupt(items.items, ns.state, out, settings.verdict, settings.design)
            what, code = terminated[0] if terminated else ("interrupted", EXIT_INTERRUPTED)
            print(
                f"{what}: the checkpoint in {ns.state} is safe. Resume with:\n  {resume}",
                file=sys.stderr,
            )
            if live := _live_batches(ns.state):
                shown = ", ".join(live[:3]) + (f" and {len(live) - 3:,} more" if len(live) > 3 else "")
                print(
                    f"{plural(len(live), 'batch', 'batches')} {'keeps' if len(live) == 1 else 'keep'} "
                    f"running on the API side, billed as {'it finishes' if len(live) == 1 else 'they finish'} "
                    f"({shown}); the resume harvests what ended, or stop the rest with:\n"
                    f"  {command_line(['cancel', '--state', str(ns.state)])}",
                    file=sys.stderr,
                )
            return code
    c = result.counts
    summary = ", ".join(f"{k} {v:,}" for k, v in c.items())
    closing = [f"{summary}; output: {out}"]
    if result.cache_hit_rate is not None:
        closing.append(f"prompt cache hit rate: {result.cache_hit_rate:.1%}")
    closing.append(_spend_line(result.spend_usd, result.all_sync_usd, result.estimate_usd))
    if settings.verdict is not None:
        # the statistics package (`judgecore.summary.job_summary`, `statistics`): only a job with verdicts reads it

        noun = "answers" if settings.plain or settings.design.single else "items"
        if warning := unreadable_warning(result.unparsed, result.counts.get("succeeded", 0), noun=noun):
            closing.append(f"warning: {warning}")
    for line in closing:
        print(line, file=sys.stderr)
    if done is not None and not result.fatal and result.exit_code == EXIT_OK and not c.get("pending"):
        finished.remember(ns.state, done, out, closing)
    if result.fatal and result.fatal.account:  # the line names the cause: nothing was quarantined
        print(f"judgecore: {result.fatal}", file=sys.stderr)
        return EXIT_FATAL
    if result.fatal:
        print(f"error: fatal API configuration: {result.fatal}; stopped, nothing lost", file=sys.stderr)
        return EXIT_FATAL
    if result.stuck_batches:  # a rerun only waits for them again: the way to give up on them is cancel
        stuck = result.stuck_batches
        shown = ", ".join(stuck[:3]) + (f" and {len(stuck) - 3:,} more" if len(stuck) > 3 else "")
        print(
            f"{plural(len(stuck), 'batch', 'batches')} passed {'its' if len(stuck) == 1 else 'their'} deadline "
            f"without ending ({shown}): a rerun polls {'it' if len(stuck) == 1 else 'them'} again and pays "
            f"nothing twice; to give up on {'it' if len(stuck) == 1 else 'them'} and send the items again, "
            f"stop {'it' if len(stuck) == 1 else 'them'} with:\n  {command_line(['cancel', '--state', str(ns.state)])}"
            "\nthen rerun",
            file=sys.stderr,
        )
    if result.exit_code == EXIT_PENDING and result.rerun_budget is not None:
        # the line scripts test (`grep '^budget: stopped'`: exit 3 stays "pending, rerun"), and a
        # resume command that carries the budget it suggests, not the one that stopped the run
        again = command_line(with_budget(without(argv, "--deadline"), result.rerun_budget))
        print(
            f"budget: stopped by --budget {settings.budget:.2f}: {plural(c['pending'], 'item')} pending; "
            f"resume with --budget {result.rerun_budget:.2f} (from what the answers so far cost):\n  {again}",
            file=sys.stderr,
        )
    elif result.exit_code == EXIT_PENDING:
        print(f"{plural(c['pending'], 'item')} pending; resume with:\n  {resume}", file=sys.stderr)
    return result.exit_code


def with_budget(argv: Sequence[str], usd: float) -> list[str]:
    """`argv` with its `--budget` (if any) replaced by `usd` (whole cents), before any `--`."""
    words = without(argv, "--budget")
    end = words.index("--") if "--" in words else len(words)
    return [*words[:end], "--budget", f"{usd:.2f}", *words[end:]]


def without(argv: Sequence[str], flag: str) -> list[str]:
    """`argv` without `flag` and its value (`flag V` or `flag=V`), before any `--`."""
    words = list(argv)
    end = words.index("--") if "--" in words else len(words)
    head, tail = words[:end], words[end:]
    kept: list[str] = []
    skip = False
    for word in head:
        if skip:
            skip = False
        elif word == flag:
            skip = True
        elif not word.startswith(f"{flag}="):
            kept.append(word)
    return [*kept, *tail]


def _write_after_interrupt(
    items: Any, state: Path, out: Path, verdict: Any = None, design: Any = None
) -> None:
    """After Ctrl-C or SIGTERM, write the output from the checkpoint (pending where not final)."""

    store = Store.open(state)
    try:
        records = collect_records(store, items, verdict, design)
    finally:
        store.close()
    write_records(out, records.values())


def _live_batches(state: Path) -> list[str]:
    """The ids of the job's batches still running on the API side, from the checkpoint."""

    store = Store.open_readonly(state)
    try:
        return [r.batch_id for r in store.sub_batches() if r.state == "live" and r.batch_id]
    finally:
        store.close()
