"""`--budget` gets spent: through the real SDK against the simulator, on both routes, a budget that cannot
cover the job is spent to at least 90% and never past 100% (what the simulated API billed), the run
says on stderr what the rest needs, and a rerun with the figure it names finishes the job, paying for
no item twice."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import orjson
import pytest

from adapters.simulator.scenario import Scenario
from judgecore.decide.spend import answer_cost
from judgecore.results.outcomes import Usage
from judgecore.wire.models import price_for
from tests.integration.conftest import write_items

pytestmark = pytest.mark.integration

MODEL = "claude-sonnet-4-6"
N = 80


def _billed_usd(srv) -> float:
    """What the simulated API billed so far, priced by the model's table."""
    price = price_for(MODEL)
    assert price is not None
    return sum(answer_cost(Usage(**{k: u.get(k) or 0 for k in _USAGE}), price, r) for r, u in srv.sim.billed)


_USAGE = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _job(tmp_path: Path, route: str) -> list[str]:
    rows = [
        {"id": f"r{i}", "prompt": f"Grade answer {i}: the sum of {i} and {i + 1} is {2 * i + 1}."}
        for i in range(N)
    ]
    items = write_items(tmp_path / "in.jsonl", rows)
    return [
        "run",
        str(items),
        "--model",
        MODEL,
        "--max-tokens",
        "100",
        f"--force-{route}",
        "--poll-interval",
        "0.05",
        "--otpm",
        "400000",
    ]


@pytest.mark.parametrize("route", ["sync", "batch"])
def test_a_budget_that_cannot_cover_the_job_is_spent_to_90_percent_and_never_more(served, tmp_path, route):
    srv = served(Scenario(seed=19, batch_seconds=0.05))
    args = _job(tmp_path, route)
    whole = srv.cli([*args, "--state", str(tmp_path / "whole")])  # what the whole job costs
    assert 0 == whole.returncode, whole.stderr
    cost = _billed_usd(srv)
    before = _billed_usd(srv)

    budget = round(cost * 0.45, 6)
    state = tmp_path / "capped"
    first = srv.cli([*args, "--state", str(state), "--budget", str(budget)])
    assert 3 == first.returncode, first.stderr
    spent = _billed_usd(srv) - before
    assert 0.9 * budget <= spent <= budget, (spent, budget)
    lines = [line for line in first.stderr.splitlines() if "budget" in line and "left pending" in line]
    assert 1 == len(lines), first.stderr
    rerun = float(re.search(r"--budget (\d+\.\d+)", lines[0]).group(1))  # type: ignore[union-attr]
    # the line scripts test, and the resume command carrying the budget it suggests (not the old)
    err = first.stderr.splitlines()
    stop = [k for k, line in enumerate(err) if line.startswith("budget: stopped by --budget ")]
    assert 1 == len(stop), first.stderr
    assert f"resume with --budget {rerun:.2f}" in err[stop[0]]
    words = shlex.split(err[stop[0] + 1])
    words = words[max(k for k, w in enumerate(words) if w == "run") :]  # after the launcher
    assert ["--budget", f"{rerun:.2f}"] == words[-2:] and str(budget) not in words

    again = srv.cli(words)  # the printed command, as a user pastes it
    assert 0 == again.returncode, again.stderr
    assert "budget: stopped" not in again.stderr
    total = _billed_usd(srv) - before
    assert total <= rerun
    assert total == pytest.approx(cost, rel=0.05), "the capped job and its rerun cost the whole job, once"
    out = [orjson.loads(line) for line in (state / "output.jsonl").read_bytes().splitlines()]
    assert N == len(out) and all(1 == r["attempts"] for r in out), "each item sent once over both runs"


def test_dry_run_with_a_budget_says_whether_the_estimate_fits_and_learns_from_the_checkpoint(
    served, tmp_path
):
    """`--dry-run --budget`: a fresh job's estimate against the budget; after a capped run, the plan of
    what is left is learned from its answers and lands within 25% of what the rerun costs."""
    srv = served(Scenario(seed=19, batch_seconds=0.05))
    args = _job(tmp_path, "sync")
    state = tmp_path / "s"
    plan = srv.cli([*args, "--state", str(state), "--dry-run", "--json", "--budget", "0.001"])
    assert 0 == plan.returncode, plan.stderr
    fresh = orjson.loads(plan.stdout)
    assert ("assumed", False) == (fresh["estimate_basis"], fresh["budget"]["fits"])
    assert 0 <= fresh["budget"]["covers"] < N
    assert [] == list(srv.sim.billed), "a dry run sends nothing"

    first = srv.cli([*args, "--state", str(state), "--budget", "0.02"])
    assert 3 == first.returncode, first.stderr
    learned = orjson.loads(srv.cli([*args, "--state", str(state), "--dry-run", "--json"]).stdout)
    assert learned["estimate_basis"].startswith("learned from ")
    mark = len(srv.sim.billed)
    again = srv.cli(["run", "--state", str(state), "--budget", "10"])
    assert 0 == again.returncode, again.stderr
    rerun = sum(
        answer_cost(Usage(**{k: u.get(k) or 0 for k in _USAGE}), price_for(MODEL), r)  # type: ignore[arg-type]
        for r, u in srv.sim.billed[mark:]
    )
    assert learned["estimated_cost_usd"] == pytest.approx(rerun, rel=0.25)
    text = srv.cli([*args, "--state", str(state), "--dry-run", "--budget", "10"]).stdout
    assert "budget       $10.00 covers the estimate" in text


