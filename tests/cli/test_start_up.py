"""What a user waits for at each start: `--help`, `--version`, `status` and a dry run never import the SDK
(about two seconds) nor the simulator's HTTP server; only a command that sends does. Read from the
interpreter's own import trace (`python -X importtime -m adapters.cli`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.files.items_io import load_items
from adapters.run.settings import JobSettings

ROOT = Path(__file__).resolve().parents[2]

#: What no command that sends nothing needs: the SDK and its HTTP client, the simulator (http.server).
HEAVY = ("anthropic", "httpx", "httpx2", "adapters.simulator")


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


def test_a_dry_run_on_a_fresh_state_dir_imports_no_sdk_and_creates_nothing(job, tmp_path):
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
    assert [] == loaded(args, HEAVY)
    assert not (tmp_path / "new").exists()


def test_a_dry_run_without_state_and_in_text_imports_no_sdk(job, tmp_path):
    items, rubric = job
    assert [] == loaded(["run", str(items), "--rubric", str(rubric), "--dry-run"], HEAVY)


def test_a_dry_run_on_an_existing_checkpoint_imports_no_sdk(job, tmp_path):
    items, rubric = job
    state = _bound(tmp_path / "s", items, rubric)
    args = ["run", str(items), "--rubric", str(rubric), "--state", str(state), "--dry-run"]
    assert [] == loaded(args, HEAVY)


def test_help_imports_no_sdk():
    assert [] == loaded(["--help"], HEAVY)
    assert [] == loaded(["run", "--help"], HEAVY)


def test_version_names_judgecore_and_the_sdk_without_importing_the_sdk():
    """`--version` (what a bug report asks for first) is read from the installed packages' metadata."""
    import importlib.metadata

    res = subprocess.run(
        [sys.executable, "-m", "adapters.cli", "--version"], capture_output=True, text=True, check=False
    )
    assert 0 == res.returncode, res.stderr
    want = (importlib.metadata.version("judgecore"), importlib.metadata.version("anthropic"))
    assert res.stdout.startswith(f"judgecore {want[0]} (anthropic {want[1]}, Python ")
    assert [] == loaded(["--version"], HEAVY)
    from adapters.cli.parser import build_parser

    ns = build_parser().parse_args(["run", "items.jsonl", "--state", "s"])
    assert "version" not in vars(ns), "a run's recorded flags carry no --version"


def test_status_imports_no_sdk(job, tmp_path):
    state = _bound(tmp_path / "s", *job)
    assert [] == loaded(["status", "--state", str(state)], HEAVY)
    assert [] == loaded(["status", "--state", str(state), "--json"], HEAVY)


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
    from adapters.run.settings import JobSettings
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


def test_importing_adapters_leaves_the_garbage_collector_alone():
    """A program that imports `adapters` (the Python API) keeps cyclic garbage collection as it was:
    only the `judgecore` command turns it off for its start (`adapters.cli.command`)."""
    code = "import gc, adapters, adapters.cli; print(gc.isenabled())"
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "True" == res.stdout.strip()


def test_a_dry_run_ends_without_the_collector_and_every_other_command_turns_it_on(job, tmp_path):
    """What the command does once it has turned the collector off (`command` passes `collector_held`)."""
    items, rubric = job
    code = (
        "import gc, io, contextlib\n"
        "from adapters.cli import main\n"
        "gc.disable()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    main(['run', {str(items)!r}, '--rubric', {str(rubric)!r}, '--dry-run', '--json'], collector_held=True)\n"
        "off = gc.isenabled()\n"
        f"main(['status', '--state', {str(tmp_path / 'none')!r}], collector_held=True)\n"
        "print(off, gc.isenabled())"
    )
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert "False True" == res.stdout.strip().splitlines()[-1]


def test_a_dry_run_loads_the_deadlines_rule_only_with_deadline(job):
    """Without `--deadline` the dry run's dispatch leaves the deadline's rule (and the polling it
    reasons with) unloaded, and the run's event loop and progress view always."""
    items, rubric = job
    watched = ("judgecore.decide.deadline", "judgecore.decide.polling", "asyncio", "rich")
    plain = ["run", str(items), "--rubric", str(rubric), "--dry-run"]
    assert [] == loaded(plain, watched)
    assert ["judgecore.decide.deadline", "judgecore.decide.polling"] == loaded(
        [*plain, "--deadline", "2h"], watched
    )


#: What a dry run of a new job needs none of: the checkpoint (the store and SQLite), its reads, and the
#: run's side of the plan and the messages (`adapters.cli.resumed`, `adapters.run.dryrun`, ...).
CHECKPOINT = (
    "sqlite3",
    "adapters.checkpoint.store",
    "adapters.checkpoint.reads",
    "adapters.checkpoint.jobkey",
    "adapters.cli.resumed",
    "adapters.files.checkpointed",
    "adapters.run.dryrun",
    "adapters.run.planning_run",
)


#: What only a run that sends (or reads results) uses, which a dry run's plan does not: the output
#: writers and the output line (with the outcomes' vocabulary), the sync route's pacing, OpenAI's
#: request body and sync template (a run builds them when it connects).
RUN_ONLY = (
    "adapters.files.writers",
    "judgecore.results.output_line",
    "judgecore.results.outcomes",
    "judgecore.decide.ratelimit",
    "adapters.providers.openai.body",
    "adapters.providers.openai.sync_template",
)


def test_a_dry_run_loads_none_of_what_only_a_run_uses(job, tmp_path):
    items, rubric = job
    args = ["run", str(items), "--rubric", str(rubric), "--state", str(tmp_path / "new"), "--dry-run"]
    assert [] == loaded(args, RUN_ONLY)
    panel = ["--judge", "claude-sonnet-4-6", "--judge", "openai:gpt-5-mini"]  # an OpenAI lane named too
    assert [] == loaded([*args, *panel], RUN_ONLY)


