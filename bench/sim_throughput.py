"""How fast the simulator's HTTP server creates, finishes and streams a batch through the real SDK.

    uv run python bench/sim_throughput.py [N]

Prints the seconds spent creating an N-request batch, ending it (results computed on the next call),
and streaming its results, plus result lines per second.
"""

from __future__ import annotations

import sys
import time

import anthropic

from adapters.simulator import ManualClock, Scenario, Simulator, serve


def main(n: int = 20_000) -> None:
    clock = ManualClock()
    sim = Simulator(Scenario(batch_seconds=1), clock=clock)
    system = [{"type": "text", "text": "Rubric. " * 800, "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    requests = [
        {
            "custom_id": f"item-{i}",
            "params": {
                "model": "claude-opus-4-8",
                "max_tokens": 256,
                "system": system,
                "messages": [{"role": "user", "content": f"Grade answer number {i}"}],
            },
        }
        for i in range(n)
    ]
    with serve(sim) as server:
        client = anthropic.Anthropic(api_key="sk-sim", base_url=server.base_url)
        t0 = time.perf_counter()
        batch = client.messages.batches.create(requests=requests)
        t1 = time.perf_counter()
        clock.advance(1)
        client.messages.batches.retrieve(batch.id)
        t2 = time.perf_counter()
        lines = sum(1 for _ in client.messages.batches.results(batch.id))
        t3 = time.perf_counter()
    assert lines == n
    print(f"requests: {n}")
    print(f"create:   {t1 - t0:.2f} s")
    print(f"end:      {t2 - t1:.2f} s  (answers + cache accounting for every request)")
    print(f"results:  {t3 - t2:.2f} s  ({lines / (t3 - t2):,.0f} lines/s through the SDK)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20_000)
