"""The batch machine's promises, through the CLI and the real SDK over real HTTP against the simulator:
a spent retry budget is fresh on rerun, one breaker behaviour whatever the job's size, and an endpoint
that cannot be reached at all ends the run at once."""

from __future__ import annotations

import collections
import socket
from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

FAST = ["--force-batch", "--poll-interval", "0.05"]


def _items(tmp_path: Path, n: int) -> Path:
    return write_items(tmp_path / "in.jsonl", [{"id": f"b{i}", "prompt": f"grade {i}"} for i in range(n)])


def test_a_spent_retry_budget_is_fresh_on_rerun_so_rerunning_until_exit_0_ends(served, tmp_path):
    """5 items whose first three sends fail with api_error, --max-attempts 2: run 1 exits 3; run 2 sends
    again (a fresh budget) and ends 0; each output line counts the 4 sends that came back."""
    srv = served(Scenario(seed=8, batch_seconds=0.05, batch_failures=3))
    args = ["run", str(_items(tmp_path, 5)), "--state", str(tmp_path / "s"), "--max-attempts", "2", *FAST]
    first = srv.cli(args, timeout=60)
    assert 3 == first.returncode, first.stderr[-2000:]
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    second = srv.cli(args, timeout=60)
    assert 0 == second.returncode, second.stderr[-2000:]
    rows = read_output(tmp_path / "s" / "output.jsonl")
    assert [("succeeded", 4)] * 5 == [(r["status"], r["attempts"]) for r in rows]
    assert {4} == set(collections.Counter(c for b in srv.creates() for c in b).values())


@pytest.mark.parametrize("n", [1, 25])
def test_a_batch_job_whose_requests_are_all_invalid_exits_4_with_nothing_quarantined(served, tmp_path, n):
    srv = served(Scenario(seed=9, batch_seconds=0.05, batch_mix={"invalid_request": 1.0}))
    res = srv.cli(["run", str(_items(tmp_path, n)), "--state", str(tmp_path / "s"), *FAST], timeout=60)
    assert 4 == res.returncode, res.stderr[-2000:]
    assert "invalid" in res.stderr
    assert ["pending"] * n == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 1 == len(srv.creates())


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_endpoint_exits_4_at_once_naming_it(served, tmp_path):
    """A connection refused on the run's first contact is not retried for minutes: exit 4, the URL named."""
    srv = served(Scenario())
    url = f"http://127.0.0.1:{_closed_port()}"
    srv.base_url = url
    res = srv.cli(["run", str(_items(tmp_path, 3)), "--state", str(tmp_path / "s"), *FAST], timeout=30)
    assert 4 == res.returncode, res.stderr[-2000:]
    assert url in res.stderr
    assert ["pending"] * 3 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
