"""How much of a budget gets spent, and how close the estimates come, against the simulator.

    uv run python bench/budget.py                          # the demo, a 2,000-item sync and batch job
    uv run python bench/budget.py --jobs sync --repeats 3
    uv run python bench/budget.py --before REV             # REV's code too (an exported copy), same run

For each job, `judgecore run` (a child process: the real SDK over loopback HTTP) against the simulator
in this process, money measured as the simulated API billed it (each billed answer's usage priced by
judgecore's table):
  1. the fresh dry run's estimate, against what the whole job really costs (run unbudgeted);
  2. the job run again from scratch with `--budget` at 40% of that cost: the share of the budget spent
     before the run stops (target >= 90%, never over 100%), its exit status;
  3. the dry run on the capped run's state dir (the estimate of the rerun, learned from its answers)
     and the `budget:` line's "need about $X more", each against what the rerun really costs
     (target: within 25%).
Targets (issue 19, item 2). Figures are medians over `--repeats` runs with different simulator seeds.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.demo import RUBRIC, _items  # noqa: E402
from adapters.simulator.logic import Simulator  # noqa: E402
from adapters.simulator.scenario import Scenario  # noqa: E402
from adapters.simulator.server import serve  # noqa: E402
from judgecore.decide.spend import answer_cost  # noqa: E402
from judgecore.results.outcomes import Usage  # noqa: E402
from judgecore.wire.models import price_for  # noqa: E402

MODEL = "claude-sonnet-4-6"
FIELDS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
SHARE = 0.4  # the budget, as a share of what the whole job costs


def billed_usd(sim: Simulator, start: int = 0) -> float:
    price = price_for(MODEL)
    assert price is not None
    return sum(
        answer_cost(Usage(**{k: int(u.get(k) or 0) for k in FIELDS}), price, route)
        for route, u in sim.billed[start:]
    )


def cli(root: Path, args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    python = str(ROOT / ".venv" / "bin" / "python")
    return subprocess.run(
        [python, "-m", "adapters.cli", *args], cwd=root, env=env, capture_output=True, text=True, check=False
    )


def write_job(tmp: Path, kind: str) -> list[str]:
    """The job's files and its `run` arguments (without --state)."""
    items, rubric = tmp / "items.jsonl", tmp / "rubric.txt"
    rubric.write_text(RUBRIC)
    n = 3000 if kind == "demo" else 2000
    with items.open("wb") as f:
        for row in _items(n, "essay", faults=kind == "demo"):
            f.write(orjson.dumps(row) + b"\n")
    args = ["run", str(items), "--rubric", str(rubric), "--model", MODEL, "--otpm", "400000"]
    args += ["--poll-interval", "0.05"]
    if kind == "demo":
        return [*args, "--max-batch-requests", "1000"]
    return [*args, f"--force-{kind}", "--concurrency", "16"]


def estimate(root: Path, args: list[str], state: Path, env: dict[str, str]) -> float:
    res = cli(root, [*args, "--state", str(state), "--dry-run", "--json"], env)
    if res.returncode != 0:
        raise SystemExit(f"dry run failed: {res.stderr[-2000:]}")
    return float(orjson.loads(res.stdout)["estimated_cost_usd"])


def measure(root: Path, kind: str, seed: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        sim = Simulator(Scenario(seed=seed, batch_seconds=0.2, unparseable_rate=0.02))
        with serve(sim) as srv:
            env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
            env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-bench")
            args = write_job(tmp, kind)
            fresh = estimate(root, args, tmp / "whole", env)
            whole = cli(root, [*args, "--state", str(tmp / "whole")], env)
            if whole.returncode != 0:
                raise SystemExit(f"the whole job failed ({whole.returncode}): {whole.stderr[-2000:]}")
            cost = billed_usd(sim)
            budget = round(cost * SHARE, 4)
            state = tmp / "capped"
            mark = len(sim.billed)
            capped = cli(root, [*args, "--state", str(state), "--budget", f"{budget}"], env)
            spent = billed_usd(sim, mark)
            batches = len(sim.batches)
            line = next((x for x in capped.stderr.splitlines() if "budget" in x and "more" in x), "")
            said = re.search(r"about \$([\d,.]+) more", line)  # this branch's wording
            rerun_estimate = estimate(root, args, state, env)
            mark = len(sim.billed)
            rerun = cli(root, [*args, "--state", str(state), "--budget", f"{cost * 10:.2f}"], env)
            rerun_cost = billed_usd(sim, mark)
            return {
                "fresh_estimate": fresh,
                "cost": cost,
                "budget": budget,
                "spent_share": spent / budget,
                "capped_exit": capped.returncode,
                "rerun_exit": rerun.returncode,
                "rerun_estimate_error": rerun_estimate / rerun_cost - 1 if rerun_cost else float("nan"),
                "said_error": float(said.group(1).replace(",", "")) / rerun_cost - 1
                if said and rerun_cost
                else float("nan"),
                "sub_batches": len(sim.batches) - batches if kind != "sync" else 0,
            }


def report(label: str, kind: str, runs: list[dict[str, Any]]) -> None:
    def med(key: str) -> float:
        return statistics.median(r[key] for r in runs)

    print(
        f"  {label:<7} {kind:<6} fresh estimate ${med('fresh_estimate'):7.2f} vs cost ${med('cost'):6.2f} "
        f"({med('fresh_estimate') / med('cost'):4.2f}x); budget ${med('budget'):.2f}: "
        f"{med('spent_share'):6.1%} spent (exit {runs[0]['capped_exit']}); "
        f"rerun estimate {med('rerun_estimate_error'):+6.1%}, budget line {med('said_error'):+6.1%} "
        f"of the rerun's cost (exit {runs[0]['rerun_exit']})"
    )


def exported(rev: str, into: Path) -> Path:
    """`rev`'s tree, exported (no worktree: the repository is shared)."""
    archive = subprocess.run(["git", "archive", rev], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", nargs="+", default=["demo", "sync", "batch"], choices=["demo", "sync", "batch"])
    ap.add_argument("--repeats", type=int, default=1)
    ap.add_argument("--before", metavar="REV", help="measure REV's code as well (e.g. main)")
    ns = ap.parse_args()
    print(
        f"judgecore budget bench ({MODEL}; budget = {SHARE:.0%} of the whole job's cost; medians of {ns.repeats})"
    )
    with tempfile.TemporaryDirectory() as old:
        roots = [("after", ROOT)]
        if ns.before:
            roots.insert(0, ("before", exported(ns.before, Path(old))))
        for kind in ns.jobs:
            for label, root in roots:
                report(label, kind, [measure(root, kind, seed) for seed in range(7, 7 + ns.repeats)])


if __name__ == "__main__":
    main()
