"""Panels across families: `--judge claude-... --judge openai:... --judge served:...@URL` in one job, each
judge on its own provider's client and route (the real `anthropic` and `openai` SDKs over real HTTP to
the simulator, which speaks Anthropic's, OpenAI's and a vLLM server's wires on one port). One checkpoint,
one budget, the spend per judge, the panel's verdict folded from every family's answers."""

from __future__ import annotations

import signal
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.reads import spend_by_judge
from adapters.checkpoint.store import Store
from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario

from .conftest import Served, outcomes_so_far, panel_env, panel_job, read_output

CHAT = "/v1/chat/completions"
MESSAGES = "/v1/messages"
SERVED_MODEL = "Qwen/Qwen3-32B"


def _cli(s: Served, args: list[str]):
    from .conftest import cli_in_process

    return cli_in_process(args, env=panel_env(s))


def test_a_three_family_panel_runs_end_to_end(served, tmp_path: Path) -> None:
    s = served(Scenario(openai=OpenAIScenario(served_latency=0.01)))
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini", f"served:{SERVED_MODEL}@{s.base_url}/v1"]
    keys = ["claude-sonnet-4-6", "openai:gpt-5-mini", f"served:{SERVED_MODEL}"]  # a URL is no identity
    res = _cli(s, panel_job(tmp_path, 30, judges))
    assert res.returncode == 0, res.stderr
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 30 and {ln["status"] for ln in lines} == {"succeeded"}
    for line in lines:  # every family answered every item, and the verdict is the panel's median
        assert set(line["judges"]) == set(keys)
        scores = sorted(v["score"] for v in line["judges"].values())
        assert line["verdict"] == {"score": scores[1]}
    # each family on its own wire, each request once
    assert len(s.sim.requests("POST", MESSAGES)) == 30
    chats = s.sim.requests("POST", CHAT)
    assert len(chats) == 60
    assert Counter(m for m, _, _ in s.sim.openai.billed) == Counter({"gpt-5-mini": 30, SERVED_MODEL: 30})
    store = Store.open_readonly(tmp_path / "state")
    try:
        spend = spend_by_judge(store)
    finally:
        store.close()
    assert spend[keys[2]] is not None and spend[keys[2]].spent == 0.0  # self-hosted
    assert spend[judges[0]].spent > 0 and spend[judges[1]].spent > 0  # type: ignore[union-attr]


def test_a_panel_missing_one_familys_key_is_exit_2_before_anything_is_sent(served, tmp_path: Path) -> None:
    s = served(Scenario())
    env = panel_env(s)
    env.pop("OPENAI_API_KEY")
    from .conftest import cli_in_process

    res = cli_in_process(panel_job(tmp_path, 5, ["claude-sonnet-4-6", "openai:gpt-5-mini"]), env=env)
    assert res.returncode == 2, res.stderr
    assert "OPENAI_API_KEY" in res.stderr
    assert s.sim.requests("POST") == ()


@pytest.mark.slow
def test_a_mixed_panel_killed_and_resumed_pays_each_request_once(served, tmp_path: Path) -> None:
    """`--judge claude-sonnet-4-6 --judge openai:gpt-5-mini`, SIGKILLed mid-run (answers of both
    families recorded, others in flight), then resumed: each request answered once on each wire (the
    simulator's logs), and both judges' answers folded into every line."""
    s = served(Scenario())
    n = 600
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini"]
    args = panel_job(tmp_path, n, judges, "--force-sync", "--concurrency", "4")
    env = panel_env(s)
    from tests import children

    from .conftest import ROOT

    first = children.start("adapters.cli", args, env=env, cwd=ROOT)
    state = tmp_path / "state"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and outcomes_so_far(state) < 200:
        time.sleep(0.02)
    assert first.poll() is None, first.stderr.read() if first.stderr else ""
    first.send_signal(signal.SIGKILL)
    first.wait(timeout=10)
    assert 0 < outcomes_so_far(state) < 2 * n
    sent_before = s.sim.requests("POST", MESSAGES) + s.sim.requests("POST", CHAT)
    assert {e.path for e in sent_before} == {MESSAGES, CHAT}  # both families answered before the kill

    again = _cli(s, ["run", "--state", str(state)])
    assert again.returncode == 0, again.stderr
    lines = read_output(state / "output.jsonl")
    assert len(lines) == n and {ln["status"] for ln in lines} == {"succeeded"}
    assert all(set(ln["judges"]) == set(judges) for ln in lines)
    # Each request (the simulator's digest of what it asks) paid once, but for those in flight when
    # the child died: sent, answered, never recorded, so sent again (at most each lane's concurrency)
    # (a request cut off by the kill before its body was read has no digest: never answered, never billed)
    log = s.sim.requests("POST", MESSAGES) + s.sim.requests("POST", CHAT)
    sent = Counter(e.digest for e in log if e.digest is not None)
    assert len(sent) == 2 * n and set(sent.values()) <= {1, 2}
    assert sum(1 for c in sent.values() if c == 2) <= 2 * 4
    anthropic = Counter(m for m, _, _ in s.sim.billed_by_model)
    openai = Counter(m for m, _, _ in s.sim.openai.billed)
    assert anthropic["claude-sonnet-4-6"] == sum(
        1 for e in s.sim.requests("POST", MESSAGES) if e.status == 200
    )
    assert openai["gpt-5-mini"] == sum(1 for e in s.sim.requests("POST", CHAT) if e.status == 200)


