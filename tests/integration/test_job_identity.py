"""A job's identity and its edges, through the CLI and the real SDK over HTTP to the simulator.

- Custom ids are pure in the job's manifest and each request (CONTRACT.md, "Custom ids across state
  dirs"): the same job started afresh sends the same ids, in any state dir, from any file format.
- Nothing judgecore writes replaces a checkpoint, any job's.
- Outputs and reports follow the umask; the checkpoint stays 0600.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.data.tables import rows, write
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

ROWS = [{"id": str(i), "prompt": f"grade answer {i}"} for i in range(6)]


def _custom_ids(out: Path) -> dict[str, str]:
    return {r["id"]: r["custom_id"] for r in read_output(out)}


# -- 1. custom ids: the same job, the same ids ---------------------------------------------------


def test_the_same_job_in_two_fresh_state_dirs_sends_the_same_custom_ids(served, tmp_path: Path):
    """No random nonce: a job started afresh (another state dir, as on another machine) derives the
    ids the first one did, for every item, on the batch route as sent."""
    srv = served(Scenario(seed=31, batch_seconds=0.1))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    for name in ("a", "b"):
        args = ["run", str(items), "--state", str(tmp_path / name), "--force-batch", "--poll-interval", "0.1"]
        res = srv.cli(args)
        assert 0 == res.returncode, res.stderr
    first, second = (b.custom_ids for b in srv.sim.batches)
    assert first == second
    assert _custom_ids(tmp_path / "a" / "output.jsonl") == _custom_ids(tmp_path / "b" / "output.jsonl")


def test_the_same_rows_in_any_file_format_or_a_dataframe_get_the_same_custom_ids(served, tmp_path: Path):
    """JSONL, gzip, CSV, Parquet (files through the CLI) and a pandas DataFrame (the Python API): the
    same rows are the same requests, so the same custom_ids."""
    pd = pytest.importorskip("pandas")
    from adapters.run.job import judge
    from adapters.simulator.logic import Simulator
    from adapters.simulator.transport import sim_client
    from tests.data.tables import flat

    data = rows(12)
    srv = served(Scenario(seed=32))
    seen: dict[str, dict[str, str]] = {}
    for kind in ("jsonl", "jsonl.gz", "csv", "parquet"):
        path = write(tmp_path / f"in-{kind.replace('.', '-')}", kind, data)
        state = tmp_path / f"state-{kind}"
        res = srv.cli(["run", str(path), "--state", str(state), "--force-sync"])
        assert 0 == res.returncode, res.stderr
        seen[kind] = _custom_ids(state / "output.jsonl")
    frame = pd.DataFrame([flat(r) for r in data])
    result = judge(
        frame, rubric=None, state_dir=tmp_path / "state-frame", client=sim_client(Simulator(Scenario()))
    )
    assert 0 == result.exit_code
    seen["dataframe"] = {i: r["custom_id"] for i, r in result.records.items()}
    assert len(data) == len(seen["jsonl"])
    for kind, ids in seen.items():
        assert seen["jsonl"] == ids, kind


def test_the_same_item_id_asking_something_else_gets_another_custom_id(served, tmp_path: Path):
    """Two jobs of one manifest whose items share ids but not prompts share no custom_id."""
    srv = served(Scenario(seed=33))
    outs = []
    for name in ("a", "b"):
        items = write_items(
            tmp_path / f"{name}.jsonl", [{**r, "prompt": f"{name}: {r['prompt']}"} for r in ROWS]
        )
        res = srv.cli(["run", str(items), "--state", str(tmp_path / name), "--force-sync"])
        assert 0 == res.returncode, res.stderr
        outs.append(_custom_ids(tmp_path / name / "output.jsonl"))
    assert outs[0].keys() == outs[1].keys()
    assert not set(outs[0].values()) & set(outs[1].values())


# -- 3. nothing written over a checkpoint --------------------------------------------------------


@pytest.fixture
def finished_job(served, tmp_path: Path) -> Iterator[tuple[object, Path, Path]]:
    """A finished job (`st/big`) and the input of another."""
    srv = served(Scenario(seed=34))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    big = tmp_path / "st" / "big"
    res = srv.cli(["run", str(items), "--state", str(big), "--force-sync"])
    assert 0 == res.returncode, res.stderr
    yield srv, items, big


def _still_readable(srv, state: Path) -> None:
    res = srv.cli(["status", "--state", str(state)])
    assert 0 == res.returncode, res.stderr
    assert "Traceback" not in res.stderr


@pytest.mark.parametrize("name", ["judgecore.sqlite3", "judgecore.sqlite3-wal", "judgecore.lock"])
def test_a_run_never_writes_its_output_over_another_jobs_checkpoint(finished_job, tmp_path: Path, name):
    srv, items, big = finished_job
    target = big / name
    before = target.read_bytes() if target.exists() else None
    sent = len(srv.sim.log)
    res = srv.cli(
        ["run", str(items), "--state", str(tmp_path / "st" / "x9"), "--out", str(target), "--force-sync"]
    )
    assert 2 == res.returncode, res.stderr
    assert f"--out {target}" in res.stderr
    assert "checkpoint" in res.stderr
    assert sent == len(srv.sim.log)  # nothing sent
    assert before == (target.read_bytes() if target.exists() else None)
    _still_readable(srv, big)


def test_a_sqlite_database_under_any_name_is_never_written_over(finished_job, tmp_path: Path):
    """A checkpoint copied under another name (or any SQLite database) is told by its header."""
    srv, items, big = finished_job
    copy = tmp_path / "backup.jsonl"
    copy.write_bytes((big / "judgecore.sqlite3").read_bytes())
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "other"), "--out", str(copy), "--force-sync"])
    assert 2 == res.returncode
    assert "SQLite database" in res.stderr
    assert copy.read_bytes() == (big / "judgecore.sqlite3").read_bytes()


def test_a_summary_report_is_never_written_over_another_jobs_checkpoint(finished_job, tmp_path: Path):
    srv, items, big = finished_job
    mine = tmp_path / "mine"
    assert 0 == srv.cli(["run", str(items), "--state", str(mine), "--force-sync"]).returncode
    before = (big / "judgecore.sqlite3").read_bytes()
    res = srv.cli(["summary", "--state", str(mine), "--html", str(big / "judgecore.sqlite3")])
    assert 2 == res.returncode
    assert "--html" in res.stderr
    assert before == (big / "judgecore.sqlite3").read_bytes()
    _still_readable(srv, big)


# -- 6 (part). outputs and reports follow the umask -------------------------------------------------


def test_outputs_and_reports_follow_the_umask_and_the_checkpoint_stays_private(served, tmp_path: Path):
    srv = served(Scenario(seed=35))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    state = tmp_path / "state"
    old = os.umask(0o022)
    try:
        assert 0 == srv.cli(["run", str(items), "--state", str(state), "--force-sync"]).returncode
        assert 0 == srv.cli(["summary", "--state", str(state), "--html", str(tmp_path / "r.html")]).returncode
        os.umask(0o027)
        assert (
            0
            == srv.cli(
                ["run", str(items), "--state", str(state), "--out", str(tmp_path / "o.csv")]
            ).returncode
        )
    finally:
        os.umask(old)

    def mode(p: Path) -> int:
        return stat.S_IMODE(p.stat().st_mode)

    assert 0o644 == mode(state / "output.jsonl")
    assert 0o644 == mode(tmp_path / "r.html")
    assert 0o640 == mode(tmp_path / "o.csv")
    assert 0o600 == mode(state / "judgecore.sqlite3")


# -- 3. an unreadable checkpoint: one line, exit 2 ---------------------------------------------------


def _damaged(state: Path, how: str) -> None:
    db = state / "judgecore.sqlite3"
    if how == "text":
        db.write_text("this is not a database\n" * 10)
    elif how == "truncated":
        raw = db.read_bytes()
        db.write_bytes(raw[:100] + b"\x00" * 4000)


@pytest.mark.parametrize("how", ["text", "truncated"])
def test_an_unreadable_checkpoint_is_one_line_and_exit_2_for_every_command(finished_job, how):
    srv, items, big = finished_job
    _damaged(big, how)
    sent = len(srv.sim.log)
    for args in (
        ["run", str(items), "--state", str(big)],
        ["run", str(items), "--state", str(big), "--dry-run"],
        ["run", "--state", str(big)],
        ["status", "--state", str(big)],
        ["summary", "--state", str(big)],
        ["cancel", "--state", str(big)],
        ["export", "--state", str(big), "--to-inspect", str(big.parent / "x.eval")],
    ):
        res = srv.cli(args)
        lines = [line for line in res.stderr.splitlines() if line.strip()]
        assert 2 == res.returncode, (args, res.stderr)
        assert 1 == len(lines), (args, res.stderr)
        assert str(big) in lines[0], args
    assert sent == len(srv.sim.log)


# -- 2. a state dir's identity ---------------------------------------------------------------------


def test_a_copied_or_moved_state_dir_writes_its_output_inside_itself(served, tmp_path: Path):
    """`cp -r runs/a runs/b; run --state runs/b` wrote runs/a/output.jsonl; after `mv`, a run made the
    old directory again. The state dir finds its remembered output under its own path."""
    import shutil

    srv = served(Scenario(seed=36))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    runs = tmp_path / "runs"
    assert 0 == srv.cli(["run", str(items), "--state", str(runs / "a"), "--force-sync"]).returncode
    shutil.copytree(runs / "a", runs / "b")
    (runs / "b" / "output.jsonl").unlink()
    before = (runs / "a" / "output.jsonl").stat().st_mtime_ns
    res = srv.cli(["run", "--state", str(runs / "b")])
    assert 0 == res.returncode, res.stderr
    assert f"output: {runs / 'b' / 'output.jsonl'}" in res.stderr
    assert 6 == len(read_output(runs / "b" / "output.jsonl"))
    assert before == (runs / "a" / "output.jsonl").stat().st_mtime_ns  # the original's untouched
    (runs / "b").rename(runs / "c")
    res = srv.cli(["run", "--state", str(runs / "c")])
    assert 0 == res.returncode, res.stderr
    assert (runs / "c" / "output.jsonl").exists()
    assert not (runs / "b").exists()  # the old place is not made again


def test_a_state_dir_from_before_finds_its_default_output_after_a_move(served, tmp_path: Path):
    """A checkpoint that remembered its output as an absolute path (before this release) and was then
    moved writes inside itself, not in the directory it was moved from."""
    from adapters.checkpoint.store import Store

    srv = served(Scenario(seed=37))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    old, new = tmp_path / "scratch" / "job", tmp_path / "project" / "job"
    assert 0 == srv.cli(["run", str(items), "--state", str(old), "--force-sync"]).returncode
    store = Store.open(old)
    inv = store.get_meta("invocation")
    store.set_meta(
        "invocation", {k: v for k, v in inv.items() if k != "state"} | {"out": str(old / "output.jsonl")}
    )
    store.close()
    new.parent.mkdir()
    old.rename(new)
    res = srv.cli(["run", "--state", str(new)])
    assert 0 == res.returncode, res.stderr
    assert (new / "output.jsonl").exists()
    assert not old.exists()


def test_a_relative_out_is_the_current_directorys_and_printed_whole(served, tmp_path: Path):
    from tests.integration.conftest import ROOT

    srv = served(Scenario(seed=38))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    rel = os.path.relpath(tmp_path / "results" / "o.jsonl", ROOT)  # the CLI runs in ROOT
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s"), "--out", rel, "--force-sync"])
    assert 0 == res.returncode, res.stderr
    assert f"output: {tmp_path / 'results' / 'o.jsonl'}" in res.stderr
    again = srv.cli(["run", "--state", str(tmp_path / "s")])  # remembered whole
    assert f"output: {tmp_path / 'results' / 'o.jsonl'}" in again.stderr


def test_an_input_sharing_no_id_with_the_job_is_exit_2_unless_added(served, tmp_path: Path):
    """A 3-item file with no id in common with the job's state dir joined it silently; now it is exit 2
    naming both files and the ways out, nothing sent; `--add-items` lets it join, and the output then
    lists every item of the job."""
    srv = served(Scenario(seed=39))
    first = write_items(tmp_path / "first.jsonl", ROWS)
    other = write_items(tmp_path / "other.jsonl", [{"id": f"new-{i}", "prompt": f"p {i}"} for i in range(3)])
    state = tmp_path / "s"
    assert 0 == srv.cli(["run", str(first), "--state", str(state), "--force-sync"]).returncode
    sent = len(srv.sim.log)
    res = srv.cli(["run", str(other), "--state", str(state), "--force-sync"])
    assert 2 == res.returncode
    (line,) = [x for x in res.stderr.splitlines() if x.strip()]
    assert str(other) in line and str(first) in line
    assert "--state" in line and "--add-items" in line
    assert sent == len(srv.sim.log)
    dry = srv.cli(["run", str(other), "--state", str(state), "--dry-run"])
    assert 2 == dry.returncode
    res = srv.cli(["run", str(other), "--state", str(state), "--force-sync", "--add-items"])
    assert 0 == res.returncode, res.stderr
    ids = [r["id"] for r in read_output(state / "output.jsonl")]
    assert [f"new-{i}" for i in range(3)] + [r["id"] for r in ROWS] == ids


def test_a_subset_of_the_job_is_a_warning_and_the_output_keeps_every_item(served, tmp_path: Path):
    srv = served(Scenario(seed=40))
    rows_ = [{**r, "metadata": {"k": r["id"]}} for r in ROWS]
    full = write_items(tmp_path / "full.jsonl", rows_)
    part = write_items(tmp_path / "part.jsonl", rows_[2:4])
    state = tmp_path / "s"
    assert 0 == srv.cli(["run", str(full), "--state", str(state), "--force-sync"]).returncode
    res = srv.cli(["run", str(part), "--state", str(state), "--force-sync"])
    assert 0 == res.returncode, res.stderr
    assert "warning:" in res.stderr and "2 of the 6 items" in res.stderr
    out = read_output(state / "output.jsonl")
    assert sorted(r["id"] for r in ROWS) == sorted(r["id"] for r in out)
    assert all(r["status"] == "succeeded" and r["metadata"] == {"k": r["id"]} for r in out)


def test_a_sync_route_of_a_smaller_job_is_decided_again_when_the_job_grows_past_the_threshold(
    served, tmp_path: Path
):
    """Was: the route stayed 'sync (6 requests < threshold)' for a job grown to 16 (full price where
    batch halves it). The new items go by batch; the answered ones are not sent again."""
    srv = served(Scenario(seed=41, batch_seconds=0.1))
    flags = ["--sync-threshold", "10", "--otpm", "400000", "--poll-interval", "0.1"]
    small = write_items(tmp_path / "small.jsonl", ROWS)
    state = tmp_path / "s"
    assert 0 == srv.cli(["run", str(small), "--state", str(state), *flags]).returncode
    assert not srv.sim.batches
    grown_rows = ROWS + [{"id": f"more-{i}", "prompt": f"more {i}"} for i in range(10)]
    grown = write_items(tmp_path / "grown.jsonl", grown_rows)
    res = srv.cli(["run", str(grown), "--state", str(state), *flags])
    assert 0 == res.returncode, res.stderr
    (batch,) = srv.sim.batches
    out = {r["id"]: r for r in read_output(state / "output.jsonl")}
    assert {out[f"more-{i}"]["custom_id"] for i in range(10)} == set(batch.custom_ids)
    assert all(out[r["id"]]["route"] == "sync" for r in ROWS)
