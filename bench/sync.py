"""Benchmark of the sync path's pacing: how much of an output-tokens-per-minute limit a job uses, and how
many of its requests are answered 429.

A sync job runs `adapters.run.sync.run_sync` (probe first, as `judgecore run` does) through the real
`anthropic` SDK against the simulator, whose output-token bucket refills continuously at OTPM/60 per
second and which serves the `anthropic-ratelimit-*` headers as the API serves them (token `remaining`
rounded to the nearest thousand, `reset` in RFC 3339) and 429s with `retry-after` when the bucket is empty.
Each request takes a simulated latency (uniform in [--latency-min, --latency-max] seconds).

By default time is simulated (a FakeClock shared by the simulator and the run), so ten minutes of
traffic take seconds; `--real-time` runs on the wall clock through a loopback HTTP server instead.
`--shared` adds a second, identical job on the same org limit at the same time (two sessions sharing
one tier); the figures are then for both jobs together.

Achieved rate = output tokens the job received / its elapsed time, as a share of OTPM/60 per second.
429 share = requests the simulator answered 429 / all Messages requests it received.
Targets (issue #4): at least 90% of the limit, at most 1% of requests answered 429.

Run with `uv run python bench/sync.py` (add `--help` for the knobs).
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from typing import Any

import orjson

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.providers.port import Answer, MessagesApi
from adapters.run.clock import Clock, FakeClock, RealClock
from adapters.run.events import discard
from adapters.run.sync import SyncRunResult, SyncSettings, probe, run_sync
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from adapters.simulator.transport import sim_client
from judgecore.job.parsing import parse_items
from judgecore.wire.requests import Request, RequestTemplate, build_requests

MODEL = "claude-sonnet-4-6"
RUBRIC = "".join(
    f"Criterion {n}: judge whether the answer is correct, complete and grounded in the question; "
    "score 1-5 and justify briefly.\n"
    for n in range(1, 46)
)


class LatencyApi:
    """A `MessagesApi` whose every answer takes a simulated time (the request is in flight meanwhile)."""

    def __init__(self, api: MessagesApi, clock: Clock, rng: random.Random, lo: float, hi: float) -> None:
        self.api, self.clock, self.rng, self.lo, self.hi = api, clock, rng, lo, hi

    async def create(self, params: dict[str, Any]) -> Answer:
        await self.clock.sleep(self.rng.uniform(self.lo, self.hi))
        return await self.api.create(params)


#: each request's messages by custom_id (the requests hold none; the run reads them from the store)
MESSAGES: dict[str, bytes] = {}


def job(n: int, tag: str) -> tuple[RequestTemplate, list[Request], Store]:
    lines = [
        orjson.dumps({"id": f"{tag}{i}", "prompt": f"Grade answer {tag}{i}: the sky is blue."})
        for i in range(n)
    ]
    items = parse_items(lines)
    template = RequestTemplate.build(model=MODEL, max_tokens=512, rubric=RUBRIC, path="sync")
    requests = list(build_requests(items, template))
    store = Store.open(tempfile.mkdtemp(prefix="bench-sync-"))
    store.bind_job(
        {"model": MODEL}, ((r.custom_id, i.id, i.digest) for i, r in zip(items, requests, strict=True))
    )
    MESSAGES.update(zip(items.custom_ids, items.messages(), strict=True))
    store.keep_messages(zip(items.custom_ids, items.messages(), strict=True))
    return template, requests, store


async def one_job(
    api: MessagesApi, clock: Clock, n: int, tag: str, settings: SyncSettings, seed: int
) -> SyncRunResult:
    template, requests, store = job(n, tag)
    probed = await probe(store=store, api=api, request=requests[0], template=template, clock=clock)
    reading, outcome = probed.reading, probed.outcome
    try:
        return await run_sync(
            store=store,
            requests=requests,
            template=template,
            api=api,
            clock=clock,
            settings=settings,
            emit=discard,
            rng=random.Random(seed),
            reading=reading,
            warm_up=outcome is None or not outcome.final,
        )
    finally:
        store.close()


async def one_run(args: argparse.Namespace, seed: int) -> dict[str, float]:
    clock: Clock = RealClock() if args.real_time else FakeClock()
    scenario = Scenario(seed=seed, otpm_limit=args.otpm, send_retry_after_ms=False)
    sim = Simulator(scenario, clock=clock.now)
    settings = SyncSettings.from_env({}, **({"concurrency": args.concurrency} if args.concurrency else {}))
    rng = random.Random(seed)
    started = clock.now()

    async def run(client: Any) -> list[SyncRunResult]:
        api = LatencyApi(AnthropicMessagesApi(client), clock, rng, args.latency_min, args.latency_max)
        jobs = [one_job(api, clock, args.n, "a", settings, seed)]
        if args.shared:
            jobs.append(one_job(api, clock, args.n, "b", settings, seed + 1000))
        return list(await asyncio.gather(*jobs))

    if args.real_time:
        import anthropic

        with serve(sim) as handle:
            results = await run(
                anthropic.AsyncAnthropic(api_key="sk-bench", base_url=handle.base_url, max_retries=0)
            )
    else:
        results = await run(sim_client(sim, max_retries=0))
    elapsed = clock.now() - started
    messages = sim.message_requests()
    rejected = sum(1 for e in messages if e.status == 429)
    output = sum(r.output_tokens for r in results)
    return {
        "share": output / elapsed / (args.otpm / 60),
        "share_429": rejected / len(messages),
        "requests": len(messages),
        "rejected": rejected,
        "elapsed": elapsed,
        "output": output,
        "hit_rate": results[0].cache_hit_rate or 0.0,
        "pending": sum(r.pending for r in results),
    }


async def naive_run(args: argparse.Namespace, seed: int, concurrency: int = 200) -> dict[str, float]:
    """The baseline, in the same process: a fixed pool of `concurrency` workers that send as fast as
    they can and, on a 429, sleep what `retry-after` says and send again (what a plain SDK loop with
    the SDK's own retry does), against the same simulator, limit, latency and items."""
    clock = FakeClock()
    sim = Simulator(Scenario(seed=seed, otpm_limit=args.otpm, send_retry_after_ms=False), clock=clock.now)
    rng = random.Random(seed)
    api = LatencyApi(
        AnthropicMessagesApi(sim_client(sim, max_retries=0)), clock, rng, args.latency_min, args.latency_max
    )
    template, requests, store = job(args.n, "n")
    store.close()
    queue = list(reversed(requests))
    output = 0
    started = clock.now()

    async def worker() -> None:
        nonlocal output
        while queue:
            request = queue.pop()
            while True:
                raw, _reading, _rid = await api.create(request.params(template, MESSAGES[request.custom_id]))
                if raw.kind == "succeeded":
                    output += raw.usage.output_tokens if raw.usage else 0
                    break
                await clock.sleep(raw.retry_after or 1.0)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = clock.now() - started
    messages = sim.message_requests()
    rejected = sum(1 for e in messages if e.status == 429)
    return {"share": output / elapsed / (args.otpm / 60), "share_429": rejected / len(messages)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--otpm", type=int, default=40_000, help="output tokens per minute the simulator allows")
    p.add_argument("--n", type=int, default=6000, help="items per job")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--latency-min", type=float, default=0.5)
    p.add_argument("--latency-max", type=float, default=4.0)
    p.add_argument("--concurrency", type=int, default=None, help="default: from the tier")
    p.add_argument("--shared", action="store_true", help="two jobs at once on the same org limit")
    p.add_argument("--real-time", action="store_true", help="wall clock and loopback HTTP (slow)")
    args = p.parse_args(argv)

    rows = []
    for run in range(args.runs):
        wall = time.perf_counter()
        row = asyncio.run(one_run(args, seed=run))
        row["wall"] = time.perf_counter() - wall
        rows.append(row)
        print(
            f"run {run + 1}: {row['output']:,.0f} output tokens in {row['elapsed']:,.1f} s "
            f"= {row['share']:.1%} of {args.otpm:,} OTPM; {row['rejected']:.0f} of {row['requests']:.0f} "
            f"requests answered 429 ({row['share_429']:.2%}); cache hit rate {row['hit_rate']:.1%}; "
            f"pending {row['pending']:.0f}; wall {row['wall']:.1f} s",
            flush=True,
        )
    share = statistics.median(r["share"] for r in rows)
    share_429 = statistics.median(r["share_429"] for r in rows)
    clock = "real time, loopback HTTP" if args.real_time else "simulated time, in-process transport"
    who = "two jobs sharing the limit" if args.shared else "one job"
    print(
        f"median of {args.runs} runs ({who}, {args.n:,} items a job, latency {args.latency_min}-"
        f"{args.latency_max} s, {clock}): achieved output-token rate {share:.1%} of the limit; "
        f"requests answered 429: {share_429:.2%}"
    )
    if not args.shared and not args.real_time:
        naive = [asyncio.run(naive_run(args, seed=run)) for run in range(min(3, args.runs))]
        n_share = statistics.median(r["share"] for r in naive)
        n_429 = statistics.median(r["share_429"] for r in naive)
        print(
            f"baseline in the same process (200 workers, no pacing, sleep retry-after on 429), median of "
            f"{len(naive)}: {n_share:.1%} of the limit (a burst past it, paid for in 429s), {n_429:.2%} of "
            f"requests answered 429; judgecore/baseline: rate {share / n_share:.2f}x, "
            f"429 share {share_429:.2%} vs {n_429:.2%}"
        )
    ok = share >= 0.90 and share_429 <= 0.01
    print(f"targets (>= 90% of the limit, <= 1% 429s): {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
