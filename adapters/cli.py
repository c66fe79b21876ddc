"""`judgecore`: the command line, a thin layer over `adapters.job` (see `judgecore --help`)."""

from __future__ import annotations

import argparse
import asyncio
import shlex
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from adapters.job import (
    DEFAULT_MAX_TOKENS,
    DEFAULT_MODEL,
    EXIT_FATAL,
    EXIT_OK,
    EXIT_PENDING,
    EXIT_USAGE,
    JobSettings,
    UsageError,
    ajudge,
    load_items,
)
from judgecore import plan_json, render_plan

EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_TERMINATED = 143  # 128 + SIGTERM

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

output (JSONL, one line per item, input order; default STATE/output.jsonl): id, custom_id,
  status (succeeded | miss | quarantined | pending), route, text, stop_reason, model, usage, error,
  batch_id, attempts, metadata

exit status:
  0  every item is final (succeeded, miss or quarantined)
  2  bad usage or bad input; nothing was sent
  3  some items are pending: rerun the same command to resume
  4  fatal API configuration (authentication, permission, unknown model, every request invalid)
  130 interrupted (Ctrl-C), 143 terminated (SIGTERM): the checkpoint is safe and the output
      written with unfinished items pending; rerun the same command to resume

credentials come from ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL for another endpoint); the key is
never printed, logged or written to disk.

examples:
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --dry-run          # the plan and its cost
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt                    # run (or resume)
  judgecore run items.jsonl --state runs/j1 --rubric rubric.txt --force-sync       # same-day critical run
  judgecore status --state runs/j1
