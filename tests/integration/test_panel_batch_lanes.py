"""A panel across families whose lanes each take their own batch route (the contract's "one job, many
providers": each judge's requests routed, checkpointed, resumed and billed by its own provider's rules,
in one state dir). The real `anthropic` and `openai` SDKs over real HTTP to the simulator, which speaks
both batch wires on one port: Anthropic's Message Batches and OpenAI's Files + Batch API."""

from __future__ import annotations

import signal
import statistics
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario

from .conftest import ROOT, Served, cli_in_process, panel_env, panel_job, read_output

JUDGES = ["claude-sonnet-4-6", "openai:gpt-5-mini"]
ANTHROPIC_BATCHES = "/v1/messages/batches"
FILES = "/v1/files"
OPENAI_BATCHES = "/v1/batches"
# both lanes' own request count (40 each) at or over the threshold (20 at the reference limit; `--otpm`
# is the first judge's provider's, Anthropic's, so its threshold is 20 too): both batch
SIZE = ["--sync-threshold", "20", "--otpm", "400000", "--poll-interval", "0.05"]


def _ok(s: Served, path: str) -> int:
    """Calls to `POST path` the simulator answered 200 (what took effect)."""
    return sum(1 for e in s.sim.requests("POST", path) if e.status == 200)


def _cancels(s: Served) -> Counter[str]:
    """Cancel calls by wire."""
    return Counter(
        "openai" if e.path.startswith(OPENAI_BATCHES) else "anthropic"
        for e in s.sim.requests("POST")
        if e.path.endswith("/cancel")
    )


def test_both_lanes_batch_and_a_kill_between_intent_and_create_on_one_lane_pays_each_request_once(
    served, tmp_path: Path
) -> None:
    """Claude's lane creates its batch; OpenAI's lane uploads its file and is killed while its create
    hangs (the simulator drops it, nothing made). The rerun creates OpenAI's batch from the recorded
    upload (nothing uploaded twice), harvests Claude's, and folds both judges into every verdict."""
    from tests import children

    s = served(
        Scenario(
            batch_seconds=0.3, create_stall_seconds=60.0, openai=OpenAIScenario(create_faults={1: "stall"})
        )
    )
    n = 40
    args = panel_job(tmp_path, n, JUDGES, *SIZE)
    state = tmp_path / "state"
    first = children.start("adapters.cli", args, env=panel_env(s), cwd=ROOT)
    try:
        s.wait_for(lambda: len(s.sim.batches) >= 1 and _ok(s, FILES) >= 1, timeout=60)
        time.sleep(0.5)  # the OpenAI lane's create is sent and hangs
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    assert _ok(s, OPENAI_BATCHES) == 0  # killed between its intent (and upload) and its create

    # status names each provider's sub-batches: Claude's made (live or already harvested), OpenAI's an
    # intent whose create is not confirmed
    status = cli_in_process(["status", "--state", str(state)], env=panel_env(s))
    assert "sub-batches on Anthropic: " in status.stdout, status.stdout
    assert "sub-batches on OpenAI: intent 1" in status.stdout, status.stdout
    assert "(OpenAI) (create unconfirmed) 40 requests: intent" in status.stdout
    info = orjson.loads(cli_in_process(["status", "--state", str(state), "--json"], env=panel_env(s)).stdout)
    assert sorted(sb["lane"] for sb in info["sub_batches"]) == ["anthropic", "openai"]
    assert {j: v["route"] for j, v in info["judges"].items()} == dict.fromkeys(JUDGES, "batch")

    again = cli_in_process(["run", "--state", str(state)], env=panel_env(s))
    assert again.returncode == 0, again.stderr
    lines = read_output(state / "output.jsonl")
    assert len(lines) == n and {ln["status"] for ln in lines} == {"succeeded"}
    for line in lines:  # both judges' answers folded into each verdict: their median
        assert set(line["judges"]) == set(JUDGES)
        scores = [v["score"] for v in line["judges"].values()]
        assert line["verdict"] == {"score": statistics.median(scores)}
    # each wire got its own lane's batch, once; no request in two batches on either wire
    assert _ok(s, ANTHROPIC_BATCHES) == 1 and _ok(s, OPENAI_BATCHES) == 1
    assert _ok(s, FILES) == 1  # the rerun created OpenAI's batch from the recorded upload
    claude_ids = s.sim.submitted_custom_ids()
    openai_ids = [c for b in s.sim.openai.batches() for c in b.custom_ids]
    assert len(claude_ids) == len(set(claude_ids)) == n
    assert len(openai_ids) == len(set(openai_ids)) == n
    assert not set(claude_ids) & set(openai_ids)
    # paid once each, at the batch price, on each wire; nothing on either sync route
    assert Counter(route for route, _ in s.sim._billed) == Counter({"batch": n})
    assert Counter((m, route) for m, route, _ in s.sim.openai.billed) == Counter({("gpt-5-mini", "batch"): n})
    # summary gives each judge's route and its provider's sub-batches
    summary = " ".join(cli_in_process(["summary", "--state", str(state)], env=panel_env(s)).stdout.split())
    assert "spend by openai:gpt-5-mini: $0.0" in summary and "; batch, 1 sub-batch on openai)" in summary
    assert "; batch, 1 sub-batch on anthropic)" in summary


