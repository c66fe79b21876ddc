"""The PEERS.md row "20,000 small items, fast batches": CPU seconds and peak memory of a whole
`judgecore run` (a separate process, the real SDK over loopback HTTP) against the simulator.

    uv run python bench/peers.py            # median of 3 runs

Peers measured on this kind of machine (PEERS.md): inspect-ai 295 CPU s / 1,990 MB; curator 16.8 CPU s /
419 MB; batchling 45.6 CPU s / 1,361 MB. The simulator runs in this process, so its CPU is not counted.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

from job import run as measure  # noqa: E402

from adapters.simulator.logic import Simulator  # noqa: E402
from adapters.simulator.scenario import Scenario  # noqa: E402
from adapters.simulator.server import serve  # noqa: E402


def one_run(n: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp, serve(Simulator(Scenario(seed=1, batch_seconds=1.0))) as srv:
        items = Path(tmp) / "items.jsonl"
        with items.open("wb") as f:
            for i in range(n):
                f.write(
                    orjson.dumps({"id": f"item-{i}", "prompt": f"Grade answer {i}: the sky is blue."}) + b"\n"
                )
        rubric = Path(tmp) / "rubric.txt"
        rubric.write_text("Score the answer from 0 to 10 for correctness and clarity.\n" * 40)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-bench")
        args = [
            "run",
            str(items),
            "--state",
            str(Path(tmp) / "s"),
            "--rubric",
            str(rubric),
            "--poll-interval",
            "0.2",
        ]
        # measured from a small wrapper process (see bench/job.py): a child forked from this one,
        # which holds the simulator, would count the pages it shares with it in its peak RSS
        r = measure(sys.executable, ROOT, args, env)
        batches = len(srv.sim.batches)
    return {"cpu": r["cpu"], "rss_mb": r["rss_mb"], "wall": r["wall"], "batches": batches}


def main() -> None:
    n = 20_000
    runs = [one_run(n) for _ in range(3)]
    cpu = statistics.median(r["cpu"] for r in runs)
    rss = max(r["rss_mb"] for r in runs)
    cpus = ", ".join(f"{r['cpu']:.1f}" for r in runs)
    wall = statistics.median(r["wall"] for r in runs)
    print(
        f"judgecore run, {n:,} items, fast batches: median {cpu:.1f} CPU s (runs: {cpus}), "
        f"peak RSS {rss:,.0f} MB, {runs[0]['batches']} sub-batches + 1 sync probe, wall {wall:.1f} s"
    )
    print("peers (PEERS.md): inspect-ai 295 CPU s / 1,990 MB; curator 16.8 / 419; batchling 45.6 / 1,361")
    print(f"judgecore vs the best peer (curator): CPU {16.8 / cpu:.1f}x less, memory {419 / rss:.1f}x less")


if __name__ == "__main__":
    main()
