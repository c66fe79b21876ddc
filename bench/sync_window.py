"""The sync route's exposure window: from an answer delivered to the run to its commit in the checkpoint.

    uv run python bench/sync_window.py              # 600 items, 3 runs, real time over loopback HTTP

A kill -9 inside that window loses an answer that was paid for (the rerun sends it again), so it should
be as short as the disk allows. A sync job (`adapters.run.sync.run_sync` after its probe, as `judgecore
run` does) runs on the wall clock through the real `anthropic` SDK against the simulator served over
loopback HTTP, each answer taking a simulated latency. "Delivered" is the instant the SDK call returns
the answer to the shell (`MessagesApi.create`); "committed" the instant the checkpoint's
`record_outcomes` holding it returns (its fsync done). Printed: the window's median, 90th percentile and
maximum over every final answer, and the median fsync'd commit of one row on the same disk, measured in
the same run (the floor: no window can be shorter than one commit).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sync import MESSAGES, LatencyApi, job  # noqa: E402

from adapters.checkpoint.store import OutcomeRow, Store  # noqa: E402
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi  # noqa: E402
from adapters.providers.port import Answer, MessagesApi  # noqa: E402
from adapters.run.clock import RealClock  # noqa: E402
from adapters.run.events import discard  # noqa: E402
from adapters.run.sync import SyncSettings, probe, run_sync  # noqa: E402
from judgecore.results.outcomes import RawResult, classify  # noqa: E402


class Stamped:
    """A `MessagesApi` that notes when each answer is handed back, by the item's prompt."""

    def __init__(self, api: MessagesApi, by_prompt: dict[str, str], delivered: dict[str, float]) -> None:
        self.api, self.by_prompt, self.delivered = api, by_prompt, delivered

    async def create(self, params: dict[str, Any]) -> Answer:
        answer = await self.api.create(params)
        self.delivered[self.by_prompt[params["messages"][0]["content"]]] = time.perf_counter()
        return answer


async def one_run(n: int, seed: int, lo: float, hi: float, commits: list[float]) -> list[float]:
    clock = RealClock()
    template, requests, store = job(n, "w")
    by_prompt = {
        r.params(template, MESSAGES[r.custom_id])["messages"][0]["content"]: r.custom_id for r in requests
    }
    delivered: dict[str, float] = {}
    committed: dict[str, float] = {}
    record = store.record_outcomes

    def stamped_record(rows: Any) -> int:
        rows = list(rows)
        t0 = time.perf_counter()
        added = record(rows)
        at = time.perf_counter()
        commits.append(at - t0)
        for r in rows:
            committed.setdefault(r.custom_id, at)
        return added

    store.record_outcomes = stamped_record  # type: ignore[method-assign]
    import anthropic

    try:
        with simulator(seed) as base_url:
            async with anthropic.AsyncAnthropic(
                api_key="sk-bench", base_url=base_url, max_retries=0
            ) as client:
                api = Stamped(
                    LatencyApi(AnthropicMessagesApi(client), clock, random.Random(seed), lo, hi),
                    by_prompt,
                    delivered,
                )
                probed = await probe(
                    store=store, api=api, request=requests[0], template=template, clock=clock
                )
                await run_sync(
                    store=store,
                    requests=requests,
                    template=template,
                    api=api,
                    clock=clock,
                    settings=SyncSettings.from_env({}),
                    emit=discard,
                    rng=random.Random(seed),
                    reading=probed.reading,
                    warm_up=probed.outcome is None or not probed.outcome.final,
                )
    finally:
        store.close()
    return [committed[c] - delivered[c] for c in committed if c in delivered]


@contextlib.contextmanager
def simulator(seed: int) -> Iterator[str]:
    """The simulator served by a child process (in this one, its threads would hold the GIL the run's
    event loop needs, and the window measured would be theirs); its base URL."""
    cmd = [sys.executable, "-m", "adapters.cli", "simulator", "--port", "0", "--seed", str(seed)]
    child = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None
        line = child.stdout.readline()  # "simulator listening on http://127.0.0.1:PORT"
        yield line.split()[-1]
    finally:
        child.terminate()
        child.wait(10)


def one_commit(runs: int = 50) -> float:
    """The median wall time of one fsync'd commit of one outcome row, on this disk."""
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "s")
        store.bind_job({"bench": True}, ((f"c{i}", f"i{i}", "d") for i in range(runs)))
        outcome = classify(RawResult(kind="succeeded", text="7", stop_reason="end_turn"))
        times = []
        for i in range(runs):
            t0 = time.perf_counter()
            store.record_outcomes([OutcomeRow(custom_id=f"c{i}", outcome=outcome, route="sync", at=0.0)])
            times.append(time.perf_counter() - t0)
        store.close()
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=600)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--latency-min", type=float, default=0.2)
    ap.add_argument("--latency-max", type=float, default=1.5)
    ns = ap.parse_args()
    windows: list[float] = []
    commits: list[float] = []
    in_run: list[float] = []
    for run in range(ns.runs):
        commits.append(one_commit())
        windows += asyncio.run(one_run(ns.n, run, ns.latency_min, ns.latency_max, in_run))
    windows.sort()
    ms = [w * 1000 for w in windows]
    p90 = ms[int(0.9 * (len(ms) - 1))]
    print(
        f"sync answers delivered -> committed ({len(ms):,} answers, {ns.runs} runs of {ns.n:,} items): "
        f"median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, max {ms[-1]:.1f} ms; "
        f"one fsync'd commit of one row on this disk: median {statistics.median(commits) * 1000:.1f} ms; "
        f"the run's {len(in_run):,} commits: median {statistics.median(in_run) * 1000:.1f} ms, "
        f"max {max(in_run) * 1000:.1f} ms"
    )


if __name__ == "__main__":
    main()
