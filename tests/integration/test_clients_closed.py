"""A program that runs job after job in one process (`judge()` in a loop, a notebook, a test suite)
keeps no socket of a finished run: the clients a run builds are closed at its end; a caller's own
client stays open, the caller's to close."""

from __future__ import annotations

import contextlib
import sys
import time
from pathlib import Path

import pytest

from adapters.run.job import judge
from adapters.run.settings import JobSettings
from adapters.simulator.scenario import Scenario

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="counts /proc/self/fd")


def _sockets() -> int:
    n = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed while listed
            n += str(fd.readlink()).startswith("socket:")
    return n


def _settled(baseline: int, timeout: float = 5.0) -> int:
    """The process's socket count once the server's side has seen the clients go (at most `timeout`)."""
    end = time.monotonic() + timeout
    while (n := _sockets()) > baseline and time.monotonic() < end:
        time.sleep(0.05)
    return n


def test_runs_one_after_another_leave_no_socket_open(served, tmp_path):
    server = served(Scenario(seed=3))
    environ = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-test"}
    items = [{"id": f"q{i}", "prompt": f"grade answer {i}"} for i in range(6)]
    baseline = _sockets()
    for k in range(4):
        result = judge(
            items,
            rubric="Be strict.",
            state_dir=tmp_path / f"s{k}",
            settings=JobSettings(force="sync"),
            environ=environ,
        )
        assert 0 == result.exit_code, result.fatal
    assert baseline == _settled(baseline)  # before: one or two sockets more after every run
