"""Every exit-2 path the CLI has sends nothing: each is run against the simulator over real HTTP, and
the simulator's request log is counted (zero during the failing command), with the knobs of
`judgecore.job.knobs` property-tested the same way: any value out of its range, by flag or environment
variable, is exit 2 with nothing sent.

The paths are enumerated from the code: `test_every_usage_error_site_has_a_case` reads every function
of `adapters/` that raises `UsageError` (exit 2) and checks that a case here reaches it, or that it is
named in `NOT_FROM_THE_CLI` with the reason no command line reaches it.
"""

from __future__ import annotations

import ast
import gzip
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from judgecore.job.knobs import KNOBS, Knob
from tests.integration.conftest import ROOT, cli_in_process, write_items

pytestmark = pytest.mark.integration

ROWS = [{"id": f"q{i}", "prompt": f"grade answer {i}"} for i in range(3)]


class Sim:
    """The simulator, served once for the module; `sent()` counts every request it received."""

    def __init__(self, sim: Simulator, base_url: str) -> None:
        self.sim = sim
        self.base_url = base_url

    def sent(self) -> int:
        return len(self.sim.log)

    def env(self, **extra: str | None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUDGECORE_"))}
        env.update(ANTHROPIC_BASE_URL=self.base_url, ANTHROPIC_API_KEY="sk-test")
        for k, v in extra.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        return env


@pytest.fixture(scope="module")
def sim() -> Iterator[Sim]:
    simulator = Simulator(Scenario(seed=37))
    with serve(simulator) as handle:
        yield Sim(simulator, handle.base_url)


def _answered_job(sim: Sim, d: Path) -> tuple[Path, Path]:
    """A small job run to its end (so answered), its input and its state dir."""
    items = write_items(d / "done.jsonl", ROWS)
    state = d / "done"
    r = cli_in_process(["run", str(items), "--state", str(state), "--force-sync"], env=sim.env())
    assert 0 == r.returncode, r.stderr
    return items, state


# A case: (its name, the function of adapters/ whose `UsageError` it reaches, a builder of the
# command line and the environment's changes, given a fresh directory and the simulator).
Build = Callable[[Path, Sim], tuple[list[str], dict[str, str | None]]]
CASES: list[tuple[str, str, Build]] = []


def case(name: str, site: str) -> Callable[[Build], Build]:
    def add(build: Build) -> Build:
        CASES.append((name, site, build))
        return build

    return add


def _items(d: Path, rows: list[dict] | None = None) -> Path:
    return write_items(d / "in.jsonl", ROWS if rows is None else rows)


def _run(d: Path, *extra: str, items: Path | None = None) -> list[str]:
    return ["run", str(items or _items(d)), "--state", str(d / "s"), *extra]


@case("an unknown flag", "argparse")
def _(d, s):
    return [*_run(d), "--bogus"], {}


@case("an abbreviated flag (--stat)", "argparse")
def _(d, s):
    return ["run", str(_items(d)), "--stat", str(d / "s")], {}


@case("an abbreviated flag (--budge)", "argparse")
def _(d, s):
    return [*_run(d), "--budge", "5"], {}


@case("a knob out of its range, by flag", "argparse")
def _(d, s):
    return [*_run(d), "--concurrency", "0"], {}


@case("a knob out of its range, by environment", "adapters/cli/flags.py::check_environment")
def _(d, s):
    return _run(d), {"JUDGECORE_MAX_CONCURRENCY": "0"}


@case("a model id with a typo", "adapters/cli/run.py::cmd_run")
def _(d, s):
    return [*_run(d), "--model", "claude-sonet-4-6"], {}


@case("another provider's model", "adapters/cli/run.py::cmd_run")
def _(d, s):
    return [*_run(d), "--model", "gpt-4o"], {}


@case("--model with a panel of other judges", "adapters/cli/run.py::cmd_run")
def _(d, s):
    t = d / "t.txt"
    t.write_text("Grade: {prompt}")
    return [*_run(d), "--template", str(t), "--judge", "claude-haiku-4-5", "--model", "claude-opus-4-6"], {}


@case("--json without --dry-run", "adapters/cli/run.py::cmd_run")
def _(d, s):
    return [*_run(d), "--json"], {}


@case("no --state", "adapters/cli/run.py::cmd_run")
def _(d, s):
    return ["run", str(_items(d))], {}


@case("INPUT and --from-inspect", "adapters/cli/run.py::_input_of")
def _(d, s):
    return [*_run(d), "--from-inspect", str(d / "log.eval")], {}


@case("--out a directory", "adapters/cli/run.py::_check_run_paths")
def _(d, s):
    return [*_run(d), "--out", str(d)], {}


@case("a retired model", "adapters/run/settings.py::warnings")
def _(d, s):
    return [*_run(d), "--model", "claude-opus-4-1"], {}


@case("no INPUT, and no job to resume", "adapters/cli/remembered.py::_remembered")
def _(d, s):
    return ["run", "--state", str(d / "s")], {}


@case("another job's answered state dir", "adapters/cli/remembered.py::_check_manifest")
def _(d, s):
    items, state = _answered_job(s, d)
    return ["run", str(items), "--state", str(state), "--model", "claude-haiku-4-5"], {}


@case("an item changed under its id (a run)", "adapters/run/job.py::_run")
def _(d, s):
    items, state = _answered_job(s, d)
    write_items(items, [{**ROWS[0], "prompt": "changed"}, *ROWS[1:]])
    return ["run", str(items), "--state", str(state)], {}


@case("an item changed under its id (a dry run)", "adapters/run/dryrun.py::kept_figures")
def _(d, s):
    items, state = _answered_job(s, d)
    write_items(items, [{**ROWS[0], "prompt": "changed"}, *ROWS[1:]])
    return ["run", str(items), "--state", str(state), "--dry-run"], {}


@case("a missing template", "adapters/cli/flags.py::_read_flag_file")
def _(d, s):
    return [*_run(d), "--template", str(d / "nope.txt")], {}


@case("a blank rubric", "adapters/cli/flags.py::_read_rubric")
def _(d, s):
    (d / "r.txt").write_text("  \n")
    return [*_run(d), "--rubric", str(d / "r.txt")], {}


@case("a template with a bad placeholder", "adapters/cli/flags.py::_read_template")
def _(d, s):
    (d / "t.txt").write_text("Q: {")
    return [*_run(d), "--template", str(d / "t.txt")], {}


@case("a bad verdict spec", "adapters/files/readers.py::read_verdict_file")
def _(d, s):
    (d / "v.json").write_text('{"pattern": "(unclosed"}')
    return [*_run(d), "--verdict", str(d / "v.json")], {}


@case("no API key", "adapters/providers/anthropic/connect.py::client")
def _(d, s):
    return [*_run(d), "--otpm", "400000"], {"ANTHROPIC_API_KEY": None}


@case("no OpenAI key for an openai: judge", "adapters/providers/openai/connect.py::client")
def _(d, s):
    return [*_run(d), "--model", "openai:gpt-5-mini", "--force-sync"], {"OPENAI_API_KEY": None}


@case("--force-batch with an openai: judge", "adapters/cli/run.py::cmd_run")
def _(d, s):
    return [*_run(d), "--model", "openai:gpt-5-mini", "--force-batch"], {}


@case("--count-tokens with no API key", "adapters/providers/anthropic/count_tokens.py::count_prompt")
def _(d, s):
    return [*_run(d), "--dry-run", "--count-tokens"], {"ANTHROPIC_API_KEY": None}


@case("a bad JSONL line", "adapters/files/items_io.py::input_error")
def _(d, s):
    p = d / "in.jsonl"
    p.write_bytes(b'{"id": "a", "prompt": "x"}\n{"id": 1}\n')
    return _run(d, items=p), {}


@case("invalid UTF-8", "adapters/files/items_io.py::_reading")
def _(d, s):
    p = d / "in.csv"
    p.write_bytes(b"id,prompt\nx,caf\xe9\n")
    return _run(d, items=p), {}


@case("an input of no items", "adapters/files/items_io.py::load_items")
def _(d, s):
    p = d / "in.csv"
    p.write_text("id,prompt\n")
    return _run(d, items=p), {}


@case("a dry run of an input of no items (blank lines)", "adapters/run/streamed.py::streamed_dry_run")
def _(d, s):
    p = d / "in.jsonl"
    p.write_text("\n  \n")
    return [*_run(d, items=p), "--dry-run"], {}


@case("a design's input of no items", "adapters/files/items_io.py::load_design_items")
def _(d, s):
    p = d / "in.csv"
    p.write_text("id,question\n")
    (d / "t.txt").write_text("Q: {question}")
    return [*_run(d, items=p), "--template", str(d / "t.txt"), "--samples", "2"], {}


@case("an item too large for any sub-batch", "adapters/run/planning.py::checked_plan")
def _(d, s):
    p = _items(d, [{"id": "small", "prompt": "x"}, {"id": "huge", "prompt": "y" * 5000}])
    return _run(d, "--force-batch", "--max-batch-bytes", "2000", items=p), {}


@case("an unknown input format", "adapters/files/readers.py::input_kind")
def _(d, s):
    p = d / "in.txt"
    p.write_text('{"id": "a", "prompt": "x"}\n')
    return _run(d, items=p), {}


@case("a damaged .jsonl.gz", "adapters/files/readers.py::_format_lines")
def _(d, s):
    p = d / "in.jsonl.gz"
    p.write_bytes(gzip.compress(b'{"id": "a", "prompt": "x"}\n')[:-12])
    return _run(d, items=p), {}


@case("a .parquet that is not one", "adapters/files/readers.py::_parquet_lines")
def _(d, s):
    p = d / "in.parquet"
    p.write_bytes(b"not parquet at all")
    return _run(d, items=p), {}


@case("a missing inspect log", "adapters/files/inspect_log.py::read_log")
def _(d, s):
    return ["run", "--from-inspect", str(d / "log.eval"), "--state", str(d / "s")], {}


@case("a run while another holds the state dir", "adapters/run/job.py::_run")
def _(d, s):
    from adapters.checkpoint.store import Store

    items = _items(d)
    s.held = Store.open(d / "s", exclusive="run")  # type: ignore[attr-defined]
    return ["run", str(items), "--state", str(d / "s")], {}


@case("cancel while a run holds the state dir", "adapters/cli/cancel.py::cmd_cancel")
def _(d, s):
    from adapters.checkpoint.store import Store

    _items(d)
    store = Store.open(d / "s", exclusive="run")
    store.close()  # a checkpoint exists
    s.held = Store.open(d / "s", exclusive="run")  # type: ignore[attr-defined]
    return ["cancel", "--state", str(d / "s")], {}


@case("status of no checkpoint", "adapters/cli/status.py::_existing_state")
def _(d, s):
    return ["status", "--state", str(d / "nothing")], {}


@case("summary --json --markdown", "adapters/cli/status.py::cmd_summary")
def _(d, s):
    _, state = _answered_job(s, d)
    return ["summary", "--state", str(state), "--json", "--markdown"], {}


@case("summary --by a key no item has", "adapters/report/job_report.py::job_report")
def _(d, s):
    _, state = _answered_job(s, d)
    return ["summary", "--state", str(state), "--by", "nokey"], {}


@case("export of no checkpoint", "adapters/cli/status.py::cmd_export")
def _(d, s):
    return ["export", "--state", str(d / "nothing"), "--to-inspect", str(d / "out.eval")], {}


@case("export to a file not named .eval or .json", "adapters/files/inspect_export.py::export_to_inspect")
def _(d, s):
    items, state = _answered_job(s, d)
    return [
        "export",
        "--state",
        str(state),
        "--to-inspect",
        str(d / "out.txt"),
        "--from-inspect",
        str(items),
    ], {}


@case("demo --dir a file", "adapters/cli/__init__.py::main")
def _(d, s):
    (d / "f").write_text("x")
    return ["demo", "--dir", str(d / "f")], {}


@case("simulator --port out of range", "adapters/cli/__init__.py::cmd_simulator")
def _(d, s):
    return ["simulator", "--port", "70000"], {}


@case("an input sharing no item id with the job in --state", "adapters/cli/resumed.py::_check_overlap")
def _(d, s):
    _, state = _answered_job(s, d)
    other = write_items(
        d / "other.jsonl", [{"id": f"x{i}", "prompt": f"another job's item {i}"} for i in range(3)]
    )
    return ["run", str(other), "--state", str(state)], {}


#: Functions raising `UsageError` that no command line reaches, and why.
NOT_FROM_THE_CLI = {
    "adapters/run/planning.py::check_arguments": "judge()'s arguments (the CLI builds them itself)",
    "adapters/run/planning_run.py::run_job_of": "judge()'s items given as Python objects",
    "adapters/run/planning.py::items_of": "judge()'s items parsed without the job's design "
    "(tests/cli/test_python_api.py; the CLI reads its file with the design)",
    "adapters/run/job.py::judge": "judge() called inside a running event loop",
    "adapters/run/operations.py::connect": "the input changed while the run read it (a race; "
    "tests/batch/test_messages_kept.py), or a JUDGECORE_* value refused by check_environment first",
    "adapters/run/operations.py::run_batch_part": "a provider without a batch route (its jobs route "
    "sync; --force-batch with one is refused by JobSettings first)",
    "adapters/providers/registry.py::provider_of": "a judge's name JobSettings refused first (judge_problem)",
    "adapters/files/cells.py::need": "an extra not installed (the test environment has them all)",
    "adapters/files/readers.py::_dataset_lines": "a datasets directory (the `datasets` extra is not installed here)",
    "adapters/files/paths.py::publish": "a checkpoint made at the output's path while the run wrote it (a race: "
    "the same check refuses such an --out before anything is sent, `out_problem`)",
}


@pytest.mark.parametrize(("name", "site", "build"), CASES, ids=[c[0] for c in CASES])
def test_an_exit_2_path_sends_nothing(sim: Sim, tmp_path: Path, name: str, site: str, build: Build) -> None:
    argv, env = build(tmp_path, sim)
    before = sim.sent()
    try:
        r = cli_in_process(argv, env=sim.env(**env))
    finally:
        held = sim.__dict__.pop("held", None)
        if held is not None:
            held.close()
    assert 2 == r.returncode, (name, r.stderr)
    assert 0 == sim.sent() - before, (name, r.stderr)
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert 1 == len(errors) and "Traceback" not in r.stderr, r.stderr


def _usage_error_sites() -> set[str]:
    """Every function of adapters/ (the simulator's own aside) that raises `UsageError`."""
    out = set()
    for path in sorted((ROOT / "adapters").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("adapters/simulator"):
            continue
        for fn in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(fn, ast.FunctionDef | ast.AsyncFunctionDef) and any(
                isinstance(n, ast.Call) and getattr(n.func, "id", None) == "UsageError" for n in ast.walk(fn)
            ):
                out.add(f"{rel}::{fn.name}")
    return out


def test_every_usage_error_site_has_a_case() -> None:
    sites = _usage_error_sites()
    covered = {site for _, site, _ in CASES} | set(NOT_FROM_THE_CLI)
    assert set() == sites - covered, "a new exit-2 path: add a case for it here"
    assert set() == covered - sites - {"argparse"}, "a case names a function that raises no UsageError"


# -- the knobs, property-tested -----------------------------------------------------------------


def _out_of_range(knob: Knob) -> st.SearchStrategy[str]:
    """Texts of values outside `knob`'s range (below, above, not finite, not a number)."""
    options: list[st.SearchStrategy[str]] = [st.sampled_from(["x", "", "1,5", "--"])]
    if knob.kind == "int":
        options.append(st.sampled_from(["1.5", "1e3"]))
        if knob.lo is not None:
            options.append(st.integers(max_value=int(knob.lo) - (0 if knob.lo_open else 1)).map(str))
        if knob.hi is not None:
            options.append(st.integers(min_value=int(knob.hi) + 1).map(str))
    else:
        options.append(st.sampled_from(["nan", "inf", "-inf"]))
        if knob.lo is not None:
            below = st.floats(max_value=knob.lo, exclude_max=not knob.lo_open, allow_nan=False)
            options.append(below.map(repr))
        if knob.hi is not None:
            options.append(st.floats(min_value=knob.hi, exclude_min=True, allow_nan=False).map(repr))
    return st.one_of(options)


def _ways(knob: Knob) -> list[tuple[Knob, str]]:
    return [(knob, way) for way in ("flag", "env") if getattr(knob, way)]


RANGED = [w for k in KNOBS if k.kind != "text" for w in _ways(k)]


@st.composite
def bad_knob(draw: st.DrawFn) -> tuple[Knob, str, str]:
    knob, way = draw(st.sampled_from(RANGED))
    text = draw(_out_of_range(knob))
    if way == "env" and not text.strip():  # a blank variable is no value (its default)
        text = "0x"
    return knob, way, text


@settings(max_examples=80, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(bad=bad_knob())
def test_any_knob_out_of_its_range_is_exit_2_with_nothing_sent(sim: Sim, tmp_path: Path, bad) -> None:
    """Whichever knob, flag or variable, a value that cannot be right is one line naming it, exit 2."""
    knob, way, text = bad
    d = tmp_path / f"c{sum(1 for _ in tmp_path.iterdir())}"
    d.mkdir()
    argv, env = _run(d), {}
    if way == "flag":
        argv.append(f"{knob.flag}={text}")
    else:
        env[knob.env] = text
    before = sim.sent()
    r = cli_in_process(argv, env=sim.env(**env))
    assert 2 == r.returncode, (knob.name, way, text, r.stderr)
    assert 0 == sim.sent() - before
    errors = [line for line in r.stderr.splitlines() if line.startswith("error:")]
    assert 1 == len(errors) and (knob.flag if way == "flag" else knob.env) in errors[0], r.stderr
    assert not (d / "s").exists(), "nothing is created either"


def test_the_flag_and_the_variable_of_one_knob_are_refused_alike(sim: Sim, tmp_path: Path) -> None:
    """`JUDGECORE_MAX_CONCURRENCY=0` ran the job (exit 0, requests sent) where `--concurrency 0` was
    exit 2: both are now the same refusal, naming the same range."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    by_flag = cli_in_process([*_run(tmp_path / "a"), "--concurrency", "0"], env=sim.env())
    by_env = cli_in_process(_run(tmp_path / "b"), env=sim.env(JUDGECORE_MAX_CONCURRENCY="0"))
    assert (2, 2) == (by_flag.returncode, by_env.returncode)
    assert "must be a whole number >= 1 and at most 10,000, got 0" in by_flag.stderr
    assert "JUDGECORE_MAX_CONCURRENCY='0': must be a whole number >= 1 and at most 10,000" in by_env.stderr


def test_an_unknown_judgecore_variable_is_a_warning_naming_the_nearest(sim: Sim, tmp_path: Path) -> None:
    r = cli_in_process(
        [*_run(tmp_path), "--dry-run"], env=sim.env(JUDGECORE_MAX_CONCURENCY="4", JUDGECORE_WHATEVER="1")
    )
    assert 0 == r.returncode, r.stderr
    assert (
        "warning: JUDGECORE_MAX_CONCURENCY is not a judgecore variable and is ignored; did you mean "
        "JUDGECORE_MAX_CONCURRENCY?" in r.stderr
    )
    assert "warning: JUDGECORE_WHATEVER is not a judgecore variable" in r.stderr