@pytest.mark.parametrize("state", ["new", None])
def test_a_dry_run_of_a_new_job_loads_no_checkpoint_nor_sqlite(job, tmp_path, state):
    """A fresh state dir (or none) holds no checkpoint to read: the plan is made without the store."""
    items, rubric = job
    args = ["run", str(items), "--rubric", str(rubric), "--dry-run"]
    args += ["--state", str(tmp_path / state)] if state else []
    assert [] == loaded(args, CHECKPOINT)
    assert [] == loaded([*args, "--json"], CHECKPOINT)


def test_a_dry_run_on_an_existing_checkpoint_reads_it(job, tmp_path):
    """The same dry run on a dir holding the job's checkpoint reads it (and so does load the store):
    the check above is of a path taken, not of a store that is never read."""
    items, rubric = job
    state = _bound(tmp_path / "s", items, rubric)
    args = ["run", str(items), "--rubric", str(rubric), "--state", str(state), "--dry-run"]
    assert ["adapters.checkpoint.store", "adapters.cli.resumed", "sqlite3"] == loaded(
        args, ("sqlite3", "adapters.checkpoint.store", "adapters.cli.resumed")
    )


#: What a dry run of a new job, planned as its file is read (`adapters.run.streamed`), needs none of: the
#: items held and the job planned from them (`adapters.cli.held`, `adapters.run.planning`), its plan
#: asked of the machine from a checkpoint's figures (`adapters.run.dryrun_plan`), the lanes' clients
#: and the prompt counted (`--count-tokens`).
HELD = (
    "adapters.cli.held",
    "adapters.run.dryrun_plan",
    "adapters.run.planning",
    "adapters.run.lanes",
    "adapters.providers.anthropic.count_tokens",
)


@pytest.mark.parametrize("state", ["new", None])
def test_a_dry_run_of_a_new_job_loads_nothing_of_the_held_items_path(job, tmp_path, state):
    items, rubric = job
    args = ["run", str(items), "--rubric", str(rubric), "--dry-run"]
    args += ["--state", str(tmp_path / state)] if state else []
    assert [] == loaded(args, HELD)
    assert [] == loaded([*args, "--json", "--deadline", "2h"], HELD)
    assert [] == loaded(args, ("difflib", "heapq"))  # a typo's hint is found without them


def test_a_dry_run_that_holds_its_items_loads_that_path_and_plans_alike(job, tmp_path):
    """A checkpoint to check the items against, or a design (`--samples 2`), takes the held path (the
    check above is of a path not taken, not of a module never used), and its plan is the same as the
    streamed one's where both apply."""
    items, rubric = job
    state = _bound(tmp_path / "s", items, rubric)
    base = ["run", str(items), "--rubric", str(rubric), "--dry-run", "--json"]
    assert list(HELD[:3]) == loaded([*base, "--state", str(state)], HELD[:3])
    assert list(HELD[:3]) == loaded([*base, "--samples", "2"], HELD[:3])

    def plan(extra: list[str]) -> dict:
        res = subprocess.run(
            [sys.executable, "-m", "adapters.cli", *base, *extra],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return orjson.loads(res.stdout)

    streamed, held = plan(["--state", str(tmp_path / "new")]), plan(["--state", str(state)])
    assert streamed["n"] == streamed["to_send"] == 10
    assert streamed == held
    assert plan(["--samples", "2"])["n"] == 20


def test_the_command_loads_its_modules_and_plans_a_dry_run_without_a_collector_pass(job):
    """The console script's function (`adapters.launch.command`) turns the collector off before the CLI's
    modules load, and a dry run ends without it: not one collection pass, though this process asks
    for one at every allocation (the threshold 1); as `python -m adapters` and the console script run."""
    items, rubric = job
    argv = ["judgecore", "run", str(items), "--rubric", str(rubric), "--dry-run", "--json"]
    count = (
        "gc.set_threshold(1)\n"
        "passes = []\n"
        "gc.callbacks.append(lambda phase, info: passes.append(phase))\n"
        "exit = os._exit\n"
        "os._exit = lambda code: (sys.stdout.flush(), print(len(passes), code, file=sys.stderr), exit(0))\n"
    )

    def passes(program: str) -> tuple[int, dict]:
        code = f"import gc, os, sys\nsys.argv = {argv!r}\n{program}"
        res = subprocess.run(
            [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
        )
        n, status = res.stderr.strip().splitlines()[-1].split()
        assert status == "0"
        return int(n), orjson.loads(res.stdout)

    launched, plan = passes(f"import adapters.launch\n{count}adapters.launch.command()")
    assert (launched, plan["n"]) == (0, 10)
    # the CLI imported with the collector on (as a program importing it would) makes passes
    direct, same = passes(f"{count}import adapters.cli\nadapters.cli.command()")
    assert direct > 0
    assert same == plan


def test_a_command_other_than_a_dry_run_runs_with_the_collector_on(tmp_path):
    """`command()` turns the collector on again once it knows the command (here `status`, whose reads
    make cycles), though the console script held it off while the command's modules loaded."""
    code = (
        "import sys; sys.argv = ['judgecore', 'status', '--state', sys.argv[1]]\n"
        "import gc; gc.disable()\n"
        "import adapters.cli, adapters.cli.status as st\n"
        "seen = []\n"
        "def status(ns):\n"
        "    seen.append(gc.isenabled()); return 0\n"
        "st.cmd_status = status\n"
        "import os\n"
        "os._exit = lambda code: (print(seen, code), sys.stdout.flush(), sys.exit(0))\n"
        "adapters.cli.command(collector_held=True)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert "[True] 0" == res.stdout.strip()