def test_each_lane_with_a_batch_route_batches_and_a_served_judge_goes_sync(served, tmp_path: Path) -> None:
    """A job the size sends to batches: Anthropic's requests go on its Message Batches and OpenAI's on
    its Batch API at the same time, the served judge's on its sync route; one output, every judge in
    each line."""
    s = served(Scenario(batch_seconds=0.3))
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini", f"served:{SERVED_MODEL}@{s.base_url}/v1"]
    args = panel_job(tmp_path, 40, judges, "--force-batch", "--poll-interval", "0.05")
    res = _cli(s, args)
    assert res.returncode == 0, res.stderr
    lines = read_output(tmp_path / "state" / "output.jsonl")
    keys = {"claude-sonnet-4-6", "openai:gpt-5-mini", f"served:{SERVED_MODEL}"}
    assert len(lines) == 40 and all(set(ln["judges"]) == keys for ln in lines)
    assert len(s.sim.submitted_custom_ids()) == 40  # Anthropic's judge on its batch route
    assert s.sim.requests("POST", MESSAGES) == ()  # and only there
    openai_batched = [c for b in s.sim.openai.batches() for c in b.custom_ids]
    assert len(openai_batched) == len(set(openai_batched)) == 40  # OpenAI's judge on its batch route
    # OpenAI's judge billed at its batch price alone, the served judge on its sync route
    billed = Counter((m, route) for m, route, _ in s.sim.openai.billed)
    assert billed == Counter({("gpt-5-mini", "batch"): 40, (SERVED_MODEL, "served"): 40})


def test_dry_run_status_and_summary_show_each_providers_route_and_spend(served, tmp_path: Path) -> None:
    from .conftest import cli_in_process

    s = served(Scenario())
    served_judge = f"served:{SERVED_MODEL}@{s.base_url}/v1"
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini", served_judge]
    args = panel_job(tmp_path, 12, judges, "--force-batch", "--poll-interval", "0.05")
    dry = cli_in_process([*args, "--dry-run"], env=panel_env(s))
    assert dry.returncode == 0, dry.stderr
    assert "claude-sonnet-4-6 (batch, est $" in dry.stdout
    assert "openai:gpt-5-mini (batch, est $" in dry.stdout
    assert f"{served_judge} (sync, self-hosted, $0)" in dry.stdout
    as_json = cli_in_process([*args, "--dry-run", "--json"], env=panel_env(s))
    routes = orjson.loads(as_json.stdout)["route_by_judge"]
    assert routes == {
        "claude-sonnet-4-6": "batch",
        "openai:gpt-5-mini": "batch",
        served_judge: "sync, self-hosted",
    }
    assert s.sim.requests("POST") == ()

    assert _cli(s, args).returncode == 0
    state = str(tmp_path / "state")
    status = cli_in_process(["status", "--state", state], env=panel_env(s))
    assert "judge claude-sonnet-4-6: anthropic, route batch, spend $0.0" in status.stdout
    assert "judge openai:gpt-5-mini: openai, route batch, spend $0.0" in status.stdout
    key = f"served:{SERVED_MODEL}"  # the served judge's identity: its URL is no part of it
    assert f"judge {key}: served, route sync, $0 (self-hosted)" in status.stdout
    info = orjson.loads(cli_in_process(["status", "--state", state, "--json"], env=panel_env(s)).stdout)
    assert info["judges"][key]["spend_usd"] == 0.0
    assert info["judges"]["openai:gpt-5-mini"]["spend_usd"] > 0
    summary = cli_in_process(["summary", "--state", state], env=panel_env(s))
    assert f"spend by {key}: $0 (self-hosted)" in " ".join(summary.stdout.split())


