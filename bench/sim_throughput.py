"""How fast the simulator, in its own process, takes a job's batches and serves their results.

    uv run python bench/sim_throughput.py                  # 1,000,000 requests in sub-batches of 8,000
    uv run python bench/sim_throughput.py 90000 --per-batch 8000

The simulator runs as `judgecore simulator --lazy-batches` (bench/simproc.py); this process sends the
creates (`http.client`, the same requests `bench/job.py`'s items make: a 2,400-byte cached rubric and a
one-line prompt each), waits for every batch to end, then reads each batch's results whole, counting
lines (no parsing: the rate is the simulator's). Printed: the seconds and the simulator's CPU for the
creates and for the results, the results' lines per second (wall, and per simulator CPU second), and
the simulator's peak RSS. Compare the rate with a judgecore job's (`bench/job.py` prints its items per
CPU second): issue 42 asks the results served at least 5x faster than judgecore takes them.
"""

from __future__ import annotations

import argparse
import http.client
import sys
import time
import urllib.parse
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from job import RUBRIC  # noqa: E402
from simproc import sim_process  # noqa: E402

HEADERS = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01", "content-type": "application/json"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int, nargs="?", default=1_000_000)
    ap.add_argument("--per-batch", type=int, default=8000)
    ns = ap.parse_args()
    system = [{"type": "text", "text": RUBRIC, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    python = str(ROOT / ".venv" / "bin" / "python")
    with sim_process(python, ROOT, "--seed", "1", "--batch-seconds", "1") as sim:
        url = urllib.parse.urlsplit(sim.base_url)
        conn = http.client.HTTPConnection(url.hostname, url.port)

        def call(method: str, path: str, body: bytes | None = None) -> dict:
            conn.request(method, path, body=body, headers=HEADERS)
            r = conn.getresponse()
            data = r.read()
            if r.status != 200:
                raise SystemExit(f"{method} {path}: {r.status} {data[:300]!r}")
            return orjson.loads(data)

        cpu0, t0 = sim.cpu(), time.perf_counter()
        ids = []
        for start in range(0, ns.n, ns.per_batch):
            part = [
                {
                    "custom_id": f"item-{i}",
                    "params": {
                        "model": "claude-sonnet-4-6",
                        "max_tokens": 1024,
                        "system": system,
                        "messages": [{"role": "user", "content": f"Grade answer {i}: the sky is blue."}],
                    },
                }
                for i in range(start, min(ns.n, start + ns.per_batch))
            ]
            ids.append(call("POST", "/v1/messages/batches", orjson.dumps({"requests": part}))["id"])
        cpu1, t1 = sim.cpu(), time.perf_counter()
        time.sleep(1.1)
        lines = 0
        cpu2, t2 = sim.cpu(), time.perf_counter()
        for batch_id in ids:
            while call("GET", f"/v1/messages/batches/{batch_id}")["processing_status"] != "ended":
                time.sleep(0.05)
            conn.request("GET", f"/v1/messages/batches/{batch_id}/results", headers=HEADERS)
            r = conn.getresponse()
            while chunk := r.read(1 << 20):
                lines += chunk.count(b"\n")
        cpu3, t3 = sim.cpu(), time.perf_counter()
        rss = sim.rss_mb()
    assert lines == ns.n, (lines, ns.n)
    print(
        f"simulator in its own process (--lazy-batches), {ns.n:,} requests in {len(ids)} batches of {ns.per_batch:,}"
    )
    print(
        f"  creates: {t1 - t0:6.1f} s wall, {cpu1 - cpu0:6.1f} CPU s of the simulator ({ns.n / (cpu1 - cpu0):,.0f} requests per CPU s)"
    )
    print(
        f"  results: {t3 - t2:6.1f} s wall, {cpu3 - cpu2:6.1f} CPU s: {lines / (t3 - t2):,.0f} lines/s "
        f"({lines / (cpu3 - cpu2):,.0f} per simulator CPU s)"
    )
    print(f"  simulator peak RSS {rss:,.0f} MB")


if __name__ == "__main__":
    main()
