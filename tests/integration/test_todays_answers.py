"""Every answer read for what it is, end to end: the CLI, the real SDK and real HTTP to the simulator.

A refusal is a final miss of class MODEL_REFUSAL on both routes (sent once, never scored, its
stop_details kept); an account state stops the run with exit 4 and one line naming it, quarantines
nothing, and a rerun once the account is fixed finishes with no item paid twice; a slow create body
(`request_body_timeout`) is split; a ramp limit is waited out like any rate limit.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import orjson
import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import RUBRIC, read_output, write_items

pytestmark = pytest.mark.integration

FAST = ["--poll-interval", "0.05"]
ROUTES = [pytest.param("--force-sync", id="sync"), pytest.param("--force-batch", id="batch")]
ACCOUNT = "judgecore: the API refused the account: "
# the cause each account state is named by on the stderr line
CAUSES = {
    "organization_on_hold": "organization_on_hold",
    "spend_limit": "spend_limit_reached",  # a 400 with no error_code: the API's words say it
    "enforced_spend_limit_reached": "enforced_spend_limit_reached",
    "contract_spend_limit_reached": "contract_spend_limit_reached",
    "linked_organization_spend_limit_reached": "linked_organization_spend_limit_reached",
    "linked_organization_billing_unavailable": "linked_organization_billing_unavailable",
}


def _job(tmp_path: Path, n: int, refused: frozenset[int] = frozenset()) -> tuple[Path, Path]:
    rows = [
        {"id": f"i{k}", "prompt": f"answer #{k}" + (" [[sim:refusal]]" if k in refused else "")}
        for k in range(n)
    ]
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC)
    return write_items(tmp_path / "items.jsonl", rows), rubric


def _run(srv, tmp_path: Path, items: Path, rubric: Path, *flags: str):
    state = tmp_path / "s"
    return srv.cli(["run", str(items), "--rubric", str(rubric), "--state", str(state), *FAST, *flags])


def _sends(srv, route: str) -> int:
    """Requests the simulator was asked to answer: sync messages, or requests put in batch creates."""
    return len(srv.sim.message_requests()) if route == "--force-sync" else len(srv.sim.submitted_custom_ids())


@pytest.mark.parametrize("route", ROUTES)
def test_a_refusal_is_a_final_miss_sent_once_never_scored_with_its_stop_details(served, tmp_path, route):
    partial = route == "--force-batch"  # an empty refusal on one route, a partial one on the other
    srv = served(Scenario(seed=21, batch_seconds=0.2, refusal_partial=partial, refusal_category="bio"))
    items, rubric = _job(tmp_path, 8, frozenset({2, 5}))
    verdict = tmp_path / "verdict.json"
    verdict.write_bytes(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}))
    res = _run(srv, tmp_path, items, rubric, route, "--verdict", str(verdict))
    assert 0 == res.returncode, res.stderr
    assert 8 == _sends(srv, route), "a refusal is final: never sent again"
    rows = {r["id"]: r for r in read_output(tmp_path / "s" / "output.jsonl")}
    for k in (2, 5):
        r = rows[f"i{k}"]
        assert ("miss", "refusal", None) == (r["status"], r["stop_reason"], r["verdict"])
        assert ("MODEL_REFUSAL", "bio") == (r["error"]["class"], r["error"]["type"])
        assert "refusal" == r["stop_details"]["type"] and "bio" == r["stop_details"]["category"]
        assert bool(r["text"]) == partial  # the text as it came: empty, or the start of an answer
    others = [r for r in rows.values() if r["id"] not in ("i2", "i5")]
    assert {"succeeded"} == {r["status"] for r in others}
    assert all("stop_details" not in r for r in others), "other lines keep the shape they had"
    summary = srv.cli(["summary", "--state", str(tmp_path / "s"), "--json", "--verdict", str(verdict)])
    assert 0 == summary.returncode, summary.stderr
    s = orjson.loads(summary.stdout)
    assert (2, 6, 2) == (s["refusals"], s["scored"], s["classes"]["MODEL_REFUSAL"])
    text = srv.cli(["summary", "--state", str(tmp_path / "s"), "--verdict", str(verdict)]).stdout
    assert "refusals     2" in text
    again = _run(srv, tmp_path, items, rubric, route)
    assert (0, 8) == (again.returncode, _sends(srv, route)), again.stderr


def _account_line(stderr: str, state: str) -> None:
    lines = [line for line in stderr.splitlines() if CAUSES[state] in line or "refused the account" in line]
    assert 1 == len(lines), stderr
    assert lines[0].startswith(ACCOUNT + CAUSES[state] + ": ")
    assert lines[0].endswith("nothing was quarantined; rerun once the account is fixed")


def _fix_and_rerun(srv, tmp_path: Path, items: Path, rubric: Path, route: str, n: int) -> None:
    srv.sim.scenario = attrs.evolve(srv.sim.scenario, account_state=None)  # the account is fixed
    again = _run(srv, tmp_path, items, rubric, route)
    assert 0 == again.returncode, again.stderr
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert ["succeeded"] * n == [r["status"] for r in out]
    assert n == len(srv.sim.billed), "no item paid twice"


@pytest.mark.parametrize("state", sorted(CAUSES))
def test_an_account_state_on_the_sync_route_stops_quarantines_nothing_and_a_rerun_finishes(
    served, tmp_path, state
):
    srv = served(Scenario(seed=22, account_state=state))
    items, rubric = _job(tmp_path, 12)
    res = _run(srv, tmp_path, items, rubric, "--force-sync")
    assert 4 == res.returncode, res.stderr
    _account_line(res.stderr, state)
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert ["pending"] * 12 == [r["status"] for r in out], "nothing quarantined: every item pending"
    assert "ACCOUNT_STATE" == out[0]["error"]["class"], "the line says why it waits"
    assert len(srv.sim.message_requests()) <= 2, "stopped at once, not retried per item"
    _fix_and_rerun(srv, tmp_path, items, rubric, "--force-sync", 12)


@pytest.mark.parametrize("state", sorted(CAUSES))
def test_a_batch_create_refused_with_an_account_state_stops_and_a_rerun_finishes(served, tmp_path, state):
    srv = served(Scenario(seed=23, batch_seconds=0.2, account_state=state, account_state_where={"creates"}))
    items, rubric = _job(tmp_path, 12)
    res = _run(srv, tmp_path, items, rubric, "--force-batch", "--max-batch-requests", "4")
    assert 4 == res.returncode, res.stderr
    _account_line(res.stderr, state)
    assert ["pending"] * 12 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert [] == srv.creates() and () == srv.sim.billed
    _fix_and_rerun(srv, tmp_path, items, rubric, "--force-batch", 12)


@pytest.mark.parametrize("state", ["organization_on_hold", "contract_spend_limit_reached", "spend_limit"])
def test_batch_lines_errored_with_an_account_state_stay_pending_and_stop_after_the_harvest(
    served, tmp_path, state
):
    srv = served(Scenario(seed=24, batch_seconds=0.2, account_state=state, account_state_where={"lines"}))
    items, rubric = _job(tmp_path, 10)
    res = _run(srv, tmp_path, items, rubric, "--force-batch")
    assert 4 == res.returncode, res.stderr
    _account_line(res.stderr, state)
    assert ["pending"] * 10 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 1 == len(srv.creates()), "no further sub-batch created after the harvest"
    _fix_and_rerun(srv, tmp_path, items, rubric, "--force-batch", 10)
    assert 2 == len(srv.creates())


def test_account_state_lines_of_batches_an_earlier_run_sent_do_not_stop_the_rerun(served, tmp_path):
    """Three sub-batches ran while the account was on hold; the first run stopped at the first. Once
    the account is fixed, one rerun harvests the other two (a warning each) and sends every errored
    item: it used to stop with exit 4 at each old sub-batch in turn."""
    srv = served(
        Scenario(
            seed=28, batch_seconds=0.3, account_state="organization_on_hold", account_state_where={"lines"}
        )
    )
    items, rubric = _job(tmp_path, 12)
    res = _run(srv, tmp_path, items, rubric, "--force-batch", "--max-batch-requests", "4")
    assert 4 == res.returncode, res.stderr
    assert 3 == len(srv.creates()), "all three were sent before the first ended"
    srv.sim.scenario = attrs.evolve(srv.sim.scenario, account_state=None)  # the account is fixed
    again = _run(srv, tmp_path, items, rubric, "--force-batch", "--max-batch-requests", "4")
    assert 0 == again.returncode, again.stderr
    earlier = [line for line in again.stderr.splitlines() if "sent by an earlier run" in line]
    assert 2 == len(earlier), again.stderr
    assert ["succeeded"] * 12 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 12 == len(srv.sim.billed), "no item paid twice"


def test_the_sync_tally_counts_the_probes_answer_as_this_runs(served, tmp_path):
    """The README's first job said `20/20 done (1 before this run; this run: 19 succeeded)`."""
    srv = served(Scenario(seed=29))
    items, rubric = _job(tmp_path, 20)
    res = _run(srv, tmp_path, items, rubric)
    assert 0 == res.returncode, res.stderr
    assert "probe: i0 answered" in res.stderr and "before this run" not in res.stderr, res.stderr
    assert "sync: 20/20 done (20 succeeded)" in res.stderr, res.stderr


