"""A new user's mistakes with paths and flags: exit 2, one line naming the flag or FILE:LINE, nothing sent.

Each case is run in-process through `adapters.cli.main` with a client that must never be built:
`ANTHROPIC_BASE_URL` points at a port where nothing listens, so any send would show as a connection
error rather than exit 2. (tests/integration/test_first_day.py checks the same against the simulator's
request log.)
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from adapters.cli import main

DEAD = "http://127.0.0.1:9"  # the discard port: nothing answers there


@pytest.fixture(autouse=True)
def _env(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", DEAD)


@pytest.fixture
def items(tmp_path: Path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_bytes(
        b"".join(orjson.dumps({"id": f"q{i}", "prompt": f"grade {i}"}) + b"\n" for i in range(3))
    )
    return path


def run(argv: list[str], capsys) -> tuple[int, str]:
    """Exit status and stderr of `judgecore ARGV` (argparse's own errors exit through SystemExit)."""
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    err = capsys.readouterr().err
    return code, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert 1 == len(lines), err
    assert "Traceback" not in err
    return lines[0]


# -- --state --------------------------------------------------------------------------------------


def test_state_that_is_an_existing_file_is_exit_2(items, tmp_path, capsys):
    """Was FileExistsError, exit 1."""
    state = tmp_path / "state"
    state.write_text("not a dir")
    code, err = run(["run", str(items), "--state", str(state)], capsys)
    assert 2 == code
    assert "--state" in one_line(err) and "not a directory" in err


def test_state_under_a_file_is_exit_2(items, tmp_path, capsys):
    """Was NotADirectoryError, exit 1."""
    (tmp_path / "afile").write_text("x")
    code, err = run(["run", str(items), "--state", str(tmp_path / "afile" / "s")], capsys)
    assert 2 == code
    assert "--state" in one_line(err) and "afile" in err


def test_state_that_cannot_be_created_is_exit_2(items, capsys):
    code, err = run(["run", str(items), "--state", "/proc/judgecore-state/s"], capsys)
    assert 2 == code
    assert "--state" in one_line(err) and "cannot be created" in err


def test_state_with_a_name_too_long_is_exit_2(items, tmp_path, capsys):
    code, err = run(["run", str(items), "--state", str(tmp_path / ("x" * 300))], capsys)
    assert 2 == code
    assert "--state" in one_line(err) and "too long" in err


@pytest.mark.parametrize("command", ["status", "cancel"])
def test_status_and_cancel_on_a_file_are_exit_2(tmp_path, capsys, command):
    (tmp_path / "f").write_text("x")
    code, err = run([command, "--state", str(tmp_path / "f")], capsys)
    assert 2 == code
    assert "--state" in one_line(err)


@pytest.mark.parametrize(
    "command",
    [["status"], ["cancel"], ["summary"], ["export", "--to-inspect", "out.eval"]],
    ids=lambda c: c[0],
)
def test_every_command_that_reads_a_checkpoint_names_the_flag_of_a_dir_without_one(tmp_path, capsys, command):
    """`summary` and `export` said "DIR: no judgecore checkpoint here"; all four now name `--state`."""
    empty = tmp_path / "empty"
    empty.mkdir()
    code, err = run([command[0], "--state", str(empty), *command[1:]], capsys)
    assert 2 == code
    assert f"error: --state {empty}: no judgecore checkpoint here" == one_line(err)


# -- INPUT and --rubric --------------------------------------------------------------------------


def test_input_that_is_a_directory_is_exit_2(tmp_path, capsys):
    """Was IsADirectoryError, exit 1."""
    code, err = run(["run", str(tmp_path), "--state", str(tmp_path / "s")], capsys)
    assert 2 == code
    assert "is a directory" in one_line(err) and "INPUT" in err
    assert not (tmp_path / "s").exists()


def test_from_inspect_that_is_a_directory_names_the_flag(tmp_path, capsys):
    """It was refused as INPUT: "not one written by datasets' save_to_disk (INPUT is .jsonl, ...)"."""
    logs = tmp_path / "logs"
    logs.mkdir()
    code, err = run(["run", "--from-inspect", str(logs), "--state", str(tmp_path / "s")], capsys)
    assert 2 == code
    assert f"error: {logs}: is a directory, not a file (--from-inspect)" == one_line(err)
    assert not (tmp_path / "s").exists()


def test_rubric_that_is_a_directory_is_exit_2(items, tmp_path, capsys):
    code, err = run(["run", str(items), "--state", str(tmp_path / "s"), "--rubric", str(tmp_path)], capsys)
    assert 2 == code
    assert "--rubric" in one_line(err) and "is a directory" in err


# -- --out ---------------------------------------------------------------------------------------


def test_out_that_is_a_directory_is_exit_2_before_anything_is_sent(items, tmp_path, capsys):
    """Was IsADirectoryError after the whole job ran and was paid."""
    code, err = run(["run", str(items), "--state", str(tmp_path / "s"), "--out", str(tmp_path)], capsys)
    assert 2 == code
    assert "--out" in one_line(err) and "is a directory" in err


def test_out_under_a_file_is_exit_2(items, tmp_path, capsys):
    (tmp_path / "afile").write_text("x")
    out = tmp_path / "afile" / "out.jsonl"
    code, err = run(["run", str(items), "--state", str(tmp_path / "s"), "--out", str(out)], capsys)
    assert 2 == code
    assert "--out" in one_line(err) and "afile" in err


def test_out_that_is_not_writable_is_exit_2(items, tmp_path, capsys):
    code, err = run(
        ["run", str(items), "--state", str(tmp_path / "s"), "--out", "/proc/judgecore-out.jsonl"], capsys
    )
    assert 2 == code
    assert "--out" in one_line(err) and "not writable" in err


def test_out_equal_to_the_input_is_exit_2_and_the_input_is_kept(items, tmp_path, capsys):
    """Was: the input silently overwritten by the output."""
    before = items.read_bytes()
    code, err = run(["run", str(items), "--state", str(tmp_path / "s"), "--out", str(items)], capsys)
    assert 2 == code
    assert "--out" in one_line(err) and "input" in err
    assert before == items.read_bytes()


@pytest.mark.parametrize("flag", ["--template", "--verdict"])
def test_out_onto_the_template_or_the_verdict_spec_is_exit_2_and_the_file_is_kept(
    items, tmp_path, capsys, flag
):
    """Was: the template (or the verdict spec) overwritten by the output, the run going on."""
    read = tmp_path / ("grade.txt" if flag == "--template" else "verdict.json")
    read.write_text("Q: {prompt}" if flag == "--template" else '{"pattern": "Score: (?P<score>[0-9]+)"}')
    before = read.read_bytes()
    command = ["run", str(items), "--state", str(tmp_path / "s"), flag, str(read), "--out", str(read)]
    code, err = run(command, capsys)
    assert 2 == code
    assert f"--out {read}: is the input file" in one_line(err)
    assert before == read.read_bytes()


def test_out_equal_to_the_input_by_another_spelling_is_exit_2(items, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, err = run(["run", str(items), "--state", "s", "--out", f"./{items.name}"], capsys)
    assert 2 == code
    assert "--out" in one_line(err)


@pytest.mark.parametrize("name", ["judgecore.sqlite3", "judgecore.sqlite3-wal"])
def test_out_onto_the_checkpoints_own_file_is_exit_2(items, tmp_path, capsys, name):
    state = tmp_path / "s"
    code, err = run(["run", str(items), "--state", str(state), "--out", str(state / name)], capsys)
    assert 2 == code
    assert "--out" in one_line(err) and "checkpoint" in err


def _checkpoint(state: Path, items: Path) -> Path:
    """A checkpoint bound to the job, as a first run leaves it before it sends anything."""
    from adapters.checkpoint.store import Store
    from adapters.files.items_io import load_items
    from adapters.run.settings import JobSettings

    store = Store.open(state)
    try:
        manifest = JobSettings().manifest("Grade strictly.")
        store.bind_job(manifest, ((i.custom_id, i.id, i.digest) for i in load_items(items)))
    finally:
        store.close()
    return state


@pytest.mark.parametrize("flag", ["--html", "--to-inspect"])
def test_a_report_or_export_onto_the_checkpoints_own_file_is_exit_2_and_the_checkpoint_is_kept(
    items, tmp_path, capsys, flag
):
    """`summary --html STATE/judgecore.sqlite3` replaced the checkpoint with the HTML page (exit 0)."""
    state = _checkpoint(tmp_path / "s", items)
    db = state / "judgecore.sqlite3"
    before = db.read_bytes()
    command = ["summary", "--state", str(state), "--html", str(db)]
    if flag == "--to-inspect":
        command = ["export", "--state", str(state), "--to-inspect", str(db)]
    code, err = run(command, capsys)
    assert 2 == code
    assert flag in one_line(err) and "checkpoint" in err
    assert before == db.read_bytes()
    code, err = run(["status", "--state", str(state)], capsys)
    assert 3 == code, err  # still the checkpoint: its 3 items pending


@pytest.mark.parametrize("which", ["input", "rubric", "verdict"])
def test_a_report_onto_a_file_the_job_reads_is_exit_2_and_the_file_is_kept(items, tmp_path, capsys, which):
    """`--html` onto the job's input replaced it with the page (exit 0); so would the rubric."""
    state = _checkpoint(tmp_path / "s", items)
    from adapters.checkpoint.store import Store

    rubric, verdict = tmp_path / "rubric.txt", tmp_path / "verdict.json"
    rubric.write_text("Grade strictly.")
    verdict.write_text('{"pattern": "Score: (?P<score>[0-9]+)"}')
    store = Store.open(state)  # where a run records what it was started with
    try:
        store.set_meta("invocation", {"input": str(items), "flags": {"rubric": str(rubric)}})
    finally:
        store.close()
    target = {"input": items, "rubric": rubric, "verdict": verdict}[which]
    before = target.read_bytes()
    command = ["summary", "--state", str(state), "--html", str(target)]
    code, err = run([*command, "--verdict", str(verdict)], capsys)
    assert 2 == code
    assert f"--html {target}: is the input file" in one_line(err)
    assert before == target.read_bytes()


def test_an_export_onto_the_jobs_verdict_spec_is_exit_2_and_the_spec_is_kept(items, tmp_path, capsys):
    state = _checkpoint(tmp_path / "s", items)
    from adapters.checkpoint.store import Store

    verdict = tmp_path / "verdict.json"  # named like an inspect_ai log: .json
    verdict.write_text('{"pattern": "Score: (?P<score>[0-9]+)"}')
    store = Store.open(state)
    try:
        store.set_meta("invocation", {"input": str(items), "flags": {"verdict": str(verdict)}})
    finally:
        store.close()
    before = verdict.read_bytes()
    code, err = run(["export", "--state", str(state), "--to-inspect", str(verdict)], capsys)
    assert 2 == code
    assert f"--to-inspect {verdict}: is the input file" in one_line(err)
    assert before == verdict.read_bytes()


def test_a_report_into_a_directory_is_exit_2_before_the_summary_prints(items, tmp_path, capsys):
    """Was the summary on stdout, then an IsADirectoryError traceback, exit 1."""
    state = _checkpoint(tmp_path / "s", items)
    try:
        code = main(["summary", "--state", str(state), "--html", str(tmp_path)])
    except SystemExit as exc:
        code = exc.code
    got = capsys.readouterr()
    assert 2 == code and "" == got.out
    assert f"--html {tmp_path}: is a directory" in one_line(got.err)


# -- numbers and names ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--poll-interval", "inf", "finite"),
        ("--poll-interval", "nan", "finite"),
        ("--poll-interval", "0", "> 0"),
        ("--poll-interval", "-1", ">"),
        ("--grace", "inf", "finite"),
        ("--grace", "1e300", "at most"),
        ("--max-tokens", "0", ">= 1"),
        ("--max-tokens", "10000000", "1,000,000"),
        ("--max-tokens", str(2**31), "1,000,000"),
        ("--max-tokens", "200000", "output limit of 128,000"),
        ("--max-attempts", "0", ">= 1"),
        ("--max-attempts", "1000000", "at most"),
        ("--concurrency", "0", ">= 1"),
        ("--sync-threshold", str(10**30), "at most"),
        ("--otpm", str(10**30), "at most"),
        ("--otpm", "0", ">= 1"),
        ("--max-batch-requests", "100001", "at most 100,000"),
        ("--max-tokens", "ten", "expected a whole number"),
        ("--model", "", "non-empty"),
        ("--model", "  ", "non-empty"),
    ],
)
def test_bad_flag_values_are_exit_2_naming_the_flag(items, tmp_path, capsys, flag, value, reason):
    code, err = run(["run", str(items), "--state", str(tmp_path / "s"), flag, value], capsys)
    assert 2 == code
    line = one_line(err)
    assert flag in line and reason in line
    assert not (tmp_path / "s").exists()


