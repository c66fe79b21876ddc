"""An OpenAI batch job beside the Anthropic job of the same size: CPU seconds and peak RSS of each, and
their ratio (issue 39: the OpenAI job at most 1.2x the Anthropic job's). `--kinds anthropic,panel`:
a mixed panel (`--judge claude-sonnet-4-6 --judge openai:gpt-5-mini`, both lanes on their batch
routes at once: twice the requests, half on each wire) beside the Anthropic job of the same items.

    uv run python bench/openai_batch.py                 # 20,000 items, 3 rounds, medians
    uv run python bench/openai_batch.py --n 2000 --rounds 1
    uv run python bench/openai_batch.py --kinds anthropic,panel

Each job is `judgecore run --force-batch` as a process of its own (`bench/job.py`'s `run`: the real SDK
over loopback HTTP, its user + system CPU and its peak RSS), against a simulator in this process
(fast batches, 1 s; polls every 0.2 s): `--model openai:gpt-5-mini` (Files + Batch API: each
sub-batch uploaded as JSONL, created, its output file streamed, its files deleted) and the default
Anthropic model (Message Batches). The two alternate, round by round, so a slow moment of the machine
falls on both; the figures are the medians of the rounds, and the ratio is the median of each round's
ratio.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.simulator.logic import Simulator  # noqa: E402
from adapters.simulator.scenario import Scenario  # noqa: E402
from adapters.simulator.server import serve  # noqa: E402
from bench.job import RUBRIC, run, write_items  # noqa: E402


def one(provider: str, n: int) -> dict[str, Any]:
    """One `--force-batch` job of `n` items on `provider` in a fresh state dir and simulator."""
    with tempfile.TemporaryDirectory() as tmp, serve(Simulator(Scenario(seed=1, batch_seconds=1.0))) as srv:
        items, rubric, state = Path(tmp) / "items.jsonl", Path(tmp) / "rubric.txt", Path(tmp) / "s"
        write_items(items, n)
        rubric.write_text(RUBRIC)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-bench")
        env.update(OPENAI_BASE_URL=f"{srv.base_url}/v1", OPENAI_API_KEY="sk-bench")
        args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--poll-interval", "0.2"]
        args += ["--force-batch"]
        if provider == "openai":
            args += ["--model", "openai:gpt-5-mini"]
        elif provider == "panel":
            args += ["--judge", "claude-sonnet-4-6", "--judge", "openai:gpt-5-mini"]
        got = run(sys.executable, ROOT, args, env)
        if provider == "panel":  # each lane's requests once, each on its own provider's batch route
            assert sum(len(b.custom_ids) for b in srv.sim.batches) == n, "Claude's lane"
            assert sum(len(b.custom_ids) for b in srv.sim.openai.batches()) == n, "OpenAI's lane"
        elif provider == "openai":
            batches = srv.sim.openai.batches()
            assert sum(len(b.custom_ids) for b in batches) == n, "the OpenAI job did not send each item once"
        else:
            assert sum(len(b.custom_ids) for b in srv.sim.batches) == n
        return got


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", default="anthropic,openai", help="the reference first: anthropic,openai,panel")
    ns = ap.parse_args()
    kinds = tuple(ns.kinds.split(","))
    ref = kinds[0]
    rows: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    for k in range(ns.rounds):
        order = kinds if k % 2 == 0 else kinds[::-1]
        for provider in order:
            rows[provider].append(one(provider, ns.n))
            r = rows[provider][-1]
            print(
                f"round {k + 1} {provider:9s} cpu {r['cpu']:.2f} s  rss {r['rss_mb']:.0f} MB  wall {r['wall']:.1f} s"
            )
    med = {
        p: {m: statistics.median(r[m] for r in rs) for m in ("cpu", "rss_mb", "wall")}
        for p, rs in rows.items()
    }
    print(f"\n{ns.n:,} items, --force-batch, medians of {ns.rounds} alternated rounds:")
    for p in kinds:
        m = med[p]
        print(f"  {p:9s} CPU {m['cpu']:.2f} s   peak RSS {m['rss_mb']:.0f} MB   wall {m['wall']:.1f} s")
    for p in kinds[1:]:
        cpu_ratio = statistics.median(o["cpu"] / a["cpu"] for o, a in zip(rows[p], rows[ref], strict=True))
        rss_ratio = statistics.median(
            o["rss_mb"] / a["rss_mb"] for o, a in zip(rows[p], rows[ref], strict=True)
        )
        verdict = "ok" if max(cpu_ratio, rss_ratio) <= 1.2 else "OVER the 1.2x target"
        if p == "panel":  # twice the requests: no 1.2x target of its own
            verdict = f"{2 * ns.n:,} requests against {ns.n:,}"
        print(f"  {p} / {ref}: CPU {cpu_ratio:.2f}x, peak RSS {rss_ratio:.2f}x ({verdict})")


if __name__ == "__main__":
    main()
