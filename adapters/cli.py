"""`judgecore`: the command line, a thin layer over `adapters.job` (see `judgecore --help`)."""

from __future__ import annotations

import argparse
import math
import os
import shlex
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from adapters import keep_bytecode
from adapters.argtypes import finite_number
from adapters.paths import (
    directory_problem,
    existing_state_problem,
    input_problem,
    out_problem,
    state_problem,
)
from adapters.usage import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    EXIT_FATAL,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    THINKING_MAX_TOKENS,
    UsageError,
)

if TYPE_CHECKING:
    from adapters import finished
    from adapters.job import JobSettings, JudgeResult
    from judgecore.items import Items

# Each command imports what it needs, in its own function: `--help` parses arguments and nothing else,
# `status` reads the checkpoint, a dry run plans (no event loop, no SQLite on a fresh state dir), and
# only a run, `cancel` and `demo` import the SDK and the run machines (tests/cli/test_start_up.py).

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM


class _Terminated(Exception):
    """The run was cancelled by SIGTERM (a scheduler's stop): it ends as Ctrl-C does, exit 143."""


DESCRIPTION = """\
Run LLM-judge scoring (rubric, alignment, refusal grading of stored completions) through the Anthropic
API at any size, without ever wedging. Small jobs go straight to the Messages API with bounded
concurrency and a warm prompt cache; large ones go to the Message Batches API (half price) in
sub-batches of at most 8,000 requests, each wait bounded by the batch's own expires_at.
Every run checkpoints to --state DIR: rerun the same command to resume; nothing is paid for twice.

Start here:  judgecore demo           (a whole job against a local simulator; no key, no network)
Then:        judgecore run items.jsonl --state runs/job1 --rubric rubric.txt --dry-run
"""

RUN_EPILOG = """\
input (JSONL, one object a line, blank lines ignored):
  {"id": "q17-s3", "prompt": "text of the user turn"}
  {"id": "q18-s1", "messages": [{"role": "user", "content": "..."}], "max_tokens": 512, "metadata": {...}}
  also .jsonl.gz, .csv, .parquet, a datasets save_to_disk directory (columns id, prompt or messages,
  max_tokens; every other column is metadata), or --from-inspect LOG (an inspect_ai eval log)

output (one line per item, input order; default STATE/output.jsonl; .csv or .parquet by --out's
  extension): id, custom_id, status (succeeded | miss | quarantined | pending), route, text, stop_reason, model, usage, error,
  batch_id, attempts, metadata, verdict (with --verdict; a verdict that cannot be read is a miss
  of class VERDICT_UNPARSED, its text kept); a refusal is a miss of class MODEL_REFUSAL, never
  scored, its line carrying stop_details (the refusal's category and explanation); with a judge
  design, samples, agreement (--samples) and judges (--judge), one line per item still

exit status:
  0  every item is final (succeeded, miss or quarantined)
  2  bad usage or bad input (a path, a flag value, an input line); nothing was sent
  3  some items are pending: rerun the same command to resume
  4  fatal API configuration (authentication, permission, unknown model, every request invalid), or
     the API refused the account (on hold, a spend limit, billing: nothing quarantined, rerun once fixed)
  130 interrupted (Ctrl-C), 143 terminated (SIGTERM): the checkpoint is safe and the output
      written with unfinished items pending; rerun the same command to resume

credentials come from ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint); the key is
never printed, logged or written to disk.

examples:
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --dry-run          # the plan and its cost
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt                    # run (or resume)
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --force-sync       # same-day critical run
  judgecore status --state runs/j1
  judgecore run items.jsonl --state runs/j2 --rubric rubric.txt --verdict verdict.json   # with scores
  judgecore summary --state runs/j2 --html report.html                             # scores and spend
  judgecore run answers.jsonl --state runs/p --template pairwise.txt --pairwise answer_a,answer_b
  judgecore run answers.jsonl --state runs/p3 --template grade.txt --verdict score.json \\
      --judge claude-haiku-4-5 --judge claude-sonnet-4-6 --judge claude-opus-4-6 --samples 3   # a panel
"""


class _Parser(argparse.ArgumentParser):
    """argparse, with each usage error on one line (no usage banner) and exit 2; a sub-command's
    arguments can be declared when that sub-command is used (`declare_later`), so that declaring
    them does not cost every other command an import."""

    _declare: Callable[[argparse.ArgumentParser], None] | None = None

    def error(self, message: str) -> NoReturn:
        print(f"error: {message} (see `{self.prog} --help`)", file=sys.stderr)
        sys.exit(EXIT_USAGE)

    def declare_later(self, declare: Callable[[argparse.ArgumentParser], None]) -> None:
        """Call `declare(self)` before this parser first parses or shows its help or usage."""
        self._declare = declare

    def _declared(self) -> None:
        if self._declare is not None:
            declare, self._declare = self._declare, None
            declare(self)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        self._declared()
        return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        self._declared()
        return super().format_usage()

    def format_help(self) -> str:
        self._declared()
        return super().format_help()


