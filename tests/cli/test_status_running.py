"""`status` tells a run that holds the state dir from one that is gone, by the lock file's stamp alone
(`adapters.checkpoint.statelock.running_holder`): it never takes the lock, so it cannot make a starting run
find the state dir taken."""

from __future__ import annotations

import datetime
import socket
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.statelock import LOCK_NAME, running_holder


def _stamp(state: Path, pid: int, *, since: datetime.datetime, host: str | None = None) -> None:
    state.mkdir(exist_ok=True)
    stamp = {"host": host or socket.gethostname(), "pid": pid, "command": "run", "since": since.isoformat()}
    (state / LOCK_NAME).write_bytes(orjson.dumps(stamp) + b"\n")


def _now() -> datetime.datetime:
    return datetime.datetime.now(datetime.UTC).replace(microsecond=0)


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_a_live_run_that_wrote_the_stamp_is_running(tmp_path, sleeper):
    _stamp(tmp_path / "s", sleeper.pid, since=_now())
    assert f"run (pid {sleeper.pid} on {socket.gethostname()}, since " in (
        running_holder(tmp_path / "s") or ""
    )


def test_a_pid_that_started_after_the_stamp_is_a_reused_one_not_the_run(tmp_path, sleeper):
    _stamp(tmp_path / "s", sleeper.pid, since=_now() - datetime.timedelta(hours=1))
    assert running_holder(tmp_path / "s") is None


def test_a_dead_run_a_released_lock_and_no_lock_are_not_running(tmp_path):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    _stamp(tmp_path / "s", gone.pid, since=_now())  # a kill -9 leaves its stamp
    assert running_holder(tmp_path / "s") is None
    (tmp_path / "s" / LOCK_NAME).write_bytes(b"")  # a run that ended cleared it
    assert running_holder(tmp_path / "s") is None
    assert running_holder(tmp_path / "none") is None


def test_a_run_on_another_host_is_named_as_its_stamp_says(tmp_path):
    _stamp(tmp_path / "s", 4242, since=_now(), host="node17.cluster")
    assert (running_holder(tmp_path / "s") or "").startswith("run (pid 4242 on node17.cluster, since ")
