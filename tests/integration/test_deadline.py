"""`--deadline WHEN` (CONTRACT.md "A deadline"): a bad value is exit 2 before anything is sent; at the
deadline a batch that has not ended is waited on no longer: the output says `pending`, exit 3; a rerun
without `--deadline` has none and waits for the batch."""

from __future__ import annotations

import json
import time

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

FAST = ["--force-batch", "--poll-interval", "0.05"]


def _items(tmp_path, n):
    return write_items(tmp_path / "items.jsonl", [{"id": str(i), "prompt": f"q{i}"} for i in range(n)])


@pytest.mark.parametrize("when", ["soon", "0s", "-5m", "17:00", "2026-12-03T17:00"])
def test_a_bad_deadline_is_exit_2_naming_the_flag_and_sends_nothing(served, tmp_path, when):
    srv = served(Scenario(seed=1, batch_seconds=0.05))
    res = srv.cli(
        ["run", str(_items(tmp_path, 3)), "--state", str(tmp_path / "s"), *FAST, "--deadline", when]
    )
    assert 2 == res.returncode
    assert "--deadline" in res.stderr
    assert [] == srv.creates()


def test_a_batch_still_running_at_the_deadline_is_left_pending_exit_3_and_a_rerun_has_no_deadline(
    served, tmp_path
):
    srv = served(Scenario(seed=2, batch_seconds=6.0))
    args = ["run", str(_items(tmp_path, 4)), "--state", str(tmp_path / "s"), *FAST]
    start = time.monotonic()
    first = srv.cli([*args, "--deadline", "1s"], timeout=60)
    took = time.monotonic() - start
    assert 3 == first.returncode, first.stderr[-2000:]
    assert "deadline" in first.stderr and "reached" in first.stderr
    assert "--deadline" not in first.stderr.split("resume with:")[1]  # the resume command has none
    assert took < 4.5  # stopped at the deadline, not when the batch ended
    assert ["pending"] * 4 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 1 == len(srv.creates())
    status = srv.cli(["status", "--state", str(tmp_path / "s")])
    assert 1 == sum(
        line.strip().startswith("deadline of the last run:") for line in status.stdout.splitlines()
    )
    assert "(passed" in status.stdout
    second = srv.cli(args, timeout=60)  # no --deadline: the rerun waits for the same batch to end
    assert 0 == second.returncode, second.stderr[-2000:]
    assert ["succeeded"] * 4 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 1 == len(srv.creates())  # nothing resent: the batch left at the deadline was harvested
    assert "reached" not in second.stderr
    again = srv.cli(["status", "--state", str(tmp_path / "s"), "--json"])
    assert json.loads(again.stdout)["deadline"] is None  # the rerun had none


def test_a_deadline_too_close_for_any_batch_goes_all_sync_this_run_only(served, tmp_path):
    """A job the threshold sends to batches, with a one-minute deadline: no window for a batch, so this
    run sends every item on the sync route (one stderr line says why), and the route is not kept: the
    plan of the job grown by two items puts them on the batch route again."""
    srv = served(Scenario(seed=3, batch_seconds=0.05))
    flags = ["--state", str(tmp_path / "s"), "--sync-threshold", "1", "--otpm", "400000"]
    res = srv.cli(["run", str(_items(tmp_path, 5)), *flags, "--deadline", "1m"], timeout=60)
    assert 0 == res.returncode, res.stderr[-2000:]
    assert 1 == sum("sync for this run only" in line for line in res.stderr.splitlines())
    rows = read_output(tmp_path / "s" / "output.jsonl")
    assert [("succeeded", "sync")] * 5 == [(r["status"], r["route"]) for r in rows]
    assert [] == srv.creates()
    plan = srv.cli(["run", str(_items(tmp_path, 7)), *flags, "--dry-run", "--json"])
    assert 0 == plan.returncode, plan.stderr[-2000:]
    got = json.loads(plan.stdout)
    assert ("batch", 2) == (got["route"], got["to_send"])


def test_the_dry_run_shows_the_latest_switch_time_and_the_most_the_deadline_adds(served, tmp_path):
    srv = served(Scenario(seed=5))
    items = _items(tmp_path, 30)
    flags = ["--state", str(tmp_path / "s"), "--sync-threshold", "1", "--dry-run"]
    text = srv.cli(["run", str(items), *flags, "--deadline", "2h"])
    assert 0 == text.returncode, text.stderr[-2000:]
    assert "switch to the sync route at" in text.stdout and "the deadline adds at most $" in text.stdout
    got = json.loads(srv.cli(["run", str(items), *flags, "--deadline", "2h", "--json"]).stdout)["deadline"]
    assert got["latest_switch"] < got["deadline"] and not got["all_sync_from_start"]
    assert got["most_added_usd"] == pytest.approx(got["all_batch_usd"])  # sync is twice the batch price
    close = json.loads(srv.cli(["run", str(items), *flags, "--deadline", "2m", "--json"]).stdout)["deadline"]
    assert close["all_sync_from_start"] and close["latest_switch"] is None
    plain = json.loads(srv.cli(["run", str(items), *flags, "--json"]).stdout)
    assert "deadline" not in plain
    assert [] == srv.creates()