def _seconds(text: str) -> float:
    """A finite number of seconds (fractions allowed); the range is each flag's, in JobSettings."""
    return finite_number(text, "a number of seconds")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="judgecore", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = sub.add_parser(
        "run",
        help="run or resume a judge job",
        description="Run a judge job, or resume it: the same command with the same --state continues "
        "where it stopped, resending only what is not final and polling batches still live.",
        epilog=RUN_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument(
        "input",
        type=Path,
        nargs="?",
        metavar="INPUT",
        help="the items to judge: .jsonl, .jsonl.gz, .csv, .parquet, or a datasets save_to_disk directory "
        "(a rerun with --state may leave it out: the state dir remembers it)",
    )
    run.add_argument(
        "--from-inspect",
        type=Path,
        metavar="LOG",
        help="judge the samples of an inspect_ai eval log (.eval or .json) instead of INPUT",
    )
    run.add_argument(
        "--state", type=Path, metavar="DIR", help="checkpoint directory (required unless --dry-run)"
    )
    run.add_argument(
        "--rubric", type=Path, metavar="FILE", help="the judge's instructions, sent as a cached system block"
    )
    run.add_argument("--model", default=DEFAULT_MODEL, help="model id (default: %(default)s)")
    run.add_argument(
        "--max-tokens",
        type=int,
        default=None,
        metavar="N",
        help="per answer, unless an item sets its own; at most the model's output limit; thinking "
        f"tokens count in it (default: {DEFAULT_MAX_TOKENS}, or {THINKING_MAX_TOKENS:,} where the model thinks)",
    )
    run.add_argument(
        "--thinking",
        metavar="adaptive|off|N",
        help="send the `thinking` parameter: adaptive, off (disabled), or a budget of N >= 1024 tokens "
        "below --max-tokens, where the model takes it (default: omitted, the model's own default)",
    )
    run.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="output .jsonl, .csv or .parquet (default: STATE/output.jsonl)",
    )
    g = run.add_argument_group("planning")
    g.add_argument(
        "--dry-run", action="store_true", help="print the plan and its estimated cost; send nothing at all"
    )
    g.add_argument("--json", action="store_true", help="with --dry-run: print the plan as one JSON object")
    g.add_argument(
        "--count-tokens",
        action="store_true",
        help="with --dry-run: ask the API to count one prompt's input tokens (messages.count_tokens: "
        "free, no message sent; needs ANTHROPIC_API_KEY) and scale the estimate by it",
    )
    force = g.add_mutually_exclusive_group()
    force.add_argument("--force-sync", action="store_true", help="use the Messages API whatever the size")
    force.add_argument(
        "--force-batch", action="store_true", help="use the Message Batches API whatever the size"
    )
    g.add_argument(
        "--sync-threshold",
        type=int,
        default=2000,
        metavar="N",
        help="jobs of N requests or more go to batches, at 400,000 output tokens/min; scaled by the tier (default: %(default)s)",
    )
    g.add_argument(
        "--otpm",
        type=int,
        metavar="N",
        help="the tier's output tokens per minute (default: read from one probe request)",
    )
    b = run.add_argument_group("batches")
    b.add_argument(
        "--max-batch-requests",
        type=int,
        default=8000,
        metavar="N",
        help="per sub-batch (default: %(default)s)",
    )
    b.add_argument(
        "--max-batch-bytes",
        type=int,
        default=250_000_000,
        metavar="N",
        help="per sub-batch create body (default: %(default)s)",
    )
    b.add_argument(
        "--poll-interval",
        type=_seconds,
        default=60.0,
        metavar="SECONDS",
        help="between polls of a batch; fractions allowed (default: %(default)s)",
    )
    b.add_argument(
        "--grace",
        type=_seconds,
        default=1800.0,
        metavar="SECONDS",
        help="a batch is overdue this long after its expires_at (default: %(default)s)",
    )
    s = run.add_argument_group("sync")
    s.add_argument("--concurrency", type=int, metavar="N", help="requests in flight (default: from the tier)")
    r = run.add_argument_group("retries (both routes)")
    r.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        metavar="N",
        help="sends per item per run before it stays pending; a rerun gives it a fresh budget (default: %(default)s)",
    )
    _add_scoring_arguments(run)
    _add_design_arguments(run)

    st = sub.add_parser(
        "status",
        help="show a job's checkpoint (no API call)",
        description="Read the checkpoint only; no API call.",
    )
    st.add_argument("--state", type=Path, required=True, metavar="DIR")
    st.add_argument("--json", action="store_true", help="one JSON object")

    _add_summary_parser(sub)
    ex = sub.add_parser(
        "export",
        help="write a job's verdicts back as an inspect_ai log (no API call)",
        description="Write the inspect_ai log a job was read from (--from-inspect) with one `judgecore` "
        "score per sample, for `inspect view`. Reads the checkpoint only; no API call.",
    )
    ex.add_argument("--state", type=Path, required=True, metavar="DIR")
    ex.add_argument(
        "--to-inspect", type=Path, required=True, metavar="OUT", help="the log to write (.eval or .json)"
    )
    ex.add_argument(
        "--from-inspect",
        type=Path,
        metavar="LOG",
        help="the log the job was read from (default: the one it remembers)",
    )

    ca = sub.add_parser(
        "cancel",
        help="cancel a job's live batches",
        description="Cancel the job's live batches so an abandoned run stops costing money; a later `run` resumes the rest.",
    )
    ca.add_argument("--state", type=Path, required=True, metavar="DIR")

    de = sub.add_parser(
        "demo",
        help="a whole job against the embedded simulator (no key, no network)",
        description="Start the simulator on a free loopback port, write a realistic judge job to a temp dir, run it "
        "through the batch path with a few injected faults, then a small sync job, and print a summary.",
    )
    de.add_argument("--n", type=int, default=3000, help="items in the batch job (default: %(default)s)")
    de.add_argument(
        "--dir", type=Path, metavar="DIR", help="where to write the job (default: a new temp dir)"
    )

    si: _Parser = sub.add_parser(
        "simulator",
        help="serve the API simulator on loopback",
        description="Serve a local stand-in for the Messages and Message Batches API, for manual runs and other programs.",
    )
    si.declare_later(_simulator_arguments)
    return parser


