"""The command line's grammar and help text: every command, its flags and their defaults, and the
parser that reports a usage error on one line (exit 2)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn

from adapters.cli.helptext import (
    CANCEL_EPILOG,
    DESCRIPTION,
    EXPORT_EPILOG,
    RUN_EPILOG,
    SIMULATOR_EPILOG,
    STATUS_EPILOG,
    SUMMARY_EPILOG,
)
from adapters.usage import DEFAULT_MAX_TOKENS, DEFAULT_MODEL, EXIT_USAGE, THINKING_MAX_TOKENS
from judgecore.job.knobs import BY_NAME, KnobError
from judgecore.job.when import WhenError, parse_when


class _Parser(argparse.ArgumentParser):
    """argparse, with each usage error on one line (no usage banner) and exit 2; a sub-command's
    arguments can be declared when that sub-command is used (`declare_later`), so that declaring
    them does not cost every other command an import."""

    _declare: Callable[[argparse.ArgumentParser], None] | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # no abbreviations: `--stat` is not taken for `--state`, nor `--budge` for `--budget`
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        if message.startswith("argument --") and ": must be " in message:  # a knob out of its range:
            message = message.removeprefix("argument ").replace(": must be ", " must be ", 1)  # as ever
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
        ns, rest = super().parse_known_args(args, namespace)
        for action in self._actions:  # `--max-tokens=--`: argparse drops the `--` and keeps [] unparsed
            if getattr(action.type, "knob", False) and isinstance(getattr(ns, action.dest, None), list):
                self.error(f"argument {action.option_strings[0]}: expected one value")
        return ns, rest

    def format_usage(self) -> str:
        self._declared()
        return super().format_usage()

    def format_help(self) -> str:
        self._declared()
        return super().format_help()


def _deadline(text: str) -> Any:
    """`--deadline WHEN` read (`judgecore.job.when`): a bad value is exit 2, naming the flag."""

    try:
        return parse_when(text)
    except WhenError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _knob(name: str) -> Callable[[str], Any]:
    """The argparse type of the knob `name`: its text parsed and checked against its range, from the
    one table of knobs (`judgecore.job.knobs`, read when a value is given: `--help` loads no core)."""

    def parse(text: str) -> Any:

        try:
            return BY_NAME[name].parse(text)
        except KnobError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    parse.__name__ = name
    parse.knob = True  # type: ignore[attr-defined]
    return parse


class _Version(argparse.Action):
    """`--version`: `adapters.cli.version.version_line`, then exit 0."""

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> NoReturn:
        from adapters.cli.version import version_line  # the option's own module, loaded when it is given

        print(version_line())
        parser.exit(0)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="judgecore", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(  # not a setting: nothing in the namespace, so no run records it
        "--version",
        action=_Version,
        nargs=0,
        dest=argparse.SUPPRESS,
        default=argparse.SUPPRESS,
        help="print judgecore's version, and the SDK's it uses, then exit",
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
    run.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        help="model id, one of judgecore's table of Anthropic models (docs/knobs.md); a typo is exit 2 "
        "with the nearest id (default: %(default)s)",
    )
    run.add_argument(
        "--allow-unknown-model",
        action="store_true",
        help="send a --model or --judge id judgecore's table does not list (a model newer than this "
        "judgecore): the API is then the judge of it, and the plan has no price for it",
    )
    run.add_argument(
        "--max-tokens",
        type=_knob("max_tokens"),
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
        help="output .jsonl, .jsonl.gz, .csv or .parquet (default: STATE/output.jsonl; a relative FILE is "
        "the current directory's, remembered whole unless it lies inside STATE, which it then moves with)",
    )
    run.add_argument(
        "--add-items",
        action="store_true",
        help="let an INPUT that shares no item id with the job in --state join it (without it, exit 2: "
        "most likely the wrong --state)",
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
        type=_knob("sync_threshold"),
        default=2000,
        metavar="N",
        help="jobs of N requests or more go to batches, at 400,000 output tokens/min; scaled by the tier (default: %(default)s)",
    )
    g.add_argument(
        "--otpm",
        type=_knob("otpm"),
        metavar="N",
        help="the tier's output tokens per minute (default: read from one probe request)",
    )
    g.add_argument(
        "--deadline",
        type=_deadline,
        metavar="WHEN",
        help="a duration from this run's start (90s, 45m, 2h) or an ISO 8601 time with its offset: nothing "
        "is sent or waited on past WHEN; what is not final then is pending (exit 3); too close for any "
        "batch, this run goes all sync. Never kept for a rerun",
    )
    b = run.add_argument_group("batches")
    b.add_argument(
        "--max-batch-requests",
        type=_knob("max_batch_requests"),
        default=8000,
        metavar="N",
        help="per sub-batch (default: %(default)s)",
    )
    b.add_argument(
        "--max-batch-bytes",
        type=_knob("max_batch_bytes"),
        default=250_000_000,
        metavar="N",
        help="per sub-batch create body (default: %(default)s; an OpenAI judge's at most 190,000,000)",
    )
    b.add_argument(
        "--keep-files",
        action="store_true",
        help="keep an OpenAI batch's input, output and error files once harvested (default: deleted)",
    )
    b.add_argument(
        "--poll-interval",
        type=_knob("poll_interval"),
        default=60.0,
        metavar="SECONDS",
        help="between polls of a batch; fractions allowed (default: %(default)s)",
    )
    b.add_argument(
        "--grace",
        type=_knob("grace"),
        default=1800.0,
        metavar="SECONDS",
        help="a batch is overdue this long after its expires_at (default: %(default)s)",
    )
    s = run.add_argument_group("sync")
    s.add_argument(
        "--concurrency",
        type=_knob("concurrency"),
        metavar="N",
        help="requests in flight (default: from the tier)",
    )
    r = run.add_argument_group("retries (both routes)")
    r.add_argument(
        "--max-attempts",
        type=_knob("max_attempts"),
        default=3,
        metavar="N",
        help="sends per item per run before it stays pending; a rerun gives it a fresh budget (default: %(default)s)",
    )
    _add_scoring_arguments(run)
    _add_design_arguments(run)

    st = sub.add_parser(
        "status",
        help="show a job's checkpoint (no API call)",
        description="Read the checkpoint only; no API call, no key needed: counts by status, the route, the "
        "spend, and the command that resumes the job.",
        epilog=STATUS_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    st.add_argument("--state", type=Path, required=True, metavar="DIR", help="the job's checkpoint directory")
    st.add_argument("--json", action="store_true", help="one JSON object")

    _add_summary_parser(sub)
    ex = sub.add_parser(
        "export",
        help="write a job's verdicts back as an inspect_ai log (no API call)",
        description="Write the inspect_ai log a job was read from (--from-inspect) with one `judgecore` "
        "score per sample, for `inspect view`. Reads the checkpoint only; no API call.",
        epilog=EXPORT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ex.add_argument("--state", type=Path, required=True, metavar="DIR", help="the job's checkpoint directory")
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
        epilog=CANCEL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ca.add_argument("--state", type=Path, required=True, metavar="DIR", help="the job's checkpoint directory")

    de = sub.add_parser(
        "demo",
        help="a whole job against the embedded simulator (no key, no network)",
        description="Start the simulator on a free loopback port, write a realistic judge job to a temp dir, run it "
        "through the batch path with a few injected faults, then a small sync job, and print a summary.",
    )
    de.add_argument("--n", type=int, default=3000, help="items in the batch job (default: %(default)s)")
    de.add_argument(
        "--dir",
        type=Path,
        metavar="DIR",
        help="where to write the job: a new or empty directory, or an earlier demo's, which it runs again (default: a new temp dir)",
    )

    si: _Parser = sub.add_parser(
        "simulator",
        help="serve the API simulator on loopback",
        description="Serve a local stand-in for the Messages and Message Batches API, for manual runs and other programs.",
        epilog=SIMULATOR_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    si.declare_later(_simulator_arguments)
    return parser


def _simulator_arguments(parser: argparse.ArgumentParser) -> None:
    """The simulator's own options, declared when its command is parsed (the command's dispatch: no
    other command loads the simulator)."""
    from adapters.simulator.cli import add_arguments

    add_arguments(parser)


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
        "--replace-verdict",
        action="store_true",
        help="with --verdict on a job that has answers: use the new spec even when it reads no verdict "
        "from any of them (without it, such a spec is a warning and the job keeps the spec it had)",
    )
    g.add_argument(
        "--budget",
        type=_knob("budget"),
        metavar="USD",
        help="a hard cap on what the job spends, in US dollars (needs a model with known prices): sent in "
        "rounds as real costs replace the bounds; with --dry-run, whether the estimate fits",
    )


def _top(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number of groups, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {text!r}")
    return value


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
        type=_knob("samples"),
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


def _add_summary_parser(sub: Any) -> None:
    su = sub.add_parser(
        "summary",
        help="a job's scores, failures and spend (no API call)",
        description="Summarise a job from its checkpoint alone: counts by status and failure class, the "
        "score's statistics, groups, agreement with a reference, and spend. No API call, no key needed.",
        epilog=SUMMARY_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    su.add_argument("--state", type=Path, required=True, metavar="DIR", help="the job's checkpoint directory")
    su.add_argument(
        "--verdict", type=Path, metavar="FILE", help="read verdicts with this spec (default: the run's)"
    )
    su.add_argument("--by", metavar="KEY", help="one row per value of metadata[KEY]")
    su.add_argument(
        "--top",
        type=_top,
        metavar="N",
        help="with --by, the most groups the text, --markdown and --html show: above N, the N with the most "
        "items and a line saying how many were left out (default: 20; --json lists every group)",
    )
    su.add_argument(
        "--reference", metavar="KEY", help="compare the score with metadata[KEY] (agreement, kappa)"
    )
    su.add_argument(
        "--author",
        metavar="KEY",
        help="metadata[KEY] names the model that wrote each answer (default: model): a panel's "
        "self-preference by author family",
    )
    su.add_argument("--json", action="store_true", help="one JSON object")
    su.add_argument(
        "--markdown", action="store_true", help="the headline tables as Markdown (for a paper draft or a PR)"
    )
    su.add_argument("--html", type=Path, metavar="FILE", help="also write a self-contained HTML report")