def test_a_served_judge_moved_to_another_url_is_the_same_job(served, tmp_path: Path) -> None:
    """The contract: a served judge's URL is not part of its identity. A job rerun with the server at
    another address is the same job: same custom_ids, the answers already recorded not asked again,
    only the new items' sent, to the new address."""
    from .conftest import cli_in_process

    one, two = served(Scenario()), served(Scenario())
    judges = ["claude-sonnet-4-6"]
    first = panel_job(tmp_path, 12, [*judges, f"served:{SERVED_MODEL}@{one.base_url}/v1"], "--force-sync")
    assert cli_in_process(first, env=panel_env(one)).returncode == 0
    assert len(one.sim.requests("POST", CHAT)) == 12
    # four more items, and the server now at another address
    moved = panel_job(
        tmp_path, 16, [*judges, f"served:{SERVED_MODEL}@{two.base_url}/v1"], "--force-sync", "--add-items"
    )
    res = cli_in_process(moved, env=panel_env(two))
    assert res.returncode == 0, res.stderr
    assert len(two.sim.requests("POST", CHAT)) == 4  # only the new items' served requests
    assert len(one.sim.requests("POST", CHAT)) == 12  # the old server asked nothing more
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 16 and all(set(ln["judges"]) == {*judges, f"served:{SERVED_MODEL}"} for ln in lines)


def test_a_panels_small_openai_lane_goes_sync_and_is_priced_so(served, tmp_path: Path) -> None:
    """Two Claude judges and one OpenAI judge, 15 items, `--sync-threshold 20`: Anthropic's lane (30
    requests) batches, OpenAI's (15) is too small for a batch and goes sync, its estimate at the sync
    price; the sub-batches hold Claude's requests alone, within Anthropic's limits. The run sends them so."""
    from .conftest import cli_in_process

    s = served(Scenario(batch_seconds=0.3))
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini", "claude-haiku-4-5"]  # `--otpm`: the first's
    args = panel_job(
        tmp_path, 15, judges, "--sync-threshold", "20", "--otpm", "400000", "--poll-interval", "0.05"
    )
    plan = orjson.loads(cli_in_process([*args, "--dry-run", "--json"], env=panel_env(s)).stdout)
    assert plan["route_by_judge"] == {
        "claude-sonnet-4-6": "batch",
        "openai:gpt-5-mini": "sync (too few requests for a batch)",
        "claude-haiku-4-5": "batch",
    }
    assert [30] == [sb["requests"] for sb in plan["sub_batches"]]  # Claude's 30 of the 45 requests
    assert 250_000_000 == plan["max_batch_bytes"]  # Anthropic's cap, not OpenAI's 190,000,000
    one = [
        str(tmp_path / "alone") if a == str(tmp_path / "state") else a
        for a in panel_job(tmp_path, 15, judges[1:2])
    ]
    alone = orjson.loads(
        cli_in_process([*one, "--force-sync", "--dry-run", "--json"], env=panel_env(s)).stdout
    )
    cost = plan["estimated_cost_by_judge_usd"]["openai:gpt-5-mini"]
    assert cost == pytest.approx(alone["estimated_cost_usd"], rel=0.01)  # the sync price, not half of it
    assert s.sim.requests("POST") == ()

    res = _cli(s, args)
    assert res.returncode == 0, res.stderr
    assert len(s.sim.submitted_custom_ids()) == 30  # both Claude judges batched
    assert list(s.sim.openai.batches()) == []  # no OpenAI batch
    assert Counter(route for _, route, _ in s.sim.openai.billed) == Counter({"sync": 15})  # its sync route
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 15 and all(set(ln["judges"]) == set(judges) for ln in lines)