def _simulator_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's own options (the simulator package loads http.server and ssl)."""
    from adapters.simulator import add_arguments

    add_arguments(parser)


def _settings(ns: argparse.Namespace) -> JobSettings:
    from adapters.job import JobSettings

    force = "sync" if ns.force_sync else "batch" if ns.force_batch else None
    extra: dict[str, Any] = {} if ns.max_tokens is None else {"max_tokens": ns.max_tokens}
    return JobSettings(
        model=ns.model,
        thinking=ns.thinking,
        **extra,
        force=force,
        sync_threshold=ns.sync_threshold,
        otpm=ns.otpm,
        max_batch_requests=ns.max_batch_requests,
        max_batch_bytes=ns.max_batch_bytes,
        poll_interval=ns.poll_interval,
        grace=ns.grace,
        concurrency=ns.concurrency,
        max_attempts=ns.max_attempts,
        verdict=_verdict_spec(ns.verdict),
        budget=ns.budget,
        template=_read_template(ns.template, pairwise=ns.pairwise is not None),
        samples=ns.samples,
        pairwise=tuple(ns.pairwise) if ns.pairwise else None,
        judges=tuple(ns.judges or ()),
    )


def _read_flag_file(path: Path, flag: str) -> str:
    """The UTF-8 text of the file a flag names; what goes wrong is one `UsageError` naming both."""
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror or exc} ({flag})") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc})") from None


def _read_rubric(path: Path | None) -> str | None:
    if path is None:
        return None
    text = _read_flag_file(path, "--rubric")
    if not text.strip():
        raise UsageError(f"{path}: the rubric is empty")
    return text


#: `run` flags never remembered: what this one command does, not how the job was started
_NOT_REMEMBERED = frozenset({"command", "input", "state", "out", "dry_run", "json", "count_tokens"})
#: the manifest's fields, by the flag that sets them (a field that differs names its flag)
_FLAG_OF = {
    "model": "--model",
    "max_tokens": "--max-tokens",
    "rubric_sha256": "--rubric",
    "verdict_schema_sha256": "--verdict",
    "thinking": "--thinking",
    "template_sha256": "--template",
    "samples": "--samples",
    "pairwise": "--pairwise",
    "judges": "--judge",
}


def _holds_checkpoint(state: Path | None) -> bool:
    """`state` is a state dir holding a checkpoint (a path that cannot be one is told later, by name)."""
    from adapters.store import Store

    try:
        return state is not None and Store.exists(state)
    except OSError:
        return False


def _run_flags_given(argv: Sequence[str]) -> set[str]:
    """The dests of the `run` options this command line gives (a flag left out is never a default)."""
    parser = build_parser()
    run = next(a for a in parser._subparsers._group_actions if a.dest == "command").choices["run"]  # type: ignore[union-attr]
    by_option = run._option_string_actions
    given = set()
    for word in argv:
        if word == "--":
            break
        action = by_option.get(word.split("=", 1)[0]) if word.startswith("--") else None
        if action is not None:
            given.add(action.dest)
    return given


