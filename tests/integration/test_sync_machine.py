"""The sync run machine through the CLI, the real SDK and real HTTP against the simulator.

Each test asserts what a user sees (exit status, output lines, stderr) and what the simulator was sent.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import RUBRIC, cli_in_process, read_output, write_items

pytestmark = pytest.mark.integration


def _rubric(tmp_path: Path) -> Path:
    path = tmp_path / "rubric.txt"
    path.write_text(RUBRIC)
    return path


def test_the_probe_waits_out_retry_after_before_resending(served, tmp_path):
    """The probe's first send gets a 429 with retry-after 1: it is sent again no sooner than 1 s later."""
    srv = served(Scenario(seed=11, sync_faults={1: "429"}, retry_after=1.0, send_retry_after_ms=False))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"p{i}", "prompt": f"grade {i}"} for i in range(4)])
    res = srv.cli(["run", str(items), "--rubric", str(_rubric(tmp_path)), "--state", str(tmp_path / "s")])
    assert 0 == res.returncode, res.stderr
    sends = srv.sim.message_requests()
    assert (429, 200) == (sends[0].status, sends[1].status)
    assert sends[1].time - sends[0].time >= 1.0
    assert sends[0].digest == sends[1].digest, "the probe's item is what was sent again"
    rows = read_output(tmp_path / "s" / "output.jsonl")
    assert {"succeeded"} == {r["status"] for r in rows}
    assert [2, 1, 1, 1] == [r["attempts"] for r in rows]


@pytest.mark.parametrize("n", [1, 5])
def test_a_sync_job_whose_every_request_is_invalid_trips_the_breaker(served, tmp_path, n):
    """1 or 5 items, all invalid: exit 4, nothing quarantined, every item pending (a broken job)."""
    srv = served(Scenario(seed=12))
    rows = [{"id": f"bad{i}", "prompt": f"grade {i} [[sim:invalid]]"} for i in range(n)]
    items = write_items(tmp_path / "in.jsonl", rows)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s")])
    assert 4 == res.returncode, res.stderr
    assert "invalid" in res.stderr
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert ["pending"] * n == [r["status"] for r in out]


def test_a_few_invalid_items_among_good_ones_are_quarantined(served, tmp_path):
    srv = served(Scenario(seed=13))
    rows = [{"id": "bad", "prompt": "grade [[sim:invalid]]"}] + [
        {"id": f"ok{i}", "prompt": f"g {i}"} for i in range(4)
    ]
    items = write_items(tmp_path / "in.jsonl", rows)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s")])
    assert 0 == res.returncode, res.stderr
    out = {r["id"]: r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}
    assert {"bad": "quarantined", **{f"ok{i}": "succeeded" for i in range(4)}} == out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("flags", [[], ["--otpm", "400000"]], ids=["probe", "first-send"])
def test_an_unreachable_endpoint_stops_the_run_within_seconds_naming_it(tmp_path, flags):
    """Nothing listens at ANTHROPIC_BASE_URL: exit 4 within seconds, the URL named, items pending."""
    url = f"http://127.0.0.1:{_free_port()}"
    items = write_items(tmp_path / "in.jsonl", [{"id": f"u{i}", "prompt": f"grade {i}"} for i in range(30)])
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="sk-test")
    started = time.monotonic()
    res = cli_in_process(["run", str(items), "--state", str(tmp_path / "s"), *flags], env=env, timeout=60)
    assert 4 == res.returncode, res.stderr
    assert time.monotonic() - started < 20
    assert url in res.stderr
    assert res.stderr.count("connection") <= 3, "one stop, not a warning per item"
    assert {"pending"} == {r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")}


def test_a_large_max_tokens_job_is_answered_through_streaming(served, tmp_path):
    """--max-tokens 32000: the SDK refuses it unstreamed; the sync route streams and every item succeeds."""
    srv = served(Scenario(seed=14))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"s{i}", "prompt": f"grade {i}"} for i in range(3)])
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s"), "--max-tokens", "32000"])
    assert 0 == res.returncode, res.stderr
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert {"succeeded"} == {r["status"] for r in out}
    assert all(r["text"].startswith("Score:") for r in out)
    sends = srv.sim.message_requests()
    assert 3 == len(sends)
    assert all(e.stream for e in sends)