def test_a_panels_openai_lane_over_its_own_threshold_batches_beside_a_claude_lane_that_goes_sync(
    served, tmp_path: Path
) -> None:
    """Issue 39: a Claude judge read at 4,000,000 OTPM (`--otpm`: its threshold 20 x 10 = 200) beside an
    OpenAI judge, 30 items, `--sync-threshold 20`. The whole job's 60 requests are under Claude's 200,
    but OpenAI's lane (30) is over its own threshold (20 at its reference TPM): the job routes batch,
    OpenAI's lane on its Batch API at the batch price, Claude's on its sync route; the dry run prices it
    so, the route's reason names the lane that decided, each request paid once, exit 0."""
    from .conftest import cli_in_process

    s = served(Scenario(batch_seconds=0.3))
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini"]
    args = panel_job(
        tmp_path, 30, judges, "--sync-threshold", "20", "--otpm", "4000000", "--poll-interval", "0.05"
    )
    plan = orjson.loads(cli_in_process([*args, "--dry-run", "--json"], env=panel_env(s)).stdout)
    assert plan["route"] == "batch"
    assert plan["route_by_judge"] == {
        "claude-sonnet-4-6": "sync (too few requests for a batch)",
        "openai:gpt-5-mini": "batch",
    }
    assert [30] == [sb["requests"] for sb in plan["sub_batches"]]  # OpenAI's 30 of the 60 requests
    # OpenAI's judge at half its sync price, Claude's at its sync price (each against the judge alone, sync)
    costs = plan["estimated_cost_by_judge_usd"]
    for judge, share in (("openai:gpt-5-mini", 0.5), ("claude-sonnet-4-6", 1.0)):
        one = [
            str(tmp_path / judge.replace(":", "_")) if a == str(tmp_path / "state") else a
            for a in panel_job(tmp_path, 30, [judge])
        ]
        alone = orjson.loads(
            cli_in_process([*one, "--force-sync", "--dry-run", "--json"], env=panel_env(s)).stdout
        )
        assert costs[judge] == pytest.approx(share * alone["estimated_cost_usd"], rel=0.02), judge
    assert s.sim.requests("POST") == ()

    res = _cli(s, args)
    assert res.returncode == 0, res.stderr
    assert "route: batch (openai lane: 30 requests >= threshold 20" in res.stderr
    assert s.sim.submitted_custom_ids() == ()  # no Anthropic batch
    assert len(s.sim.requests("POST", MESSAGES)) == 30  # Claude's judge on its sync route, each once
    assert Counter(m for m, _, _ in s.sim.billed_by_model) == Counter({"claude-sonnet-4-6": 30})
    openai_batched = [c for b in s.sim.openai.batches() for c in b.custom_ids]
    assert len(openai_batched) == len(set(openai_batched)) == 30  # OpenAI's on its Batch API, each once
    assert Counter((m, route) for m, route, _ in s.sim.openai.billed) == Counter(
        {("gpt-5-mini", "batch"): 30}
    )
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 30 and all(set(ln["judges"]) == set(judges) for ln in lines)
    status = cli_in_process(["status", "--state", str(tmp_path / "state")], env=panel_env(s))
    assert "openai lane: 30 requests >= threshold 20" in status.stdout
    assert "judge claude-sonnet-4-6: anthropic, route sync" in status.stdout
    assert "judge openai:gpt-5-mini: openai, route batch" in status.stdout


def test_a_panel_probed_at_a_high_otpm_routes_by_its_lanes_and_pays_the_probe_once(
    served, tmp_path: Path
) -> None:
    """The same panel with its tier read by the probe (Anthropic advertising 4,000,000 OTPM), not given:
    the probe's Claude answer is kept, OpenAI's lane batches, Claude's goes sync, each request once."""
    s = served(Scenario(batch_seconds=0.3, advertised_otpm=4_000_000))
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini"]
    res = _cli(s, panel_job(tmp_path, 30, judges, "--sync-threshold", "20", "--poll-interval", "0.05"))
    assert res.returncode == 0, res.stderr
    assert "route: batch (openai lane: 30 requests >= threshold 20" in res.stderr
    assert s.sim.submitted_custom_ids() == ()
    sent = Counter(e.digest for e in s.sim.requests("POST", MESSAGES))
    assert len(sent) == 30 and set(sent.values()) == {1}  # the probe's request among them, not sent again
    assert Counter((m, route) for m, route, _ in s.sim.openai.billed) == Counter(
        {("gpt-5-mini", "batch"): 30}
    )
    lines = read_output(tmp_path / "state" / "output.jsonl")
    assert len(lines) == 30 and all(set(ln["judges"]) == set(judges) for ln in lines)