def test_an_items_own_max_tokens_above_the_models_limit_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "prompt": "x"}\n{"id": "b", "prompt": "y", "max_tokens": 64001}\n')
    code, err = run(["run", str(path), "--state", str(tmp_path / "s"), "--model", "claude-haiku-4-5"], capsys)
    assert 2 == code
    line = one_line(err)
    assert line.startswith(f"error: {path}:2:") and "output limit of 64,000" in line


def test_an_unknown_model_passes_the_limit_check(items, tmp_path, capsys):
    argv = [
        "run",
        str(items),
        "--state",
        str(tmp_path / "s"),
        "--model",
        "claude-new-9",
        "--allow-unknown-model",
    ]
    code = main([*argv, "--max-tokens", "300000", "--dry-run"])
    assert 0 == code


def test_usage_errors_are_one_line_without_the_usage_banner(tmp_path, capsys):
    """argparse's own errors (a missing argument, an unknown flag) are one line too."""
    code, err = run(["run", "in.jsonl", "--bogus"], capsys)
    assert 2 == code
    assert "--bogus" in one_line(err) and "--help" in err
    code, err = run(["run"], capsys)
    assert 2 == code
    assert "INPUT" in one_line(err) and "judgecore run --help" in err


def test_demo_dir_that_is_a_file_is_exit_2(tmp_path, capsys):
    (tmp_path / "f").write_text("x")
    code, err = run(["demo", "--dir", str(tmp_path / "f")], capsys)
    assert 2 == code
    assert "--dir" in one_line(err) and "not a directory" in err


