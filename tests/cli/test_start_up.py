"""What each command imports, as the `judgecore` command runs it (`python -X importtime -m adapters.cli`):
`--help`, `status` and a dry run load only what they use, never the SDK, the event loop, the simulator
or the run machines (issue 11: their start-up is most of their time)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.run.job import JobSettings, load_items

ROOT = Path(__file__).resolve().parents[2]

#: What no small command needs: the SDK and its HTTP client, the event loop, the simulator (http.server,
#: ssl), the batch and sync run machines and paths, the summary's statistics.
HEAVY = (
    "anthropic",
    "httpx",
    "asyncio",
    "adapters.simulator",
    "adapters.run.batch",
    "adapters.run.sync",
    "judgecore.run.batch",
    "judgecore.run.sync",
    "judgecore.summary.job_summary",
)


#: What a dry run on a fresh state dir (or none) does not need either, each a few milliseconds of its
#: start (issue 21): the checkpoint's package (it asks only whether the dir holds one), the
#: classification of results (the plan reads `judgecore.results.status`), the words of a command to run
#: again (`shlex`), the judge designs (a job of one request per item is `JobSettings.plain`), and
#: the job machine's actions and events (a dry run asks `JobRun.dry_run` alone).
RUN_ONLY = (
    "adapters.checkpoint.store",
    "judgecore.results.outcomes",
    "judgecore.decide.resume",
    "adapters.cli.relaunch",
    "shlex",
    "judgecore.job.designs",
    "judgecore.run.job._vocab",
)


def imported(args: list[str]) -> set[str]:
    """The modules `judgecore ARGS` imports, read from the interpreter's own import trace."""
    res = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "adapters.cli", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert res.returncode in (0, 3), res.stderr[-2000:]
    trace = [
        line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")
    ]
    assert "adapters" in trace, res.stderr[-2000:]
    return set(trace)


def loaded(args: list[str], watched: tuple[str, ...]) -> list[str]:
    """Which of `watched` `judgecore ARGS` imports."""
    mods = imported(args)
    return sorted(m for m in watched if m in mods)


@pytest.fixture
def job(tmp_path: Path) -> tuple[Path, Path]:
    items = tmp_path / "items.jsonl"
    items.write_bytes(
        b"".join(orjson.dumps({"id": f"q{i}", "prompt": f"grade {i}"}) + b"\n" for i in range(10))
    )
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade strictly.")
    return items, rubric


def _bound(state: Path, items: Path, rubric: Path) -> Path:
    """A checkpoint bound to the job, as a first run leaves it before it sends anything."""
    store = Store.open(state)
    try:
        manifest = JobSettings().manifest(rubric.read_text())
        store.bind_job(manifest, ((i.custom_id, i.id, i.digest) for i in load_items(items)))
    finally:
        store.close()
    return state


def test_a_dry_run_on_a_fresh_state_dir_imports_no_sqlite_event_loop_sdk_or_run_machine(job, tmp_path):
    items, rubric = job
    args = [
        "run",
        str(items),
        "--rubric",
        str(rubric),
        "--state",
        str(tmp_path / "new"),
        "--dry-run",
        "--json",
    ]
    assert [] == loaded(args, (*HEAVY, "sqlite3", *RUN_ONLY))
    assert not (tmp_path / "new").exists()


def test_a_dry_run_without_state_and_in_text_imports_neither(job, tmp_path):
    items, rubric = job
    watched = (*HEAVY, "sqlite3", *RUN_ONLY)
    assert [] == loaded(["run", str(items), "--rubric", str(rubric), "--dry-run"], watched)


def test_a_dry_run_on_an_existing_checkpoint_reads_it_with_sqlite_and_nothing_heavier(job, tmp_path):
    items, rubric = job
    state = _bound(tmp_path / "s", items, rubric)
    args = ["run", str(items), "--rubric", str(rubric), "--state", str(state), "--dry-run"]
    assert ["sqlite3"] == loaded(args, (*HEAVY, "sqlite3"))


def test_help_imports_neither_the_job_nor_the_core():
    watched = (*HEAVY, "sqlite3", "adapters.run.job", "judgecore", "attrs", "orjson")
    assert [] == loaded(["--help"], watched)
    assert [] == loaded(["run", "--help"], watched)


def test_version_names_judgecore_and_the_sdk_and_imports_neither():
    """`--version` (what a bug report asks for first) is read from the installed packages' metadata."""
    import importlib.metadata

    res = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--version"], capture_output=True, text=True, check=False
    )
    assert 0 == res.returncode, res.stderr
    want = (importlib.metadata.version("judgecore"), importlib.metadata.version("anthropic"))
    assert res.stdout.startswith(f"judgecore {want[0]} (anthropic {want[1]}, Python ")
    assert [] == loaded(["--version"], (*HEAVY, "anthropic", "judgecore", "sqlite3"))
    from adapters.cli.parser import build_parser

    ns = build_parser().parse_args(["run", "items.jsonl", "--state", "s"])
    assert "version" not in vars(ns), "a run's recorded flags carry no --version"


def test_status_reads_the_checkpoint_with_sqlite_and_nothing_heavier(job, tmp_path):
    state = _bound(tmp_path / "s", *job)
    watched = (*HEAVY, "sqlite3", "adapters.run.job", "statistics")
    assert ["sqlite3"] == loaded(["status", "--state", str(state)], watched)
    assert ["sqlite3"] == loaded(["status", "--state", str(state), "--json"], watched)


