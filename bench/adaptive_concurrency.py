"""Adaptive concurrency (`judgecore.decide.concurrency`) against every fixed concurrency, on a simulated served model.

    uv run python bench/adaptive_concurrency.py [N] [--quick]

The server, in simulated time (no sleep, no socket): it serves up to Q requests at once (vLLM's
`--max-num-seqs`), each taking `base x (1 + 0.25 x running / Q)` seconds (a decode step slows a little
as the batch fills) times log-normal noise (sigma 0.1); the rest wait in a FIFO queue, so latency is flat
up to Q in flight and climbs linearly past it. With a bound B, a request arriving when B are already in
flight is refused with a 503 at once (vLLM with a bounded waiting queue); unbounded (B None) nothing is
refused and latency just climbs.

The client: N requests, at most `limit` in flight; a refused request sleeps 1 s (the sync route's
backoff, a `retry-after` the served model does not send) holding its slot, then is sent again. A fixed
client holds `limit` constant; the adaptive one starts at 32 (`--concurrency`'s default) and asks the
rule after every event.

Measured per scenario: the simulated seconds to finish the N requests, the throughput (requests per
second), the 503s received. The adaptive client is compared with the best fixed concurrency of the sweep
(every value 1..32, then every 4th to 256; `--quick`: 19 values) by the ratio of throughputs (goal:
at least 0.90). Its 503s are counted (a storm is a 503 rate that stays up: goal below 1% of the N
requests, most of them in the first 10% of the run's time, where a start above the bound is found),
beside the 503s a fixed client at 32 (the default) and at 256 receives. The limit the rule settled at
(the median over the last half of the run) is printed beside Q.
"""

from __future__ import annotations

import heapq
import math
import random
import statistics
import sys
from collections import deque
from dataclasses import dataclass, field

from judgecore.decide.concurrency import AdaptiveConcurrency, Answered, Refused, step

BACKOFF_SECONDS = 1.0
REFUSAL_SECONDS = 0.005


@dataclass
class Server:
    q: int
    bound: int | None
    base: float
    rng: random.Random
    running: int = 0
    waiting: deque[int] = field(default_factory=deque)

    def service(self) -> float:
        return self.base * (1 + 0.25 * self.running / self.q) * math.exp(self.rng.gauss(0, 0.1))


@dataclass
class Result:
    seconds: float
    throughput: float
    refusals: int
    early_refusals: int
    settled: float | None


def simulate(
    n: int, q: int, bound: int | None, *, fixed: int | None, seed: int = 7, base: float = 2.0
) -> Result:
    """Run N requests through the server at a fixed concurrency, or adaptively (`fixed` None)."""
    rng = random.Random(seed)
    server = Server(q=q, bound=bound, base=base, rng=rng)
    rule = AdaptiveConcurrency.start(32, 256) if fixed is None else None
    events: list[tuple[float, int, str, int]] = []  # (time, seq, kind, request)
    sent_at: dict[int, float] = {}
    seq = 0
    now = 0.0
    todo = n
    inflight = 0  # requests holding a slot (in the server, or sleeping after a 503)
    done = 0
    refusals: list[float] = []
    limits: list[tuple[float, int]] = []

    def push(t: float, kind: str, req: int) -> None:
        nonlocal seq
        seq += 1
        heapq.heappush(events, (t, seq, kind, req))

    def start_service(req: int) -> None:
        server.running += 1
        push(now + server.service(), "done", req)

    def send(req: int) -> None:
        sent_at[req] = now
        if server.bound is not None and server.running + len(server.waiting) >= server.bound:
            push(now + REFUSAL_SECONDS, "refused", req)
        elif server.running < server.q:
            start_service(req)
        else:
            server.waiting.append(req)

    def limit() -> int:
        return fixed if fixed is not None else rule.current  # type: ignore[union-attr]

    next_id = 0

    def fill() -> None:
        nonlocal todo, inflight, next_id
        while todo > 0 and inflight < limit():
            todo -= 1
            inflight += 1
            send(next_id)
            next_id += 1

    fill()
    while done < n:
        now, _, kind, req = heapq.heappop(events)
        if kind == "done":
            server.running -= 1
            if server.waiting:
                start_service(server.waiting.popleft())
            if rule is not None:
                rule = step(rule, Answered(now=now, latency=now - sent_at[req], inflight=inflight))
            inflight -= 1
            done += 1
        elif kind == "refused":
            refusals.append(now)
            if rule is not None:
                rule = step(rule, Refused(now=now))
            push(now + BACKOFF_SECONDS, "retry", req)
            continue
        else:  # retry after the backoff: the slot was held while sleeping
            send(req)
            continue
        if rule is not None:
            limits.append((now, rule.current))
        fill()
    settled = statistics.median(c for t, c in limits if t >= now / 2) if limits else None
    return Result(
        seconds=now,
        throughput=n / now,
        refusals=len(refusals),
        early_refusals=sum(1 for t in refusals if t <= now / 10),
        settled=settled,
    )


SCENARIOS = (
    # (Q, B): the knee and the bound (None: unbounded, latency climbs and nothing is refused)
    (8, 24),
    (16, None),
    (48, 96),
    (64, 80),
    (128, None),
    (200, 240),
)


def main(n: int = 10_000, quick: bool = False) -> None:
    sweep = (
        [1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 80, 96, 128, 160, 192, 200, 224, 240, 256]
        if quick
        else [*range(1, 33), *range(36, 257, 4)]
    )
    print(
        f"{n:,} requests per run; base latency 2 s; fixed concurrency swept over {len(sweep)} values in 1..256 "
        "(every one to 32, then every 4th)"
    )
    print(
        f"{'Q':>4} {'B':>5}  {'best fixed':>10} {'req/s':>7}  {'adaptive':>8} {'ratio':>6}  {'503s':>5} "
        f"{'in first 10%':>12}  {'settled':>7}  {'503s at 32':>10} {'at 256':>7}"
    )
    for q, bound in SCENARIOS:
        runs = {c: simulate(n, q, bound, fixed=c) for c in sweep}
        best_c = max(runs, key=lambda c: runs[c].throughput)
        best = runs[best_c]
        a = simulate(n, q, bound, fixed=None)
        at32 = runs[32] if 32 in runs else simulate(n, q, bound, fixed=32)
        at256 = runs[256] if 256 in runs else simulate(n, q, bound, fixed=256)
        print(
            f"{q:>4} {bound if bound is not None else '-':>5}  {best_c:>10} {best.throughput:>7.2f}  "
            f"{a.throughput:>8.2f} {a.throughput / best.throughput:>6.3f}  {a.refusals:>5} {a.early_refusals:>12}  "
            f"{a.settled:>7}  {at32.refusals:>10} {at256.refusals:>7}"
        )


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    main(int(args[0]) if args else 10_000, quick="--quick" in sys.argv)
