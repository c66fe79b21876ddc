"""A rerun of a finished job, unchanged, answers from the finished-job record without reading the
input or the checkpoint's rows; anything changed takes the whole path, which checks everything."""

from __future__ import annotations

import os

import adapters.run.planning
from adapters.simulator.scenario import Scenario

from .conftest import read_output, write_items


def _finished_job(served, tmp_path, n=12):
    srv = served(Scenario(seed=31))
    rows = [{"id": f"f{i}", "prompt": f"grade answer {i}"} for i in range(n)]
    items = write_items(tmp_path / "in.jsonl", rows)
    state = tmp_path / "s"
    first = srv.cli(["run", str(items), "--state", str(state)])
    assert 0 == first.returncode, first.stderr
    return srv, items, state, first


def _no_reading(monkeypatch):
    def refused(*args, **kwargs):
        raise AssertionError("the rerun read the input")

    monkeypatch.setattr(adapters.run.planning, "load_items", refused)


def test_an_unchanged_finished_job_reruns_without_reading_its_input(served, tmp_path, monkeypatch):
    """The same closing lines, exit 0, nothing sent, the output untouched, and the input never read."""
    srv, items, state, first = _finished_job(served, tmp_path)
    sent, out = len(srv.sim.log), state / "output.jsonl"
    before = out.stat().st_mtime_ns
    _no_reading(monkeypatch)
    again = srv.cli(["run", str(items), "--state", str(state)], key="")
    assert 0 == again.returncode, again.stderr
    assert "nothing to send" in again.stderr
    assert first.stderr.strip().splitlines()[-2:] == again.stderr.strip().splitlines()[-2:]
    assert (sent, before) == (len(srv.sim.log), out.stat().st_mtime_ns)
    alone = srv.cli(["run", "--state", str(state)], key="")  # resumed by its state dir alone: the same
    assert 0 == alone.returncode, alone.stderr


def test_a_changed_item_with_its_size_and_mtime_put_back_is_still_exit_2(served, tmp_path):
    """An edit that keeps the file's size and mtime (as `cp -p` or `touch -r` would) moves its ctime:
    the whole path runs and refuses the changed item, with nothing sent."""
    srv, items, state, _ = _finished_job(served, tmp_path)
    st = items.stat()
    data = items.read_bytes()
    items.write_bytes(data.replace(b"grade answer 3", b"grade answer X"))
    os.utime(items, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (st.st_size, st.st_mtime_ns) == (items.stat().st_size, items.stat().st_mtime_ns)
    sent = len(srv.sim.log)
    again = srv.cli(["run", str(items), "--state", str(state)])
    assert 2 == again.returncode, again.stderr
    assert sent == len(srv.sim.log)


def test_a_deleted_output_is_written_again_by_the_rerun(served, tmp_path):
    srv, items, state, _ = _finished_job(served, tmp_path)
    out = state / "output.jsonl"
    expected = read_output(out)
    out.unlink()
    again = srv.cli(["run", str(items), "--state", str(state)], key="")
    assert 0 == again.returncode, again.stderr
    assert expected == read_output(out)


def test_a_touched_input_takes_the_whole_path_and_keeps_the_record(served, tmp_path, monkeypatch):
    """Touched, not changed: read and checked again (exit 0, nothing sent); the record is then kept
    anew, so the next rerun is quick again."""
    srv, items, state, _ = _finished_job(served, tmp_path)
    os.utime(items)
    sent = len(srv.sim.log)
    again = srv.cli(["run", str(items), "--state", str(state)], key="")
    assert 0 == again.returncode, again.stderr
    assert sent == len(srv.sim.log)
    _no_reading(monkeypatch)
    third = srv.cli(["run", str(items), "--state", str(state)], key="")
    assert 0 == third.returncode, third.stderr


def test_the_first_rerun_of_a_job_started_without_max_tokens_reads_nothing(served, tmp_path, monkeypatch):
    """A job started without --max-tokens is resumed with the max_tokens its checkpoint holds: its
    finished record is keyed so, and the very first rerun answers from it."""
    srv = served(Scenario(seed=31))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"m{i}", "prompt": f"grade {i}"} for i in range(6)])
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Score the answer from 0 to 10.\n")
    state = tmp_path / "s"
    first = srv.cli(["run", str(items), "--state", str(state), "--rubric", str(rubric)])
    assert 0 == first.returncode, first.stderr
    sent = len(srv.sim.log)
    _no_reading(monkeypatch)
    again = srv.cli(["run", str(items), "--state", str(state), "--rubric", str(rubric)], key="")
    assert 0 == again.returncode, again.stderr
    assert "nothing read again" in again.stderr
    assert sent == len(srv.sim.log)