def test_demo_dir_holding_files_of_the_demos_names_is_exit_2_and_they_are_kept(tmp_path, capsys):
    """The demo writes report.html, rubric.txt and so on: in a directory of the user's own they were
    overwritten. An earlier demo's directory is run again (tests/integration/test_end_to_end.py)."""
    mine = tmp_path / "project"
    mine.mkdir()
    (mine / "report.html").write_text("my report")
    (mine / "rubric.txt").write_text("my rubric")
    code, err = run(["demo", "--n", "10", "--dir", str(mine)], capsys)
    assert 2 == code
    assert f"--dir {mine}: holds rubric.txt and 1 more of the demo's file names" in one_line(err)
    assert ("my report", "my rubric") == (
        (mine / "report.html").read_text(),
        (mine / "rubric.txt").read_text(),
    )


def test_simulator_port_out_of_range_is_exit_2(capsys):
    code, err = run(["simulator", "--port", "99999"], capsys)
    assert 2 == code
    assert "--port" in one_line(err)


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [
        ("--batch-seconds", "inf", "finite"),
        ("--batch-seconds", "nan", "finite"),
        ("--batch-seconds", "-1", ">= 0"),
        ("--expires-after", "nan", "finite"),
        ("--results-line-delay", "inf", "finite"),
        ("--sync-429-rate", "2", "0..1"),
        ("--sync-500-rate", "-0.5", "0..1"),
        ("--sync-drop-rate", "nan", "finite"),
        ("--batch-error-rate", "1.5", "0..1"),
        ("--unparseable-rate", "inf", "finite"),
        ("--out-of-range-rate", "2", "0..1"),
        ("--score-weights", "1=nan", "finite"),
    ],
)
def test_simulator_non_finite_or_out_of_range_flag_is_exit_2(capsys, flag, value, says):
    """Was: served, with batches that never end (inf), never compare (nan) or always fault (2)."""
    code, err = run(["simulator", "--port", "0", flag, value], capsys)
    assert 2 == code
    line = one_line(err)
    assert flag in line and says in line


def test_simulator_sync_fault_rates_adding_up_past_1_are_exit_2(capsys):
    code, err = run(["simulator", "--port", "0", "--sync-429-rate", "0.6", "--sync-500-rate", "0.6"], capsys)
    assert 2 == code
    assert "--sync-*-rate" in one_line(err)


def test_simulator_on_a_port_in_use_is_exit_2(capsys):
    """Was: a traceback from bind()."""
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        code, err = run(["simulator", "--port", str(port)], capsys)
    assert 2 == code
    assert "cannot listen there" in one_line(err)
