"""The job's route and plan across runs, through the CLI and the real SDK against the simulator.

A route decided on an assumed tier is provisional and decided again by the next run that reads the
tier; a dry run on an existing state dir plans what that run would do.
"""

from __future__ import annotations

import collections

import orjson
import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]


def _status(srv, state) -> dict:
    res = srv.cli(["status", "--state", str(state), "--json"])
    return orjson.loads(res.stdout)


def test_a_route_guessed_under_a_bad_key_is_decided_again_once_the_tier_is_read(served, tmp_path):
    """Run 1 with a bad key: the probe is refused (401, no tier read), exit 4, the 50-item job's route
    is sync on the assumed 400,000 OTPM, provisional. Run 2 with a good key on a 4,000 OTPM tier
    (threshold 20) probes again, reads the tier, and sends the job to batches."""
    srv = served(Scenario(seed=21, advertised_otpm=4000, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"g{i}", "prompt": f"grade {i}"} for i in range(50)])
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), *FAST_POLL]

    first = srv.cli(args, key="sk-bad")
    assert 4 == first.returncode, first.stderr
    stored = _status(srv, state)["route"]
    assert ("sync", "assumed", False) == (stored["path"], stored["otpm_source"], stored["forced"])
    assert not srv.creates()

    second = srv.cli(args)
    assert 0 == second.returncode, second.stderr
    assert "decided again" in second.stderr
    stored = _status(srv, state)["route"]
    assert ("batch", "read", 4000, 20) == (
        stored["path"],
        stored["otpm_source"],
        stored["otpm"],
        stored["threshold"],
    )
    rows = read_output(state / "output.jsonl")
    assert collections.Counter({"succeeded": 50}) == collections.Counter(r["status"] for r in rows)
    assert collections.Counter({"batch": 49, "sync": 1}) == collections.Counter(r["route"] for r in rows)
    sent = [cid for c in srv.creates() for cid in c]
    assert len(sent) == len(set(sent)) == 49

    third = srv.cli(args)
    assert 0 == third.returncode, third.stderr
    assert "decided again" not in third.stderr
    assert 49 == sum(len(c) for c in srv.creates())  # a known route, a final job: nothing more sent


def test_a_route_answered_on_is_kept_even_if_it_was_guessed(served, tmp_path):
    """No rate-limit headers at all (a proxy that strips them): the route stays provisional, but once
    items were answered on it, a rerun keeps it instead of probing again."""
    srv = served(Scenario(seed=22, sync_faults={3: "500"}, ratelimit_headers=False))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"h{i}", "prompt": f"grade {i}"} for i in range(6)])
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--max-attempts", "1"]
    first = srv.cli(args)
    assert 3 == first.returncode, first.stderr  # one item spent its one attempt on a 500
    route = _status(srv, state)["route"]
    assert ("sync", "assumed") == (route["path"], route["otpm_source"])
    sends_before = len(srv.sim.message_requests())
    second = srv.cli(args)
    assert 0 == second.returncode, second.stderr
    assert "decided again" not in second.stderr
    assert sends_before + 1 == len(srv.sim.message_requests())  # only the pending item, no new probe


def test_dry_run_agrees_with_the_run_on_an_existing_state_dir(served, tmp_path):
    """After a --force-batch run, a dry run without the flag plans batch (the kept route) with
    nothing left to send; with the rubric changed, it is exit 2 like the run, and sends nothing."""
    srv = served(Scenario(seed=23, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"d{i}", "prompt": f"grade {i}"} for i in range(40)])
    state = tmp_path / "s"
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade strictly.")
    base = ["run", str(items), "--state", str(state), "--rubric", str(rubric)]
    assert 0 == srv.cli([*base, "--force-batch", *FAST_POLL]).returncode
    log_before = len(srv.sim.log)

    dry = srv.cli([*base, "--dry-run", "--json"])
    assert 0 == dry.returncode, dry.stderr
    plan = orjson.loads(dry.stdout)
    assert ("batch", True, 40, 40, 0, []) == (
        plan["route"],
        plan["forced"],
        plan["n"],
        plan["final"],
        plan["to_send"],
        plan["sub_batches"],
    )
    rerun = srv.cli([*base, *FAST_POLL])
    assert 0 == rerun.returncode, rerun.stderr

    rubric.write_text("Grade leniently.")
    dry = srv.cli([*base, "--dry-run"])
    run = srv.cli(base)
    assert (2, 2) == (dry.returncode, run.returncode)
    assert "rubric_sha256" in dry.stderr and "rubric_sha256" in run.stderr
    assert log_before == len(srv.sim.log)


def test_a_rerun_of_a_finished_job_needs_no_client_and_rewrites_the_output(served, tmp_path):
    """Every item final, nothing live: the rerun sends nothing, needs no key, and writes the output
    again from the checkpoint (to a new --out too)."""
    srv = served(Scenario(seed=24))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"f{i}", "prompt": f"grade {i}"} for i in range(8)])
    state = tmp_path / "s"
    assert 0 == srv.cli(["run", str(items), "--state", str(state)]).returncode
    sent = len(srv.sim.log)
    again = srv.cli(
        ["run", str(items), "--state", str(state), "--out", str(tmp_path / "again.jsonl")], key=""
    )
    assert 0 == again.returncode, again.stderr
    assert "nothing to send" in again.stderr
    assert sent == len(srv.sim.log)
    assert read_output(state / "output.jsonl") == read_output(tmp_path / "again.jsonl")