def _remembered(ns: argparse.Namespace, argv: Sequence[str]) -> dict[str, Any] | None:
    """Fill `ns` from how the job in `--state` was started: INPUT, `--out` and every flag this command
    leaves out take the remembered values (never their defaults); the flags it gives apply. Returns the
    job's remembered invocation (None: a new state dir, or one made before judgecore remembered)."""
    from adapters.store import Store

    kept = None
    if _holds_checkpoint(ns.state):
        store = Store.open_readonly(ns.state)
        try:
            kept = store.get_meta("invocation")
        finally:
            store.close()
    if kept is None:
        if ns.input is None and getattr(ns, "from_inspect", None) is None:
            where = f"--state {ns.state} holds no job started by this judgecore" if ns.state else "no --state"
            raise UsageError(
                f"INPUT is required, or --from-inspect LOG ({where} to resume without it); "
                "see: judgecore run --help"
            )
        return None
    given = _run_flags_given(argv)
    if given & {"force_sync", "force_batch"}:  # one given anew replaces the remembered other
        given |= {"force_sync", "force_batch"}
    for dest, value in kept["flags"].items():
        if dest not in given and dest not in _NOT_REMEMBERED and hasattr(ns, dest):
            path = dest in ("rubric", "verdict", "from_inspect", "template") and value is not None
            setattr(ns, dest, Path(value) if path else value)
    if ns.input is None and getattr(ns, "from_inspect", None) is None:
        ns.input = Path(kept["input"])
    if "out" not in given and kept.get("out"):
        ns.out = Path(kept["out"])
    return kept


def _invocation(ns: argparse.Namespace, out: Path) -> dict[str, Any]:
    """How this run was started, to remember in the checkpoint: absolute paths, every flag's value."""
    flags = {}
    for dest, value in vars(ns).items():
        if dest in _NOT_REMEMBERED:
            continue
        flags[dest] = str(value.resolve()) if isinstance(value, Path) else value
    return {"input": str(ns.input.resolve()), "out": str(out.resolve()), "flags": flags}


def _check_manifest(ns: argparse.Namespace, kept: dict[str, Any] | None, manifest: dict[str, Any]) -> None:
    """A flag that shapes what a request asks and differs from how the job was started is exit 2,
    naming the flag, the old and the new value and the two ways out, before anything is read or sent."""
    from adapters.store import Store

    if not _holds_checkpoint(ns.state):
        return
    store = Store.open_readonly(ns.state)
    try:
        old = store.get_meta("manifest")
    finally:
        store.close()
    if old is None or old == manifest:
        return
    key = next(k for k in (*_FLAG_OF, *sorted(set(old) | set(manifest))) if old.get(k) != manifest.get(k))
    flag = _FLAG_OF.get(key, key)
    flags = (kept or {}).get("flags", {})
    dest = {"--rubric": "rubric", "--verdict": "verdict", "--template": "template"}.get(flag)
    was = flags.get(dest) if dest else None
    old_v = f"{was} ({key} {old.get(key)})" if was else old.get(key)
    new_v = f"{getattr(ns, dest, None)} ({key} {manifest.get(key)})" if dest else manifest.get(key)
    raise UsageError(
        f"{flag}: the job in {ns.state} was started with {old_v}, this run asks {new_v}: that is "
        f"another job. Leave {flag} out to resume the job as it was started, or point --state at a "
        "new directory to start a new job (nothing was sent)"
    )


def cmd_run(ns: argparse.Namespace, argv: Sequence[str]) -> int:
    from adapters.job import load_items
    from adapters.messages import boxed

    kept = _remembered(ns, argv)
    kind = _input_of(ns)
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
    _check_run_paths(ns, out)
    rubric = _read_rubric(ns.rubric)
    _check_manifest(ns, kept, settings.manifest(rubric))
    done = None
    if not ns.dry_run and kind is None:  # a finished job run again as it was: its closing lines
        from adapters import finished

        assert out is not None
        flags = [v for k, v in vars(ns).items() if k not in _NOT_REMEMBERED]  # --rubric, --verdict...
        done = finished.key(_invocation(ns, out), [ns.input, *finished.files_of(flags)])
        if done is not None and (lines := finished.lines_if_finished(ns.state, done, out)) is not None:
            print("every item is final already: nothing to send, nothing read again", file=sys.stderr)
            for line in lines:
                print(line, file=sys.stderr)
            return EXIT_OK
    # No messages held: a run reads them from the input again to keep them in its checkpoint; a dry
    # run needs the sizes, and the digests only to check an existing checkpoint.
    from adapters.store import Store, ids_job_for

    digests = not ns.dry_run or Store.exists(ns.state or Path())
    ids_job = ids_job_for(ns.state, settings.manifest(rubric))  # the custom_ids are the job's own
    design = settings.design
    if design.single and design.template is None:
        held = bool(ns.dry_run and ns.count_tokens)  # one prompt is counted: the messages are needed
        items = boxed(load_items(ns.input, hold_messages=held, digests=digests, job=ids_job, kind=kind))
    else:  # each row expanded into its requests (judgecore.designs), their messages built and held
        from adapters.items_io import load_design_items

        items = boxed(load_design_items(ns.input, design, job=ids_job, kind=kind))
    if ns.dry_run:
        return _dry_run(ns, items, rubric, settings)
    assert out is not None  # a run has a --state
    if kind == "inspect":
        _remember_inspect_log(ns.state, ns.input)
    return _run(ns, argv, items, rubric, settings, out, done)


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
    from adapters.store import Store

    store = Store.open(state)
    try:
        store.set_meta("inspect_log", str(log.resolve()))
    finally:
        store.close()


