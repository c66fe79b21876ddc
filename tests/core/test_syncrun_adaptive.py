"""The sync run machine with adaptive concurrency (`SyncPolicy(adaptive=True)`, a served model): driven
against a model of a vLLM server in virtual time (latency flat up to its slots, then climbing with the
queue; a bounded queue refuses the excess with 503). No I/O, no clock."""

from __future__ import annotations

import heapq

from judgecore.decide.breaker import Breaker
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.results.outcomes import RawResult, Usage, classify
from judgecore.run.sync import Answered, Done, Launch, Say, SyncPolicy, SyncRun, Todo, Wait

T0 = 1_800_000_000.0
OK = RawResult(kind="succeeded", text="Score: 4", stop_reason="end_turn", usage=Usage(output_tokens=10))
FULL = RawResult(kind="http_error", status=503, error_type="ServiceUnavailableError", message="queue full")


def _run(n: int, concurrency: int) -> SyncRun:
    todos = tuple(Todo(custom_id=f"c{i}", max_tokens=100) for i in range(n))
    policy = SyncPolicy(concurrency=concurrency, adaptive=True, warm_up=False, max_attempts=50)
    return SyncRun.start(todos, policy=policy, now=T0, breaker=Breaker.start(n))


def serve(
    run: SyncRun, *, slots: int, latency: float, queued: int | None
) -> tuple[SyncRun, int, int, list[int], list[str], float]:
    """Run the machine to its end against the modelled server: (run, 200s, 503s, limits seen, notes,
    seconds taken)."""
    now, heap, busy = T0, [], 0
    ok = refused = 0
    limits: list[int] = []
    notes: list[str] = []
    seq = 0
    while True:
        run, actions = run.advance(now)
        for action in actions:
            if isinstance(action, Launch):
                depth = busy + 1
                seq += 1
                if queued is not None and depth > slots + queued:
                    heapq.heappush(heap, (now + 0.001, seq, action.todo.custom_id, FULL, False))
                else:
                    busy += 1
                    took = latency * max(1.0, depth / slots)
                    heapq.heappush(heap, (now + took, seq, action.todo.custom_id, OK, True))
                continue
            if isinstance(action, Say):
                notes.append(action.text)
                continue
            if isinstance(action, Done):
                return run, ok, refused, limits, notes, now - T0
            if isinstance(action, Wait):
                if heap and (action.until is None or heap[0][0] <= action.until):
                    now, _, cid, raw, held = heapq.heappop(heap)
                    busy -= held
                    ok += raw is OK
                    refused += raw is FULL
                    run = run.on(
                        Answered(
                            custom_id=cid, outcome=classify(raw), reading=RateLimitReading(), now=now, u=0.5
                        )
                    )
                    limits.append(run.limit)
                else:
                    assert action.until is not None, "waiting for nothing"
                    now = action.until


def test_an_unbounded_server_is_kept_busy_without_a_refusal() -> None:
    """Past the knee latency climbs and nothing is refused: the run takes no longer than the server
    needs (its slots always full), whatever it started at."""
    for start in (4, 32, 256):
        run, ok, refused, _, _, took = serve(_run(3000, start), slots=16, latency=1.0, queued=None)
        assert ok == 3000 and refused == 0 and run.tally.succeeded == 3000
        assert took <= 1.15 * 3000 / 16, (start, took)  # within 15% of the server's own speed


def test_a_small_start_grows_while_throughput_grows() -> None:
    _, ok, _, limits, _, _ = serve(_run(3000, 2), slots=32, latency=1.0, queued=None)
    assert ok == 3000
    assert max(limits) >= 32  # it found the server's room, not the 2 it was started with


def test_a_bounded_queue_is_not_hammered_with_a_503_storm() -> None:
    run, ok, refused, limits, notes, took = serve(_run(2000, 32), slots=8, latency=1.0, queued=8)
    assert ok == 2000 and run.tally.succeeded == 2000  # every item finished
    assert 0 < refused < 0.03 * ok  # refused while it learns the bound, then not again and again
    assert any("server refused" in n for n in notes)
    tail = limits[len(limits) // 2 :]
    assert max(tail) <= 8 + 8  # within the slots and queue once it has learnt them
    assert took <= 1.25 * 2000 / 8


def test_without_adaptive_the_limit_stays_the_aimd_one() -> None:
    todos = tuple(Todo(custom_id=f"c{i}", max_tokens=100) for i in range(3))
    run = SyncRun.start(todos, policy=SyncPolicy(concurrency=5), now=T0, breaker=Breaker.start(3))
    assert run.adaptive is None and run.limit == 5