def test_the_checks_see_a_heavy_import():
    """The trace these tests read does show what a command imports: `simulator --help` loads the
    simulator, whose arguments are declared only when that command is used."""
    assert ["adapters.simulator"] == loaded(["simulator", "--help"], ("adapters.simulator",))


def test_simulator_help_still_lists_the_simulators_options():
    res = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "simulator", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    for flag in ("--port", "--host", "--batch-seconds", "--sync-429-rate"):
        assert flag in res.stdout


@pytest.mark.parametrize(
    ("argv0", "expected"),
    [("-m", False), ("/venv/bin/judgecore", False), ("-c", True), ("/app/eval.py", True)],
)
def test_the_command_writes_its_bytecode_from_its_first_module_and_a_program_is_left_alone(argv0, expected):
    """Under PYTHONDONTWRITEBYTECODE=1 in a virtual environment, `python -m adapters.cli` (argv[0] is
    "-m" while its package is imported) and the console script write bytecode from `adapters` on, so
    `adapters.cli` is not compiled again at every start; another program importing `adapters` keeps
    the setting it was given."""
    code = f"import sys; sys.argv[0] = {argv0!r}; import adapters; print(sys.dont_write_bytecode)"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True
    )
    assert sys.prefix != sys.base_prefix, "the tests run in the project's virtual environment"
    assert str(expected) == res.stdout.strip()


def test_the_commands_defaults_are_the_libraries():
    """`--help` shows the defaults without importing the core, so the CLI writes them down: they must
    be the ones `JobSettings` (the Python API) and the core's chunker use."""
    from adapters.cli import build_parser
    from adapters.run.job import JobSettings
    from judgecore.wire.chunking import MAX_BYTES, MAX_REQUESTS

    ns = build_parser().parse_args(["run", "in.jsonl", "--state", "s"])
    lib = JobSettings()
    assert (MAX_REQUESTS, MAX_BYTES) == (ns.max_batch_requests, ns.max_batch_bytes)
    for name in (
        "max_batch_requests",
        "max_batch_bytes",
        "sync_threshold",
        "poll_interval",
        "grace",
        "max_attempts",
    ):
        assert getattr(lib, name) == getattr(ns, name), name
    assert lib.model == ns.model
    # --max-tokens is left to JobSettings (its default depends on the model); --help names both values
    from adapters.usage import DEFAULT_MAX_TOKENS, THINKING_MAX_TOKENS

    assert (None, DEFAULT_MAX_TOKENS) == (ns.max_tokens, lib.max_tokens)
    assert THINKING_MAX_TOKENS == JobSettings(model="claude-opus-5-5").max_tokens


def test_a_run_without_a_verdict_spec_loads_no_statistics(tmp_path):
    """A run's closing lines read the summary's statistics only for a job with verdicts (the warning
    about unreadable verdicts): a run without `--verdict` never imports them."""
    from adapters.simulator import Scenario, Simulator, serve

    items = tmp_path / "items.jsonl"
    items.write_bytes(b"".join(orjson.dumps({"id": f"q{i}", "prompt": "2+2?"}) + b"\n" for i in range(3)))
    with serve(Simulator(Scenario(seed=1))) as srv:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-test")
        run = [
            "run",
            str(items),
            "--state",
            str(tmp_path / "s"),
            "--force-sync",
            "--out",
            str(tmp_path / "o"),
        ]
        res = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "adapters.cli", *run],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
    assert 0 == res.returncode, res.stderr[-2000:]
    trace = {
        line.split("|")[-1].strip() for line in res.stderr.splitlines() if line.startswith("import time:")
    }
    assert {"anthropic", "judgecore.run.sync"} <= trace  # the trace is the run's
    assert [] == sorted(m for m in ("judgecore.summary.job_summary", "statistics") if m in trace)


@pytest.mark.parametrize(
    ("orig_argv", "held"),
    [
        (["python", "-m", "adapters.cli", "run"], True),
        (["python", "-X", "importtime", "-madapters", "run"], True),
        (["python", "-m", "adapters.simulator"], False),
        (["python", "eval.py", "-m", "adapters.cli"], False),
        (["python", "-c", "import adapters"], False),
    ],
)
def test_the_command_alone_starts_without_the_garbage_collector(orig_argv, held):
    """`judgecore` (`python -m adapters.cli`, `python -m adapters`) imports with cyclic garbage
    collection off (issue 21: its passes were about 7 ms of a dry run's start); a program importing
    `adapters`, or running another module, keeps the collector as it was."""
    code = (
        f"import gc, sys; sys.orig_argv = {orig_argv!r}; import adapters; "
        "print(adapters.COLLECTOR_HELD, gc.isenabled())"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert f"{held} {not held}" == res.stdout.strip()


def test_a_dry_run_ends_without_the_collector_and_every_other_command_turns_it_on(job, tmp_path):
    items, rubric = job
    code = (
        "import gc, io, contextlib, sys; sys.orig_argv = ['python', '-m', 'adapters.cli']; "
        "from adapters.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['run', {str(items)!r}, '--rubric', {str(rubric)!r}, '--dry-run', '--json'])\n"
        "off = gc.isenabled()\n"
        f"main(['status', '--state', {str(tmp_path / 'none')!r}])\n"
        "print(off, gc.isenabled())"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "False True" == res.stdout.strip().splitlines()[-1]