def test_a_mixed_panels_dry_run_prices_both_lanes_at_the_batch_price(served, tmp_path: Path) -> None:
    """Both lanes batch: each judge's estimate is what a job of that judge alone on its batch route
    costs, and the sub-batches are each lane's own, within its own provider's limits."""
    s = served(Scenario())
    plan = orjson.loads(
        cli_in_process(
            [*panel_job(tmp_path, 40, JUDGES, *SIZE), "--dry-run", "--json"], env=panel_env(s)
        ).stdout
    )
    assert plan["route_by_judge"] == dict.fromkeys(JUDGES, "batch")
    assert [40, 40] == [sb["requests"] for sb in plan["sub_batches"]]
    by_provider = plan["sub_batches_by_provider"]  # each lane's within its own provider's limits
    assert by_provider["openai"] == {
        "sub_batches": 1,
        "max_batch_requests": 8000,
        "max_batch_bytes": 190_000_000,
    }
    assert by_provider["anthropic"]["sub_batches"] == 1
    assert by_provider["anthropic"]["max_batch_bytes"] == 250_000_000
    text = cli_in_process([*panel_job(tmp_path, 40, JUDGES, *SIZE), "--dry-run"], env=panel_env(s)).stdout
    assert "openai 1, at most 8,000 requests and 190,000,000 bytes each" in text
    assert "openai:gpt-5-mini (batch, est $" in text
    for judge in JUDGES:
        alone = panel_job(tmp_path, 40, [judge], state=f"alone-{judge.replace(':', '-')}")
        one = orjson.loads(
            cli_in_process([*alone, "--force-batch", "--dry-run", "--json"], env=panel_env(s)).stdout
        )
        assert plan["estimated_cost_by_judge_usd"][judge] == pytest.approx(
            one["estimated_cost_usd"], rel=0.01
        )
        synced = orjson.loads(
            cli_in_process([*alone, "--force-sync", "--dry-run", "--json"], env=panel_env(s)).stdout
        )
        assert one["estimated_cost_usd"] < 0.6 * synced["estimated_cost_usd"]  # the batch price
    assert s.sim.requests("POST") == ()


def test_cancel_cancels_each_lanes_batches_through_its_own_provider(served, tmp_path: Path) -> None:
    """A mixed panel whose two lanes each have a live batch, killed: `judgecore cancel` asks Anthropic
    to cancel Claude's batch and OpenAI to cancel GPT's, each on its own wire; the rerun keeps what
    they completed and sends the rest."""
    from tests import children

    s = served(Scenario(batch_seconds=600.0))
    args = panel_job(tmp_path, 40, JUDGES, *SIZE)
    state = tmp_path / "state"
    first = children.start("adapters.cli", args, env=panel_env(s), cwd=ROOT)
    try:
        s.wait_for(lambda: len(s.sim.batches) >= 1 and _ok(s, OPENAI_BATCHES) >= 1, timeout=60)
        s.wait_for(lambda: s.polls() >= 1, timeout=60)
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    res = cli_in_process(["cancel", "--state", str(state)], env=panel_env(s))
    assert res.returncode == 0, res.stderr
    assert "canceled 2 live batches" in res.stderr
    assert _cancels(s) == Counter({"anthropic": 1, "openai": 1})


def test_two_openai_judges_batch_as_two_machines_each_file_one_model(served, tmp_path: Path) -> None:
    """OpenAI's batch file names one model: a lane of two OpenAI judges batches each judge's requests
    in batches of their own (the simulator fails a file that mixes models), beside Claude's."""
    s = served(Scenario(batch_seconds=0.3))
    judges = [*JUDGES, "openai:gpt-5-nano"]
    args = panel_job(tmp_path, 30, judges, *SIZE)
    plan = orjson.loads(cli_in_process([*args, "--dry-run", "--json"], env=panel_env(s)).stdout)
    assert plan["sub_batches_by_provider"]["openai"]["sub_batches"] == 2  # one file a model
    assert [30, 30, 30] == [sb["requests"] for sb in plan["sub_batches"]]
    res = cli_in_process(args, env=panel_env(s))
    assert res.returncode == 0, res.stderr
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 30 and all(set(ln["judges"]) == set(judges) for ln in lines)
    assert len(s.sim.openai.batches()) == 2 and {b.status for b in s.sim.openai.batches()} == {"completed"}
    billed = Counter((m, route) for m, route, _ in s.sim.openai.billed)
    assert billed == Counter({("gpt-5-mini", "batch"): 30, ("gpt-5-nano", "batch"): 30})
    assert len(s.sim.submitted_custom_ids()) == 30


def test_a_kill_between_create_and_record_on_claudes_lane_adopts_its_batch_and_pays_once(
    served, tmp_path: Path
) -> None:
    """Claude's create makes its batch but its answer hangs (the id never recorded); OpenAI's lane has
    created its own. Killed, then rerun: Claude's lane lists Anthropic's batches alone and adopts its
    orphan, OpenAI's polls its batch; nothing is created twice on either wire."""
    from tests import children

    s = served(
        Scenario(batch_seconds=0.3, create_stall_seconds=60.0, create_faults={1: "persist_then_stall"})
    )
    n = 40
    state = tmp_path / "state"
    first = children.start("adapters.cli", panel_job(tmp_path, n, JUDGES, *SIZE), env=panel_env(s), cwd=ROOT)
    try:
        s.wait_for(lambda: len(s.sim.batches) >= 1 and _ok(s, OPENAI_BATCHES) >= 1, timeout=60)
        assert first.poll() is None
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
    again = cli_in_process(["run", "--state", str(state)], env=panel_env(s))
    assert again.returncode == 0, again.stderr
    assert "adopted orphan batch" in again.stderr
    lines = read_output(state / "output.jsonl")
    assert len(lines) == n and all(set(ln["judges"]) == set(JUDGES) for ln in lines)
    assert len(s.sim.batches) == 1 and _ok(s, OPENAI_BATCHES) == 1 and _ok(s, FILES) == 1
    assert Counter(route for route, _ in s.sim._billed) == Counter({"batch": n})
    assert Counter((m, route) for m, route, _ in s.sim.openai.billed) == Counter({("gpt-5-mini", "batch"): n})
