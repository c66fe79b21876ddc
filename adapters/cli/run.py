"""`judgecore run`: the checks before anything is sent, the dry run's plan, and the run itself with
its progress, its closing lines, and Ctrl-C and SIGTERM kept safe."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adapters.checkpoint import finished
from adapters.checkpoint.jobkey import ids_job_for
from adapters.checkpoint.records import collect_records
from adapters.checkpoint.store import Store
from adapters.checkpoint.store.schema import holds_checkpoint
from adapters.cli.flags import _read_rubric, _settings
from adapters.cli.remembered import (
    _NOT_REMEMBERED,
    _check_manifest,
    _holds_checkpoint,
    _invocation,
    _remembered,
    _run_flags_given,
)
from adapters.files.items_io import load_design_input, load_design_items, load_input, load_items
from adapters.files.messages import JobInput, discard_unbound
from adapters.files.paths import input_problem, kept_path, out_problem, state_problem
from adapters.files.readers import input_kind
from adapters.files.writers import output_problem, write_records
from adapters.run.dryrun import judge_dry_run
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.usage import EXIT_FATAL, EXIT_OK, EXIT_PENDING, UsageError
from judgecore.job.items import Items
from judgecore.summary.plan_text import plan_json, render_plan

if TYPE_CHECKING:
    pass
    pass
    pass
    pass
    pass


EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM
EXIT_HUNG_UP = 129  # 128 + SIGHUP


class _Terminated(Exception):
    """The run was cancelled by SIGTERM (a scheduler's stop) or SIGHUP (the terminal went away): it
    ends as Ctrl-C does, exit 143 or 129."""


def _hung_up(ttys: Sequence[int]) -> None:
    """SIGHUP: the terminal the run writes to is gone (an ssh session dropped). The standard streams
    that were that terminal when the run began (`ttys`, their descriptors: a hung-up terminal no
    longer says it is one) are pointed at /dev/null, so what the run still writes while it stops (the
    live view, the closing lines) cannot fail and leave the output unwritten."""
    import os

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


def cmd_run(ns: argparse.Namespace, argv: Sequence[str]) -> int:

    kept = _remembered(ns, argv)
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
    _check_manifest(ns, kept, settings.manifest(rubric))
    if "verdict" in given and not ns.dry_run and not ns.replace_verdict:
        settings = _verdict_that_reads(ns, kept, settings)
    done = None
    if not ns.dry_run and kind is None:  # a finished job run again as it was: its closing lines
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
    # No messages held: a run reads them from the input again to keep them in its checkpoint; a dry
    # run needs the sizes, and the digests and custom_ids only to check an existing checkpoint (on a
    # fresh state dir, which keeps nothing: its custom_ids, derived only if read).
    from adapters.checkpoint.store.schema import holds_checkpoint

    fresh = ns.dry_run and not holds_checkpoint(ns.state or Path())
    ids_job = ids_job_for(ns.state, settings.manifest(rubric))  # the custom_ids are the job's own
    single = settings.plain  # one request per item: `judgecore.job.designs` is not imported
    if ns.dry_run:  # the messages held only when one prompt is counted (--count-tokens)
        held = bool(ns.count_tokens)
        dry = (
            load_items(
                ns.input, hold_messages=held, digests=not fresh, job=ids_job, kind=kind, lazy_ids=fresh
            )
            if single
            else load_design_items(ns.input, settings.design, job=ids_job, kind=kind)
        )
        _check_overlap(ns, kept, dry.ids)
        return _dry_run(ns, dry, rubric, settings)
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


def _verdict_that_reads(
    ns: argparse.Namespace, kept: dict[str, Any] | None, settings: JobSettings
) -> JobSettings:
    """A `--verdict` given anew on a job with answers, which reads a verdict from none of them, is a
    warning: the job keeps the spec it had (`--replace-verdict` takes the new one anyway)."""
    if settings.verdict is None or not _holds_checkpoint(ns.state):
        return settings
    from adapters.checkpoint.store import Store
    from judgecore.results.verdicts import reads_none, spec_from_json

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
    import attrs

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


def _check_overlap(ns: argparse.Namespace, kept: dict[str, Any] | None, ids: Any) -> None:
    """An input that shares no item id with the job in `--state` is exit 2 (a new job's input, most
    likely, given the wrong `--state`), naming both files and the ways out, unless `--add-items`; one
    that holds only some of the job's items is a warning (the output lists every item of the job)."""

    if ns.state is None or not holds_checkpoint(ns.state):
        return
    from adapters.checkpoint.store import Store

    store = Store.open_readonly(ns.state)
    try:
        if store.manifest is None:
            return
        bound, given, known = store.known_items(ids)
    finally:
        store.close()
    started = (
        f"started from {kept_path(ns.state, kept['input'])}" if kept and kept.get("input") else "started"
    )
    if bound and not known and not ns.add_items:
        raise UsageError(
            f"{ns.input}: none of its {given:,} item id(s) is in the job in --state {ns.state} ({started}, "
            f"{bound:,} items): point --state at a new directory for a new job, or give --add-items to add "
            "them to this one"
        )
    if known < bound and given == known:
        print(
            f"warning: {ns.input} holds {known:,} of the {bound:,} items of the job in --state {ns.state} "
            f"({started}); the output lists all {bound:,}",
            file=sys.stderr,
        )


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


def _remember_inspect_log(state: Path, log: Path) -> None:
    """Keep the log's path in the checkpoint, for `judgecore export --to-inspect` to write it back."""

    store = Store.open(state)
    try:
        store.inspect_log = str(log.resolve())
    finally:
        store.close()


def _dry_run(ns: argparse.Namespace, items: Items, rubric: str | None, settings: JobSettings) -> int:
    """Print the plan: `judge_dry_run`, with no event loop."""

    result = judge_dry_run(
        items,
        rubric=rubric,
        state_dir=ns.state or Path(),
        settings=settings,
        count_tokens=ns.count_tokens,
        source=str(ns.input),
    )
    assert result.plan is not None
    from adapters.run.deadline import dry_run_deadline, render_deadline

    deadline = dry_run_deadline(time.time(), settings, result.plan)
    if ns.json:
        import orjson

        shown = plan_json(result.plan) | ({"deadline": deadline} if deadline is not None else {})
        sys.stdout.write(orjson.dumps(shown, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_plan(result.plan) + (render_deadline(deadline) if deadline else ""))
    return EXIT_OK


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
    The command's dispatch to a real run: what only a run needs (the machines, the ports, asyncio, the
    progress and the summary) is imported here, so that a dry run does not load it."""
    import asyncio
    import contextlib
    import signal

    from adapters.cli.relaunch import command_line
    from adapters.cli.status import _spend_line
    from adapters.run.job import ajudge
    from adapters.run.progress import plural, stderr_progress
    from judgecore.summary.job_summary import unreadable_warning

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
