"""kill -9 in the middle of a harvest (a real subprocess, real HTTP): nothing lost, nothing resent."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from pathlib import Path

import pytest

from adapters.checkpoint.store import Store
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests import children
from tests.children import Child
from tests.integration.conftest import outcomes_so_far

N = 600  # a harvest of 24 chunks of 25 lines, 0.05 s apart: killed after 200 are durable


def child(base_url: str, state: Path) -> Child:
    """`python -m tests.batch.kill_child ...` in a process of its own (see tests/children.py)."""
    return children.start("tests.batch.kill_child", [base_url, str(state), str(N), "50"], env=os.environ)


@pytest.mark.integration
@pytest.mark.slow
def test_kill_9_mid_harvest_loses_nothing_and_resends_nothing(tmp_path: Path) -> None:
    state = tmp_path / "state"
    # 0.25 s: a power of two, so created_at + batch_seconds - created_at is exact (see the report: the
    # simulator expires the last request of a batch when that difference rounds below batch_seconds)
    scenario = Scenario(batch_seconds=0.25, results_chunk_lines=25, results_line_delay=0.05)
    sim = Simulator(scenario)
    with serve(sim) as server:
        first = child(server.base_url, state)
        deadline = time.monotonic() + 30
        seen = 0
        while time.monotonic() < deadline and first.poll() is None:
            seen = outcomes_so_far(state)
            if seen >= 200:
                break
            time.sleep(0.02)
        assert first.poll() is None, first.stderr.read()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        assert -signal.SIGKILL == first.returncode
        at_kill = outcomes_so_far(state)
        assert 200 <= at_kill < N  # killed mid-harvest, with part of it durable

        second = child(server.base_url, state)
        _out, err = second.communicate(timeout=60)
        assert 0 == second.returncode, err[-3000:]

        submitted = Counter(sim.submitted_custom_ids())
        assert N == len(submitted)
        assert {1} == set(submitted.values())  # no custom_id paid for twice
        assert 1 == len(sim.batches)
        result_fetches = [e for e in sim.log if e.path.endswith("/results")]
        assert 2 == len(result_fetches)  # the second run resumed the same batch by id

    store = Store.open(state)
    try:
        assert {"succeeded": N, "miss": 0, "quarantined": 0, "pending": 0} == store.counts()
    finally:
        store.close()
