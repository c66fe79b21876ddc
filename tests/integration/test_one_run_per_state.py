"""One run per state dir, and a checkpoint that is safe on a network filesystem."""

from __future__ import annotations

import signal
import sqlite3
from pathlib import Path

import pytest

from adapters.checkpoint.statelock import StateLockedError
from adapters.checkpoint.store import Store
from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]


def _journal(state: Path) -> str:
    db = sqlite3.connect(state / "judgecore.sqlite3")
    try:
        return db.execute("PRAGMA journal_mode").fetchone()[0]
    finally:
        db.close()


def test_a_second_opener_of_a_state_dir_is_refused_and_the_lock_goes_with_close(tmp_path: Path):
    first = Store.open(tmp_path / "s", exclusive="run")
    with pytest.raises(StateLockedError, match=r"another judgecore run \(pid \d+ on .+, since "):
        Store.open(tmp_path / "s", exclusive="cancel")
    reader = Store.open(tmp_path / "s")  # status and summary never wait for a run
    reader.close()
    first.close()
    Store.open(tmp_path / "s", exclusive="cancel").close()
    assert 0o600 == (tmp_path / "s" / "judgecore.lock").stat().st_mode & 0o777


def test_a_second_run_is_refused_naming_the_first_which_finishes_untouched(served, tmp_path: Path):
    """While one run polls its batch, a second run (or a cancel) on the same state dir is exit 2 naming
    the process that holds it, and sends nothing; the first then finishes as if alone."""
    srv = served(Scenario(seed=31, never_end=True))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"l{i}", "prompt": f"grade {i}"} for i in range(50)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    first = srv.spawn(args)
    try:
        srv.wait_for(lambda: srv.polls() >= 1)
        sent = len(srv.sim.log)
        second = srv.cli(args, timeout=60)
        assert 2 == second.returncode, second.stderr
        assert f"pid {first.pid}" in second.stderr
        assert 1 == len(second.stderr.strip().splitlines()), second.stderr
        cancel = srv.cli(["cancel", "--state", str(tmp_path / "s")], timeout=60)
        assert 2 == cancel.returncode and f"pid {first.pid}" in cancel.stderr
        status = srv.cli(["status", "--state", str(tmp_path / "s")], timeout=60)
        assert f"running now: run (pid {first.pid} on " in status.stdout, status.stdout
        assert "resume with" not in status.stdout  # that command would be refused while it runs
        assert not [e for e in srv.sim.log[sent:] if e.method == "POST"]  # nothing sent by either
        srv.sim.scenario = Scenario(seed=31, batch_seconds=0.1)  # let the first one's batch end
        _, err = first.communicate(timeout=60)
    finally:
        if first.poll() is None:
            first.kill()
    assert 0 == first.returncode, err
    assert 1 == len(srv.creates())
    assert {"succeeded"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_the_lock_of_a_killed_run_is_taken_over(served, tmp_path: Path):
    """kill -9 leaves the lock file but no lock: the next run takes the state dir and resumes."""
    srv = served(Scenario(seed=32, never_end=True))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"k{i}", "prompt": f"grade {i}"} for i in range(30)])
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--force-batch", *FAST_POLL]
    proc = srv.spawn(args)
    srv.wait_for(lambda: srv.polls() >= 1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert (tmp_path / "s" / "judgecore.lock").exists()
    status = srv.cli(["status", "--state", str(tmp_path / "s")], timeout=60)
    assert "resume with:" in status.stdout and "running now" not in status.stdout, status.stdout
    srv.sim.scenario = Scenario(seed=32, batch_seconds=0.1)
    res = srv.cli(args, timeout=60)
    assert 0 == res.returncode, res.stderr
    assert 1 == len(srv.creates())  # the same batch was polled, not created again


def test_a_state_dir_on_nfs_uses_the_rollback_journal_end_to_end(served, tmp_path: Path):
    """A state dir reported as NFS (`JUDGECORE_FS_TYPE`, as the mount table would) gets the rollback
    journal, no WAL files, and a run there, killed and resumed, finishes with nothing paid twice."""
    srv = served(Scenario(seed=33, never_end=True))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"n{i}", "prompt": f"grade {i}"} for i in range(40)])
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--force-batch", *FAST_POLL]
    env_before = srv.env
    srv.env = lambda key="sk-test": {**env_before(key), "JUDGECORE_FS_TYPE": "nfs4"}
    proc = srv.spawn(args)
    srv.wait_for(lambda: srv.polls() >= 1)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    srv.sim.scenario = Scenario(seed=33, batch_seconds=0.1)
    res = srv.cli(args, timeout=60)
    assert 0 == res.returncode, res.stderr
    assert "delete" == _journal(state)
    assert not (state / "judgecore.sqlite3-wal").exists()
    assert 1 == len(srv.creates())
    assert {"succeeded"} == {r["status"] for r in read_output(state / "output.jsonl")}
    status = srv.cli(["status", "--state", str(state)], timeout=60)
    assert 0 == status.returncode, status.stderr


def test_a_local_state_dir_keeps_wal(tmp_path: Path):
    store = Store.open(tmp_path / "s", fs_type="ext4")
    store.close()
    assert "wal" == _journal(tmp_path / "s")
    nfs = Store.open(tmp_path / "s", fs_type="nfs")  # moved onto NFS: switched to the rollback journal
    assert nfs.mode is not None and nfs.mode.network
    nfs.close()
    assert "delete" == _journal(tmp_path / "s")