def cmd_export(ns: argparse.Namespace) -> int:
    from adapters.inspect_log import export_to_inspect

    if problem := existing_state_problem(ns.state):
        raise UsageError(problem)
    scored, n = export_to_inspect(ns.state, ns.to_inspect, log_path=ns.from_inspect)
    print(f"{ns.to_inspect}: {n:,} sample(s), {scored:,} with a numeric judgecore score", file=sys.stderr)
    return EXIT_OK


def _dry_run(ns: argparse.Namespace, items: Items, rubric: str | None, settings: JobSettings) -> int:
    """Print the plan: `judge_dry_run`, with no event loop."""
    from adapters.job import judge_dry_run
    from judgecore.planning import plan_json, render_plan

    result = judge_dry_run(
        items, rubric=rubric, state_dir=ns.state or Path(), settings=settings, count_tokens=ns.count_tokens
    )
    assert result.plan is not None
    if ns.json:
        import orjson

        sys.stdout.write(orjson.dumps(plan_json(result.plan), option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        sys.stdout.write(render_plan(result.plan))
    return EXIT_OK


def _run(
    ns: argparse.Namespace,
    argv: Sequence[str],
    items: Items,
    rubric: str | None,
    settings: JobSettings,
    out: Path,
    done: finished.FinishedKey | None = None,
) -> int:
    """Run (or resume) the job through `ajudge`, with progress on stderr, Ctrl-C and SIGTERM kept safe;
    a run that finishes the job keeps the finished-job record `done` (`adapters.finished`)."""
    import asyncio
    import contextlib
    import signal

    from adapters import finished
    from adapters.job import ajudge
    from adapters.progress import plural, stderr_progress

    resume = command_line(argv)
    terminated: list[int] = []

    async def judged() -> JudgeResult:
        # SIGTERM cancels the run the way asyncio.run's own Ctrl-C does: the main task is cancelled at
        # an await, never interrupted at an arbitrary bytecode (where a KeyboardInterrupt raised from a
        # signal handler could land in the event loop's own code and leave its shutdown waiting).
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGTERM, lambda: (terminated.append(signal.SIGTERM), task.cancel()))
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

    finished.clear(ns.state)
    with contextlib.ExitStack() as stack:
        emit = stderr_progress(stack)
        try:
            result = asyncio.run(judged())
        except (KeyboardInterrupt, _Terminated):
            stack.close()
            _write_after_interrupt(items, ns.state, out, settings.verdict, settings.design)
            what = "terminated" if terminated else "interrupted"
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
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    c = result.counts
    summary = ", ".join(f"{k} {v:,}" for k, v in c.items())
    closing = [f"{summary}; output: {out}"]
    if result.cache_hit_rate is not None:
        closing.append(f"prompt cache hit rate: {result.cache_hit_rate:.1%}")
    closing.append(_spend_line(result.spend_usd, result.all_sync_usd, result.estimate_usd))
    from judgecore.summary import unreadable_warning

    if settings.verdict is not None and (
        warning := unreadable_warning(result.unparsed, result.counts.get("succeeded", 0))
    ):
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
    if result.exit_code == EXIT_PENDING:
        print(f"{plural(c['pending'], 'item')} pending; resume with:\n  {resume}", file=sys.stderr)
    return result.exit_code


def _check_run_paths(ns: argparse.Namespace, out: Path | None) -> None:
    """Every path `run` will read or write, checked before anything is read, created or sent."""
    flag = "--from-inspect" if ns.from_inspect is not None else "INPUT"
    if ns.input.is_dir():  # a saved dataset, or exit 2 before the state dir is made
        from adapters.readers import input_kind

        input_kind(ns.input)
    problem = None if ns.input.is_dir() else input_problem(ns.input, flag)
    if problem is None and ns.rubric is not None:
        problem = input_problem(ns.rubric, "--rubric")
    if problem is None and ns.state is not None:
        problem = state_problem(ns.state, create=not ns.dry_run)
    if problem is None and out is not None and not ns.dry_run:
        inputs = (ns.input,) + ((ns.rubric,) if ns.rubric is not None else ())
        problem = out_problem(out, inputs=inputs, state=ns.state)
    if problem is None and out is not None and not ns.dry_run:
        from adapters.writers import output_problem

        problem = output_problem(out)  # a Parquet output whose extra is missing
    if problem:
        raise UsageError(problem)


# The project this code runs from, when it runs from a source checkout (not an installed wheel).
_SOURCE_ROOT = Path(__file__).resolve().parents[1]
PROJECT: Path | None = _SOURCE_ROOT if (_SOURCE_ROOT / "pyproject.toml").is_file() else None


def launcher(
    *,
    argv0: str,
    executable: str,
    environ: Mapping[str, str],
    cwd: Path,
    project: Path | None,
    which: Callable[[str], str | None] = shutil.which,
) -> list[str]:
    """The words that start judgecore again the way this process was started, from `cwd`.

    `uv run` from a checkout gives `uv run [--project DIR] judgecore` (`--project`, not `--directory`,
    so relative paths in the arguments still mean what they meant); `python -m adapters.cli` gives the
    same interpreter; an installed `judgecore` gives `judgecore` when that is the one on PATH, else
    its full path.
    """
    start = Path(argv0)
    as_module = start.parent.name == "adapters" and start.name in ("cli.py", "__main__.py")
    if "UV" in environ and project is not None:
        inside = cwd.resolve().is_relative_to(project.resolve())
        uv = ["uv", "run"] + ([] if inside else ["--project", str(project)])
        return uv + (["python", "-m", "adapters.cli"] if as_module else ["judgecore"])
    if as_module:
        on_path = which("python")
        python = (
            "python" if on_path and Path(on_path).absolute() == Path(executable).absolute() else executable
        )
        return [python, "-m", "adapters.cli"]
    if start.name == "judgecore":
        on_path = which("judgecore")
        same = on_path is not None and Path(on_path).absolute() == (cwd / start).absolute()
        return ["judgecore"] if same or start == Path("judgecore") else [str((cwd / start).absolute())]
    return ["judgecore"]  # called in-process (tests, another program): the console script's name


def command_line(argv: Sequence[str]) -> str:
    """`judgecore ARGV` as this process was started (see `launcher`), quoted for a POSIX shell: the
    resume command, or any other judgecore command to print, as it works where it is printed."""
    words = launcher(
        argv0=sys.argv[0], executable=sys.executable, environ=os.environ, cwd=Path.cwd(), project=PROJECT
    )
    return shlex.join([*words, *argv])


def _write_after_interrupt(
    items: Any, state: Path, out: Path, verdict: Any = None, design: Any = None
) -> None:
    """After Ctrl-C or SIGTERM, write the output from the checkpoint (pending where not final)."""
    from adapters.job import collect_records
    from adapters.store import Store
    from adapters.writers import write_records

    store = Store.open(state)
    try:
        records = collect_records(store, items, verdict, design)
    finally:
        store.close()
    write_records(out, records.values())


def _existing_state(state: Path) -> None:
    """`--state` for `status` and `cancel`: a directory holding a checkpoint."""
    from adapters.store import Store

    if problem := existing_state_problem(state):
        raise UsageError(problem)
    if not Store.exists(state):
        raise UsageError(f"--state {state}: no judgecore checkpoint here")


def cmd_status(ns: argparse.Namespace) -> int:
    import orjson

    from adapters.store import Store

    _existing_state(ns.state)
    store = Store.open(ns.state)
    try:
        subs = store.sub_batches()
        info = {
            "state": str(ns.state),
            "manifest": store.get_meta("manifest"),
            "route": store.get_meta("route"),
            "rate_limits": store.get_meta("rate_limits"),
            "resume": command_line(["run", "--state", str(ns.state)])
            if store.get_meta("invocation")
            else None,
            "counts": _counts_with_verdicts(store),
            "design": store.get_meta("design"),
            **_spend_json(store),
            "sub_batches": [
                {
                    "sub_id": r.sub_id,
                    "round": r.round,
                    "batch_id": r.batch_id,
                    "requests": r.n,
                    "bytes": r.bytes,
                    "state": r.state,
                    "expires_at": r.expires_at,
                    "note": r.note,
                }
                for r in subs
            ],
        }
    finally:
        store.close()
    c = info["counts"]
    code = EXIT_PENDING if c.get("pending") else EXIT_OK
    if ns.json:
        sys.stdout.write(orjson.dumps(info, option=orjson.OPT_INDENT_2).decode() + "\n")
        return code
    total = sum(c.values())
    route = info["route"] or {}
    design = info["design"]
    per = _per_item(design)
    head = f"{total // per:,} items, {total:,} requests (counted below)" if design else f"{total:,} items"
    lines = [
        f"job in {ns.state}: {head}",
        "  " + ", ".join(f"{k} {v:,}" for k, v in c.items()),
        f"  route: {route.get('path', 'not decided yet')}" + (f" ({route.get('reason')})" if route else ""),
    ]
    lines.append("  " + _spend_line(info["spend_usd"], info["all_sync_usd"], info["estimate_usd"]))
    rl = info["rate_limits"] or {}
    if rl.get("output_tokens_limit"):
        lines.append(f"  tier: {rl['output_tokens_limit']:,} output tokens/min (read from the probe)")
    by_state: dict[str, int] = {}
    for r in subs:
        by_state[r.state] = by_state.get(r.state, 0) + 1
    if subs:
        lines.append("  sub-batches: " + ", ".join(f"{k} {v}" for k, v in sorted(by_state.items())))
        for r in subs:
            if r.state in ("intent", "live", "ended", "stuck", "canceled"):
                lines.append(
                    f"    #{r.sub_id} {r.batch_id or '(create unconfirmed)'} {r.n:,} requests: {r.state}"
                )
    if info["resume"] and c.get("pending"):
        lines.append(f"  resume with: {info['resume']}")
    print("\n".join(lines))
    return code


def _per_item(design: dict[str, Any] | None) -> int:
    """Requests per item of a checkpoint's kept design (1 without one)."""
    if not design:
        return 1
    from judgecore.designs import Design

    return Design.from_json(design).per_item


def cmd_cancel(ns: argparse.Namespace) -> int:
    import asyncio

    from adapters.batch import cancel_job
    from adapters.batch_api import AnthropicBatchApi
    from adapters.clock import RealClock
    from adapters.job import _default_client
    from adapters.progress import PlainProgress, plural
    from adapters.statelock import StateLockedError
    from adapters.store import Store

    _existing_state(ns.state)
    client = _default_client(os.environ)
    try:
        store = Store.open(ns.state, exclusive="cancel")  # not while a run uses the state dir
    except StateLockedError as exc:
        raise UsageError(str(exc)) from None
    try:
        canceled = asyncio.run(
            cancel_job(store=store, api=AnthropicBatchApi(client), clock=RealClock(), emit=PlainProgress())
        )
    finally:
        store.close()
    n = len(canceled)
    print(
        f"canceled {plural(n, 'live batch', 'live batches')}; a later run with --state {ns.state} resumes the rest",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_simulator(ns: argparse.Namespace) -> int:
    from adapters.simulator import Simulator, run_server_forever, scenario_from_args

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


# -- scores, spend and the summary (issue 10) ----------------------------------------------------------

SUMMARY_EPILOG = """\
scored, unscored and missing come first: the score's statistics are over the scored items only.
  scored     the verdict has a score
  unscored   the model answered but there is no score (VERDICT_UNPARSED, MODEL_TRUNCATION, ...)
  missing    no answer to read (quarantined, pending)

examples:
  judgecore summary --state runs/j1
  judgecore summary --state runs/j1 --by model --reference gold --html report.html
  judgecore summary --state runs/j1 --verdict new-pattern.json --json     # re-read the answers
  judgecore summary --state runs/j1 --by model --markdown                 # tables to paste
"""


def _budget(text: str) -> float:

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected US dollars, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite amount > 0, got {text!r}")
    return value


def _add_scoring_arguments(run: argparse.ArgumentParser) -> None:
    g = run.add_argument_group("scores and spend")
    g.add_argument(
        "--verdict",
        type=Path,
        metavar="FILE",
        help='how to read each answer\'s verdict: a JSON file {"schema": {...}} (structured outputs, '
        'sent with every request) or {"pattern": "REGEX"} (named groups; the last match counts), '
        'optionally with "score": "FIELD" (default "score")',
    )
    g.add_argument(
        "--budget",
        type=_budget,
        metavar="USD",
        help="a hard cap on what the job spends, in US dollars (needs a model with known prices): sent in "
        "rounds as real costs replace the bounds; with --dry-run, whether the estimate fits",
    )


def _pairwise_flag(text: str) -> tuple[str, str]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(parts):
        raise argparse.ArgumentTypeError(f"expected two field names A,B, got {text!r}")
    return (parts[0], parts[1])


def _add_design_arguments(run: argparse.ArgumentParser) -> None:
    g = run.add_argument_group(
        "judge designs (docs/designs.md)",
        "An item may ask more than one request: each is checkpointed, resumed, routed, budgeted and "
        "billed on its own, and the output folds them back into one line per item.",
    )
    g.add_argument(
        "--template",
        type=Path,
        metavar="FILE",
        help="the user turn: a text file with {field} placeholders filled from each row (Python format "
        "syntax, {{ for a brace); a row is then `id` plus any fields, the unused ones its metadata",
    )
    g.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="K",
        help="K requests per item (1..20); the verdict is the majority label or the median number, "
        "with `samples` and `agreement` in the output (default: %(default)s)",
    )
    g.add_argument(
        "--pairwise",
        type=_pairwise_flag,
        metavar="A,B",
        help="the row's fields A and B are two answers, named {first} and {second} in the template; "
        "each item is judged in both orders and a win counts only when they agree",
    )
    g.add_argument(
        "--judge",
        dest="judges",
        action="append",
        metavar="MODEL",
        help="a panel: repeat for each judge model; every item is judged by each, `judges` maps each "
        "model to its verdict and the verdict is the panel's majority (or median)",
    )


def _read_template(path: Path | None, *, pairwise: bool = False) -> str | None:
    """The text of `--template FILE`, checked here so that every error names the file."""
    if path is None:
        return None
    text = _read_flag_file(path, "--template")
    from judgecore.designs import FIRST, SECOND, DesignError, template_fields

    try:
        names = template_fields(text)
    except DesignError as exc:
        raise UsageError(f"{path}: {exc} (--template)") from None
    if pairwise and not {FIRST, SECOND} <= set(names):
        missing = " and ".join(f"{{{n}}}" for n in (FIRST, SECOND) if n not in names)
        raise UsageError(
            f"{path}: with --pairwise, the template names the two answers {{first}} and {{second}} "
            f"({missing} missing) (--template)"
        )
    return text


def _add_summary_parser(sub: Any) -> None:
    su = sub.add_parser(
        "summary",
        help="a job's scores, failures and spend (no API call)",
        description="Summarise a job from its checkpoint alone: counts by status and failure class, the "
        "score's statistics, groups, agreement with a reference, and spend. No API call, no key needed.",
        epilog=SUMMARY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    su.add_argument("--state", type=Path, required=True, metavar="DIR")
    su.add_argument(
        "--verdict", type=Path, metavar="FILE", help="read verdicts with this spec (default: the run's)"
    )
    su.add_argument("--by", metavar="KEY", help="one row per value of metadata[KEY]")
    su.add_argument(
        "--reference", metavar="KEY", help="compare the score with metadata[KEY] (agreement, kappa)"
    )
    su.add_argument("--json", action="store_true", help="one JSON object")
    su.add_argument(
        "--markdown", action="store_true", help="the headline tables as Markdown (for a paper draft or a PR)"
    )
    su.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")


def _verdict_spec(path: Path | None) -> Any:
    if path is None:
        return None
    from adapters.summary import read_verdict_file

    return read_verdict_file(path)


def _usd(x: float | None) -> str:
    return "unknown" if x is None else f"${x:,.4f}" if x < 1 else f"${x:,.2f}"


def _spend_line(spend: float | None, all_sync: float | None, estimate: float | None) -> str:
    return (
        f"spend so far {_usd(spend)} (all-sync would have cost {_usd(all_sync)}; estimated {_usd(estimate)})"
    )


def _live_batches(state: Path) -> list[str]:
    """The ids of the job's batches still running on the API side, from the checkpoint."""
    from adapters.store import Store

    store = Store.open_readonly(state)
    try:
        return [r.batch_id for r in store.sub_batches() if r.state == "live" and r.batch_id]
    finally:
        store.close()


def _counts_with_verdicts(store: Any) -> dict[str, int]:
    from adapters.summary import counts_with_verdicts

    return counts_with_verdicts(store, store.counts())


def _spend_json(store: Any) -> dict[str, float | None]:
    from adapters.summary import spend_from_store

    m = spend_from_store(store)
    return {"spend_usd": m.spend_usd, "all_sync_usd": m.all_sync_usd, "estimate_usd": m.estimate_usd}


def cmd_summary(ns: argparse.Namespace) -> int:
    from adapters.summary import job_report, summary_json
    from judgecore.summary import render_summary, unreadable_warning

    if ns.json and ns.markdown:
        raise UsageError("--json and --markdown: choose one")
    report = job_report(
        ns.state, verdict_path=ns.verdict, by=ns.by, reference=ns.reference, full=ns.html is not None
    )
    overall = report.summary.overall
    unparsed = dict(overall.classes).get("VERDICT_UNPARSED", 0)
    if report.summary.verdict_kind is not None and (warning := unreadable_warning(unparsed, overall.scored)):
        print(f"warning: {warning}", file=sys.stderr)
    if ns.json:
        sys.stdout.write(summary_json(report).decode() + "\n")
    elif ns.markdown:
        from judgecore.headline import render_markdown

        sys.stdout.write(render_markdown(report.summary, title=f"job in {ns.state}"))
    else:
        sys.stdout.write(render_summary(report.summary, title=f"job in {ns.state}"))
    if ns.html is not None:
        from adapters.html_report import write_html_report

        write_html_report(ns.html, report)
        sys.stdout.flush()
        print(f"report: {ns.html}", file=sys.stderr)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    keep_bytecode()  # the command's own start did it already; `main()` called by another program does it here
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    ns = parser.parse_args(argv)
    try:
        match ns.command:
            case "run":
                return cmd_run(ns, argv)
            case "status":
                return cmd_status(ns)
            case "cancel":
                return cmd_cancel(ns)
            case "summary":
                return cmd_summary(ns)
            case "export":
                return cmd_export(ns)
            case "demo":
                from adapters.demo import run_demo

                if ns.dir is not None and (problem := directory_problem(ns.dir, "--dir", probe=True)):
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
    parser.error(f"unknown command {ns.command!r}")  # pragma: no cover
    return EXIT_USAGE  # pragma: no cover


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