"""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
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
    run.add_argument("input", type=Path, metavar="INPUT.jsonl", help="the items to judge")
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
        default=DEFAULT_MAX_TOKENS,
        metavar="N",
        help="per answer, unless an item sets its own (default: %(default)s)",
    )
    run.add_argument("--out", type=Path, metavar="FILE", help="output JSONL (default: STATE/output.jsonl)")
    g = run.add_argument_group("planning")
    g.add_argument(
        "--dry-run", action="store_true", help="print the plan and its estimated cost; send nothing at all"
    )
    g.add_argument("--json", action="store_true", help="with --dry-run: print the plan as one JSON object")
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
        type=_positive_float,
        default=60.0,
        metavar="SECONDS",
        help="between polls of a batch; fractions allowed (default: %(default)s)",
    )
    b.add_argument(
        "--grace",
        type=_positive_float,
        default=1800.0,
        metavar="SECONDS",
        help="a batch is overdue this long after its expires_at (default: %(default)s)",
    )
    b.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        metavar="N",
        help="sends per item before it stays pending (default: %(default)s)",
    )
    s = run.add_argument_group("sync")
    s.add_argument("--concurrency", type=int, metavar="N", help="requests in flight (default: from the tier)")

    st = sub.add_parser(
        "status",
        help="show a job's checkpoint (no API call)",
        description="Read the checkpoint only; no API call.",
    )
    st.add_argument("--state", type=Path, required=True, metavar="DIR")
    st.add_argument("--json", action="store_true", help="one JSON object")

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

    si = sub.add_parser(
        "simulator",
        help="serve the API simulator on loopback",
        description="Serve a local stand-in for the Messages and Message Batches API, for manual runs and other programs.",
    )
    from adapters.simulator import add_arguments

    add_arguments(si)
    return parser


def _settings(ns: argparse.Namespace) -> JobSettings:
    force = "sync" if ns.force_sync else "batch" if ns.force_batch else None
    return JobSettings(
        model=ns.model,
        max_tokens=ns.max_tokens,
        force=force,
        sync_threshold=ns.sync_threshold,
        otpm=ns.otpm,
        max_batch_requests=ns.max_batch_requests,
        max_batch_bytes=ns.max_batch_bytes,
        poll_interval=ns.poll_interval,
        grace=ns.grace,
        concurrency=ns.concurrency,
        max_attempts=ns.max_attempts,
    )


def _read_rubric(path: Path | None) -> str | None:
    if path is None:
        return None
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (--rubric)") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path}: not UTF-8 ({exc})") from None
    if not text.strip():
        raise UsageError(f"{path}: the rubric is empty")
    return text


def _emitter(stack: Any) -> Any:
    from adapters.progress import LiveProgress, PlainProgress

    if sys.stderr.isatty():
        return stack.enter_context(LiveProgress())
    return PlainProgress()


def cmd_run(ns: argparse.Namespace, argv: Sequence[str]) -> int:
    import contextlib

    try:
        settings = _settings(ns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if ns.json and not ns.dry_run:
        raise UsageError("--json goes with --dry-run (the output file is JSONL already)")
    if ns.state is None and not ns.dry_run:
        raise UsageError("--state DIR is required: it is where the run checkpoints and resumes")
    rubric = _read_rubric(ns.rubric)
    items = load_items(ns.input)
    if ns.dry_run:
        result = asyncio.run(
            ajudge(items, rubric=rubric, state_dir=ns.state or Path(), settings=settings, dry_run=True)
        )
        assert result.plan is not None
        if ns.json:
            sys.stdout.write(orjson.dumps(plan_json(result.plan), option=orjson.OPT_INDENT_2).decode() + "\n")
        else:
            sys.stdout.write(render_plan(result.plan))
        return EXIT_OK
    out = ns.out or ns.state / "output.jsonl"
    resume = "judgecore " + shlex.join(argv)
    terminated = []

    def on_sigterm(signum: int, frame: object) -> None:
        terminated.append(signum)  # a scheduler's SIGTERM ends the run as Ctrl-C does
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_sigterm)
    with contextlib.ExitStack() as stack:
        stack.callback(signal.signal, signal.SIGTERM, previous)
        emit = _emitter(stack)
        try:
            result = asyncio.run(
                ajudge(
                    items,
                    rubric=rubric,
                    state_dir=ns.state,
                    settings=settings,
                    out=out,
                    emit=emit,
                    keep_records=False,  # the output file has them; 90,000 in memory cost ~100 MB
                )
            )
        except KeyboardInterrupt:
            stack.close()
            _write_after_interrupt(items, ns.state, out)
            what = "terminated" if terminated else "interrupted"
            print(
                f"{what}: the checkpoint in {ns.state} is safe. Resume with:\n  {resume}",
                file=sys.stderr,
            )
            return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED
    c = result.counts
    summary = ", ".join(f"{k} {v:,}" for k, v in c.items())
    print(f"{summary}; output: {out}", file=sys.stderr)
    if result.cache_hit_rate is not None:
        print(f"prompt cache hit rate: {result.cache_hit_rate:.1%}", file=sys.stderr)
    if result.fatal:
        print(f"error: fatal API configuration: {result.fatal}; stopped, nothing lost", file=sys.stderr)
        return EXIT_FATAL
    if result.exit_code == EXIT_PENDING:
        print(f"{c['pending']:,} item(s) pending; resume with:\n  {resume}", file=sys.stderr)
    return result.exit_code


def _write_after_interrupt(items: Any, state: Path, out: Path) -> None:
    """After Ctrl-C or SIGTERM, write the output from the checkpoint (pending where not final)."""
    from adapters.job import collect_records, write_output_atomic
    from adapters.store import Store
    from judgecore import output_line

    store = Store.open(state)
    try:
        records = collect_records(store, items)
    finally:
        store.close()
    write_output_atomic(out, (output_line(r) for r in records.values()))


def cmd_status(ns: argparse.Namespace) -> int:
    from adapters.store import Store

    if not Store.exists(ns.state):
        raise UsageError(f"{ns.state}: no judgecore checkpoint here")
    store = Store.open(ns.state)
    try:
        subs = store.sub_batches()
        info = {
            "state": str(ns.state),
            "manifest": store.get_meta("manifest"),
            "route": store.get_meta("route"),
            "rate_limits": store.get_meta("rate_limits"),
            "counts": store.counts(),
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
    lines = [
        f"job in {ns.state}: {total:,} items",
        "  " + ", ".join(f"{k} {v:,}" for k, v in c.items()),
        f"  route: {route.get('path', 'not decided yet')}" + (f" ({route.get('reason')})" if route else ""),
    ]
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
    print("\n".join(lines))
    return code


def cmd_cancel(ns: argparse.Namespace) -> int:
    import os

    from adapters.batch import cancel_job
    from adapters.batch_api import AnthropicBatchApi
    from adapters.clock import RealClock
    from adapters.job import _default_client
    from adapters.progress import PlainProgress
    from adapters.store import Store

    if not Store.exists(ns.state):
        raise UsageError(f"{ns.state}: no judgecore checkpoint here")
    client = _default_client(os.environ)
    store = Store.open(ns.state)
    try:
        canceled = asyncio.run(
            cancel_job(store=store, api=AnthropicBatchApi(client), clock=RealClock(), emit=PlainProgress())
        )
    finally:
        store.close()
    print(
        f"canceled {len(canceled)} live batch(es); a later `judgecore run` with --state {ns.state} resumes the rest",
        file=sys.stderr,
    )
    return EXIT_OK


def cmd_simulator(ns: argparse.Namespace) -> int:
    from adapters.simulator import Simulator, run_server_forever, scenario_from_args

    try:
        scenario = scenario_from_args(ns)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    run_server_forever(Simulator(scenario), ns.host, ns.port)
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
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
            case "demo":
                from adapters.demo import run_demo

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
