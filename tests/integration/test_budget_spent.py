"""`--budget` gets spent: through the real SDK against the simulator, on both routes, a budget that cannot
cover the job is spent to at least 90% and never past 100% (what the simulated API billed), the run
says on stderr what the rest needs, and a rerun with the figure it names finishes the job, paying for
no item twice."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from adapters.simulator import Scenario
from judgecore import Usage
from judgecore.models import price_for
from judgecore.spend import answer_cost
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

    again = srv.cli(["run", "--state", str(state), "--budget", str(rerun)])
    assert 0 == again.returncode, again.stderr
    total = _billed_usd(srv) - before
    assert total <= rerun
    assert total == pytest.approx(cost, rel=0.05), "the capped job and its rerun cost the whole job, once"
    out = [orjson.loads(line) for line in (state / "output.jsonl").read_bytes().splitlines()]
    assert N == len(out) and all(1 == r["attempts"] for r in out), "each item sent once over both runs"
