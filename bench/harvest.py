"""Harvest benchmark: durable ingest rate and peak memory of the batch path's harvest.

Runs the real harvest code (`adapters.run.batch.BatchShell.harvest` performing the machine's `Harvest`: id
matching, duplicate check, the raw line's translation (`result_line`: orjson, no SDK model), `classify`, the breaker's gate until it closes,
`OutcomeWriter` group commits with synchronous=FULL, the missing-line check)
over a fake results stream that makes each line on the fly, so the stream itself holds nothing.

    uv run python bench/harvest.py            # rate at 100,000 lines (median of 5), RSS at 10k and 100k
    uv run python bench/harvest.py --baseline /tmp/old-checkout   # CPU a line against another checkout

Each measurement runs in a fresh subprocess on a fresh checkpoint (built beforehand, outside the
measured process); the peak RSS is that subprocess's resident high-water mark, reset just before the
harvest starts (so the imports' own peak does not hide it), and the growth is that peak less the
resident size at the start.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def cid(i: int) -> str:
    return f"item-{i:07d}-bench"


def setup(state: Path, n: int) -> None:
    from adapters.checkpoint.store import Store

    store = Store.open(state)
    store.bind_job({"bench": True}, ((cid(i), f"item{i}", "d") for i in range(n)))
    sub = store.record_intent(round=1, custom_ids=[cid(i) for i in range(n)], n_bytes=0, at=0.0)
    store.record_created(sub, batch_id="msgbatch_bench", created_at=0.0, expires_at=86400.0)
    store.close()


def current_rss_kb() -> int:
    """Resident memory of this process right now, in KiB (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:  # noqa: PTH123 - a proc file, read once
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") // 1024


def reset_peak_rss() -> None:
    """Reset this process's resident high-water mark (Linux: "5" to clear_refs), so the peak measured
    is the harvest's own and not that of the imports before it."""
    with open("/proc/self/clear_refs", "w") as f:  # noqa: PTH123 - a proc file
        f.write("5")


def peak_rss_kb() -> int:
    """The resident high-water mark since `reset_peak_rss` (VmHWM), in KiB."""
    with open("/proc/self/status") as f:  # noqa: PTH123 - a proc file
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def measure(state: Path, n: int) -> dict[str, float]:
    import orjson

    from adapters.checkpoint.store import Store
    from adapters.providers.anthropic.sdk_results import result_line
    from adapters.run.batch import BatchSettings, BatchShell
    from adapters.run.clock import RealClock
    from judgecore.decide.breaker import Breaker
    from judgecore.run.batch import Harvest, Harvested
    from judgecore.wire.requests import RequestTemplate

    result = orjson.dumps(
        {
            "type": "succeeded",
            "message": {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-opus-4-8",
                "content": [{"type": "text", "text": "Score: 7/10. The answer is mostly right."}],
                "stop_reason": "end_turn",
                "stop_sequence": None,
                "usage": {
                    "input_tokens": 120,
                    "output_tokens": 14,
                    "cache_creation_input_tokens": 0,
                    "cache_read_input_tokens": 2048,
                },
            },
        }
    )

    from adapters.providers import port

    # a checkout from before the ports gave a list of lines at a time (`--baseline`) takes them one by one
    chunk = 100 if hasattr(port, "result_lines") else 0

    class Stream:
        """The port as `AnthropicBatchApi.results` is: each line's raw bytes through `result_line`, the
        lines of about a 64 KB chunk at a time."""

        async def results(self, batch_id: str) -> AsyncIterator[object]:
            order = list(range(n))  # 8 bytes a line: the server's arbitrary order
            random.Random(1).shuffle(order)
            if not chunk:
                for i in order:
                    yield result_line(b'{"custom_id":"' + cid(i).encode() + b'","result":' + result + b"}")
                return
            for k in range(0, n, chunk):
                yield [
                    result_line(b'{"custom_id":"' + cid(i).encode() + b'","result":' + result + b"}")
                    for i in order[k : k + chunk]
                ]

    store = Store.open(state)
    template = RequestTemplate.build(model="m", max_tokens=1, rubric=None, path="batch")
    settings = BatchSettings(
        write_group=int(os.environ.get("BENCH_GROUP", "0")) or BatchSettings().write_group
    )
    shell = BatchShell(
        store,
        template,
        Stream(),  # type: ignore[arg-type]
        RealClock(),
        settings,
        lambda e: None,
        random.Random(0),
    )
    # a fresh job: the breaker decides on the first line (a success closes it), as in a real first harvest
    action = Harvest(1, "msgbatch_bench", (), (1,), Breaker.start(n), ())
    rss_before = current_rss_kb()  # the resident size now, not the high-water mark of the imports
    reset_peak_rss()
    t0, cpu0 = time.perf_counter(), time.process_time()
    event = asyncio.run(shell.harvest(action))
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    rss_after = peak_rss_kb()
    recorded = store.counts()["succeeded"]
    store.close()
    ok = isinstance(event, Harvested) and event.error is None and not event.open
    assert ok and recorded == n, (ok, recorded)
    return {
        "n": n,
        "seconds": elapsed,
        "rate": n / elapsed,
        "cpu_us": cpu / n * 1e6,
        "rss_before_kb": rss_before,
        "peak_rss_kb": rss_after,
    }


def naive_rate(n: int = 2_000) -> float:
    """The baseline, in this process: one fsynced commit per result line (what a harvest that makes
    each line durable on its own would do), through the same store and rows."""
    from adapters.checkpoint.store import OutcomeRow, Store
    from judgecore.results.outcomes import RawResult, Usage, classify

    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        setup(state, n)
        store = Store.open(state)
        sub = store.sub_batches()[0].sub_id
        raw = RawResult(
            kind="succeeded", text="Score: 7/10.", stop_reason="end_turn", usage=Usage(input_tokens=1)
        )
        t0 = time.perf_counter()
        for i in range(n):
            store.record_outcomes(
                [OutcomeRow(custom_id=cid(i), outcome=classify(raw), route="batch", at=0.0, sub_id=sub)]
            )
        elapsed = time.perf_counter() - t0
        store.close()
    return n / elapsed


def in_subprocess(n: int, root: Path = ROOT) -> dict[str, float]:
    """One measurement of `n` lines in a fresh process, of this checkout's harvest or `root`'s."""
    with tempfile.TemporaryDirectory() as tmp:
        state = Path(tmp) / "state"
        setup(state, n)
        out = subprocess.run(
            [sys.executable, __file__, "--measure", str(state), str(n), str(root)],
            capture_output=True,
            text=True,
            check=True,
        )
        return json.loads(out.stdout)


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--baseline":
        compare(Path(sys.argv[2]).resolve())
        return
    runs = [in_subprocess(100_000) for _ in range(5)]
    rates = sorted(r["rate"] for r in runs)
    median = statistics.median(rates)
    print(
        f"durable ingest, 100,000 result lines: median {median:,.0f} results/s "
        f"(runs: {', '.join(f'{r:,.0f}' for r in rates)}; target >= 50,000)"
    )
    cpu = sorted(r["cpu_us"] for r in runs)
    print(
        f"harvest CPU (user + system, this process), 100,000 result lines: median {statistics.median(cpu):.2f} "
        f"us a line (runs: {', '.join(f'{c:.2f}' for c in cpu)}): the figure a loaded machine moves least"
    )
    naive = statistics.median(naive_rate() for _ in range(3))
    print(
        f"baseline, one fsynced commit per line (2,000 lines, median of 3): {naive:,.0f} results/s; "
        f"harvest/baseline {median / naive:,.1f}x"
    )
    small, large = in_subprocess(10_000), in_subprocess(100_000)
    for r in (small, large):
        growth = (r["peak_rss_kb"] - r["rss_before_kb"]) / 1024
        print(
            f"peak RSS at {int(r['n']):>7,} lines: {r['peak_rss_kb'] / 1024:6.1f} MB "
            f"(before the harvest {r['rss_before_kb'] / 1024:.1f} MB, growth {growth:.1f} MB)"
        )
    ratio = large["peak_rss_kb"] / small["peak_rss_kb"]
    growth_large = (large["peak_rss_kb"] - large["rss_before_kb"]) / 1024
    print(
        f"peak RSS ratio 100k/10k: {ratio:.3f} (target <= 1.20); growth at 100k {growth_large:.1f} MB (target < 100)"
    )


def compare(baseline: Path, rounds: int = 7) -> None:
    """This checkout's harvest against `baseline`'s, alternated round by round in one run: the medians
    of their CPU a line and of their rates, and the ratio of the CPU medians."""
    got: dict[str, list[dict[str, float]]] = {"this checkout": [], "baseline": []}
    for _ in range(rounds):
        got["this checkout"].append(in_subprocess(100_000))
        got["baseline"].append(in_subprocess(100_000, baseline))
    med = {
        k: (statistics.median(r["cpu_us"] for r in rs), statistics.median(r["rate"] for r in rs))
        for k, rs in got.items()
    }
    for k, (cpu, rate) in med.items():
        print(
            f"{k:<14} 100,000 result lines, median of {rounds} alternated rounds: {cpu:.2f} CPU us a line, {rate:,.0f} results/s"
        )
    print(f"CPU a line, this checkout / baseline: {med['this checkout'][0] / med['baseline'][0]:.3f}x")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--measure":
        sys.path.insert(0, sys.argv[4])  # the checkout whose harvest is measured (its imports are lazy)
        print(json.dumps(measure(Path(sys.argv[2]), int(sys.argv[3]))))
    else:
        main()