def test_a_spend_limit_429_stops_the_run_within_a_bounded_number_of_sends(served, tmp_path):
    """40 items, no probe, no warm-up (no rubric), 16 in flight: a spend limit is not a rate limit to retry."""
    srv = served(Scenario(seed=25, account_state="enforced_spend_limit_reached"))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"p{k}", "prompt": f"grade {k}"} for k in range(40)])
    state = tmp_path / "s"
    res = srv.cli(["run", str(items), "--state", str(state), "--force-sync", "--otpm", "400000"])
    assert 4 == res.returncode, res.stderr
    _account_line(res.stderr, "enforced_spend_limit_reached")
    assert len(srv.sim.message_requests()) <= 16, "at most what was in flight, never 10 per item"
    assert ["pending"] * 40 == [r["status"] for r in read_output(state / "output.jsonl")]


def test_a_request_body_timeout_on_a_large_create_splits_it_and_the_job_finishes(served, tmp_path):
    srv = served(Scenario(seed=26, batch_seconds=0.2, body_timeout_above=40_000))
    items, rubric = _job(tmp_path, 24)
    res = _run(srv, tmp_path, items, rubric, "--force-batch")
    assert 0 == res.returncode, res.stderr
    refused = [e for e in srv.sim.requests("POST", "/v1/messages/batches") if e.status == 400]
    assert refused and {"request_body_timeout"} == {e.fault for e in refused}
    assert len(srv.creates()) >= 2 and 24 == sum(len(c) for c in srv.creates())
    assert ["succeeded"] * 24 == [r["status"] for r in read_output(tmp_path / "s" / "output.jsonl")]
    assert 24 == len(srv.sim.billed)


def test_a_ramp_limit_is_retried_as_a_rate_limit(served, tmp_path):
    srv = served(Scenario(seed=27, sync_faults={2: "ramp"}, retry_after=1.0))
    items, rubric = _job(tmp_path, 5)
    res = _run(srv, tmp_path, items, rubric, "--force-sync")
    assert 0 == res.returncode, res.stderr
    sends = srv.sim.message_requests()
    assert [429] == [e.status for e in sends if e.status != 200] and 6 == len(sends)
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert ["succeeded"] * 5 == [r["status"] for r in out]
    assert 6 == sum(r["attempts"] for r in out)