def test_dry_run_count_tokens_counts_one_prompt_through_the_api_and_bills_nothing(served, tmp_path):
    srv = served(Scenario(seed=19))
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade the answer from 1 to 5. End with 'Score: N'.\n" * 30)
    args = [*_job(tmp_path, "batch"), "--rubric", str(rubric), "--state", str(tmp_path / "s"), "--dry-run"]
    plain = orjson.loads(srv.cli([*args, "--json"]).stdout)
    counted = srv.cli([*args, "--json", "--count-tokens"])
    assert 0 == counted.returncode, counted.stderr
    out = orjson.loads(counted.stdout)
    asked = [e for e in srv.sim.log if e.path == "/v1/messages/count_tokens"]
    assert 1 == len(asked), "one prompt shape, counted once"
    assert [] == list(srv.sim.billed) and not srv.sim.batches, "counting sends no message"
    assert out["estimated_tokens"]["counted_prompt"] > plain["estimated_tokens"]["rubric_per_request"]
    assert out["estimate_basis"] == "input from count_tokens; answers assumed"
    no_key = srv.cli([*args, "--count-tokens"], key="")
    assert 2 == no_key.returncode and "ANTHROPIC_API_KEY" in no_key.stderr
    refused = srv.cli([*_job(tmp_path, "batch"), "--state", str(tmp_path / "s"), "--count-tokens"])
    assert 2 == refused.returncode and "--count-tokens goes with --dry-run" in refused.stderr


def test_a_budget_below_one_request_says_one_line_for_the_whole_job_and_sends_nothing(served, tmp_path):
    """The routing probe is the job's first request: when the cap cannot cover it, the probe stays
    quiet and the run that follows says the one budget line, counting every item (a line of the
    probe's own would count only itself and name a budget that covers only it)."""
    srv = served(Scenario(seed=19))
    args = _job(tmp_path, "sync")
    args = args[: args.index("--force-sync")]  # routed by size, no tier given: the probe goes first
    state = tmp_path / "capped"
    first = srv.cli([*args, "--state", str(state), "--budget", "0.0001"])
    assert 3 == first.returncode, first.stderr
    assert () == tuple(srv.sim.message_requests()), "nothing was sent"
    lines = [line for line in first.stderr.splitlines() if "budget" in line and "left pending" in line]
    assert 1 == len(lines), first.stderr
    assert f"{N} items left pending" in lines[0] and "$0.0001 cannot cover" in lines[0]
    rerun = float(re.search(r"--budget (\d+\.\d+)", lines[0]).group(1))  # type: ignore[union-attr]

    again = srv.cli(["run", "--state", str(state), "--budget", str(rerun)])
    assert 0 == again.returncode, again.stderr
    out = [orjson.loads(line) for line in (state / "output.jsonl").read_bytes().splitlines()]
    assert N == len(out) and all(r["status"] == "succeeded" for r in out)


def test_a_budget_cut_on_the_batch_route_says_once_about_how_many_rounds_it_will_take(served, tmp_path):
    """A tight cap with a large max_tokens took dozens of batch rounds with nothing said: a 3,000-item
    job capped at $0.50 ran 50 sub-batches, each a batch's turnaround. The first cut says how many
    rounds to expect, and the run then takes about that many (within a factor of two)."""
    srv = served(Scenario(seed=31, batch_seconds=0.02))
    # long prompts: the cost is mostly input, which the estimate knows well before any answer
    text = "The answer under review restates the question at length. " * 70
    rows = [{"id": f"r{i}", "prompt": f"{i}: {text}"} for i in range(300)]
    items = write_items(tmp_path / "in.jsonl", rows)
    args = ["run", str(items), "--model", MODEL, "--max-tokens", "400", "--force-batch"]
    args += ["--poll-interval", "0.05", "--state", str(tmp_path / "s"), "--budget", "0.10"]
    res = srv.cli(args)
    assert 3 == res.returncode, res.stderr
    said = [line for line in res.stderr.splitlines() if "rounds, each a batch's turnaround" in line]
    assert 1 == len(said), res.stderr
    rounds = int(re.search(r"about ([\d,]+) rounds", said[0]).group(1).replace(",", ""))  # type: ignore[union-attr]
    assert "--max-tokens" in said[0] and "--force-sync" in said[0]
    made = len(srv.creates())
    assert rounds / 2 <= made <= rounds * 2, (rounds, made, res.stderr)
