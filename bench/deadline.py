"""A deadline, in simulated time: how many jobs are final by it, and at what cost against all-sync and
against an oracle that knew each batch's latency in advance.

    uv run python bench/deadline.py                       # 1,000 jobs per size and deadline, pareto
    uv run python bench/deadline.py --latency lognormal --progress none

No HTTP and no sleeping: a job is a few events on a simulated clock, and every decision is the core's
own (`judgecore.decide.deadline.deadline_start` once, then `next_deadline_action` for each live batch at
every poll, exactly as a run would ask it). What the decisions do not know, the bench draws, seeded:

- each sub-batch's latency, from `adapters.simulator.latency` (the simulator's `--batch-latency`,
  `--batch-seconds` its median): pareto (alpha 1.1) or lognormal (sigma 1.2), median 20 minutes;
- how far a batch had got when it was canceled (`--progress`): `linear` (the simulator's model: the
  share of its latency elapsed) or `none` (the worst case: a canceled batch completed nothing);
- how long a cancel takes to end a batch: uniform in 1-60 s (the decision allows 120 s);
- the sync route's true speed: the decision estimates 100 output tokens an answer and 10 s a call
  (before any answer, as a run does); the truth is drawn per job, tokens x lognormal(0, 0.15) and
  latency x lognormal(0, 0.2), so the margin (25% + 60 s) is tested, not assumed.

A job: N requests (sub-batches of 8,000, all created at t = 0) at OTPM 400,000 read, RPM 4,000,
concurrency 256 (`concurrency_for` of that tier), polled every 60 s. Cost is counted in units of one
request at the sync price: a request answered by a batch costs 0.5, on the sync route 1.0, and a
request still pending at the deadline is counted at 1.0 (a rerun sends it), so every job's cost is
that of answering everything. Per configuration the bench prints:

- final by the deadline: the share of jobs with every item final by then (the decision, all-sync,
  and no deadline at all: waiting for every batch however long it takes);
- cost / all-sync, and cost / oracle: means and medians over jobs, and the ratio of the summed costs;
- the oracle knows every latency (and the truth of the sync route and the cancel): it waits for the
  batches that end by the deadline and cancels the others all at once at the latest moment the sync
  route can still finish their rest (one switch, like the decision; a staggered oracle canceling
  batches one by one could be cheaper still). `bound`: a floor no plan can beat, the late batches
  canceled at the deadline itself as if the sync route took no time.
- what-if split, where the sync route cannot finish everything in time (the decision then goes all
  sync, as the contract says): the share final and the cost of sending on the sync route only what it
  can finish, batching the rest, and never switching (`run_split`; not what a run does).
"""

from __future__ import annotations

import argparse
import math
import random
import statistics
import sys
import time
from pathlib import Path

import attrs

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from adapters.simulator.latency import latency_at  # noqa: E402
from judgecore.decide.deadline import (  # noqa: E402
    AllSync,
    DeadlinePolicy,
    End,
    Pile,
    Switch,
    SyncPace,
    Unfinished,
    UseBatches,
    Watch,
    deadline_start,
    next_deadline_action,
)
from judgecore.decide.polling import BatchSnapshot, Harvest, Overdue, PollIn, PollPolicy  # noqa: E402

SUB_BATCH = 8_000
TOKENS = 100.0  # the estimate of one answer's output tokens (EXPECTED_OUTPUT_TOKENS)
PACE = SyncPace(otpm=400_000, otpm_source="read", rpm=4_000, concurrency=256, latency=10.0)
EXPIRES = 86_400.0
POLL = PollPolicy(interval=60.0, grace=1_800.0)


@attrs.frozen(kw_only=True)
class Job:
    """One drawn job: its sub-batches' sizes and latencies, and the truths the decision does not know."""

    sizes: tuple[int, ...]
    latencies: tuple[float, ...]
    deadline: float
    cancel_delay: float
    true_pace: SyncPace
    true_tokens: float
    progress: str  # "linear" or "none"

    @property
    def n(self) -> int:
        return sum(self.sizes)

    def true_seconds(self, requests: int) -> float:
        return self.true_pace.seconds(Pile.of(requests, self.true_tokens))

    def done_at(self, i: int, t: float) -> int:
        """Requests of sub-batch `i` completed by `t` after its creation."""
        if t >= self.latencies[i]:
            return self.sizes[i]
        return math.floor(self.sizes[i] * t / self.latencies[i]) if self.progress == "linear" else 0


@attrs.frozen(kw_only=True)
class Result:
    final_by_deadline: bool
    cost: float  # units of one request at the sync price
    switched: bool
    all_sync: bool


def draw_job(rng: random.Random, n: int, deadline: float, *, kind: str, median: float, progress: str) -> Job:
    sizes = tuple(min(SUB_BATCH, n - i) for i in range(0, n, SUB_BATCH))
    latencies = tuple(latency_at(kind, median, None, rng.random()) for _ in sizes)
    true_pace = attrs.evolve(PACE, latency=PACE.latency * rng.lognormvariate(0.0, 0.2))
    return Job(
        sizes=sizes,
        latencies=latencies,
        deadline=deadline,
        cancel_delay=rng.uniform(1.0, 60.0),
        true_pace=true_pace,
        true_tokens=TOKENS * rng.lognormvariate(0.0, 0.15),
        progress=progress,
    )


class SyncRoute:
    """The sync route as one fluid server: requests released at a time are answered one lot after
    another at the job's true speed."""

    def __init__(self, job: Job) -> None:
        self.job, self.busy_until, self.last = job, 0.0, 0.0

    def send(self, at: float, requests: int) -> None:
        if requests:
            self.busy_until = max(self.busy_until, at) + self.job.true_seconds(requests)
            self.last = self.busy_until


def run_job(job: Job, policy: DeadlinePolicy) -> Result:
    """A run with a deadline, every decision the core's (see the module docstring)."""
    d, n = job.deadline, job.n
    sync = SyncRoute(job)
    start = deadline_start(0.0, _watch(job, policy, in_batches=0, unsent=n))
    if isinstance(start, End):
        return Result(final_by_deadline=False, cost=float(n), switched=False, all_sync=False)
    if isinstance(start, AllSync):
        sync.send(0.0, n)
        return Result(final_by_deadline=sync.last <= d, cost=float(n), switched=False, all_sync=True)
    assert isinstance(start, UseBatches)
    status = ["in_progress"] * len(job.sizes)
    ends = [min(lat, EXPIRES) for lat in job.latencies]  # when each batch ends (moved by a cancel)
    cut = list(ends)  # when each batch stopped processing
    by_batch, harvested_at, switched, now = 0, 0.0, False, 0.0
    while True:
        live = [i for i, s in enumerate(status) if s != "ended"]
        if not live:
            break
        watch = _watch(job, policy, in_batches=sum(job.sizes[i] for i in live), unsent=0)
        waits, ended = [], False
        for i in live:
            shown = "ended" if now >= ends[i] else status[i]
            snap = BatchSnapshot(id=f"b{i}", status=shown, created_at=0.0, expires_at=EXPIRES)  # type: ignore[arg-type]
            match next_deadline_action(now, snap, POLL, watch):
                case Harvest():
                    done = job.done_at(i, cut[i])
                    by_batch += done
                    sync.send(now, job.sizes[i] - done)  # canceled or expired: the rest goes sync
                    status[i], harvested_at, ended = "ended", now, True
                case Switch():
                    switched = True
                    for j in live:
                        if status[j] == "in_progress" and now < ends[j]:
                            status[j] = "canceling"
                            if now + job.cancel_delay < ends[j]:  # else it ends first, complete
                                cut[j], ends[j] = now, now + job.cancel_delay
                    break  # poll again at once: nothing waits on a switch
                case PollIn(seconds):
                    waits.append(seconds)
                case End():
                    return Result(
                        final_by_deadline=False, cost=_cost(n, by_batch), switched=switched, all_sync=False
                    )
                case Overdue():
                    raise AssertionError("a deadline under 24 hours never leaves a batch overdue")
        else:
            if not ended:
                now += min(waits)
    final = max(sync.last, harvested_at) <= d
    return Result(final_by_deadline=final, cost=_cost(n, by_batch), switched=switched, all_sync=False)


def run_split(job: Job, policy: DeadlinePolicy) -> Result | None:
    """What-if, for a deadline the sync route cannot meet with everything (`AllSync.short_by` > 0):
    send on the sync route what it can finish, batch the rest, and never switch (the sync route is busy
    until the deadline). None where the decision does not answer all sync short of time."""
    start = deadline_start(0.0, _watch(job, policy, in_batches=0, unsent=job.n))
    if not (isinstance(start, AllSync) and start.short_by > 0):
        return None
    lo, hi = 0, job.n  # the most requests the sync route finishes, with its margin, by the deadline
    while lo < hi:
        mid = (lo + hi + 1) // 2
        fits = policy.needed(PACE.seconds(Pile.of(mid, TOKENS)), batches_live=False) <= job.deadline
        lo, hi = (mid, hi) if fits else (lo, mid - 1)
    rest = job.n - lo
    latencies = job.latencies[: math.ceil(rest / SUB_BATCH)]
    on_time = job.true_seconds(lo) <= job.deadline and all(
        lat + POLL.interval <= job.deadline for lat in latencies
    )
    return Result(final_by_deadline=on_time, cost=_cost(job.n, rest), switched=False, all_sync=False)


def _watch(job: Job, policy: DeadlinePolicy, *, in_batches: int, unsent: int) -> Watch:
    pending = Unfinished(in_batches=Pile.of(in_batches, TOKENS), unsent=Pile.of(unsent, TOKENS))
    return Watch(deadline=job.deadline, unfinished=pending, pace=PACE, policy=policy)


def _cost(n: int, by_batch: int) -> float:
    return 0.5 * by_batch + 1.0 * (n - by_batch)


def oracle_cost(job: Job) -> tuple[float, bool]:
    """The cheapest one-switch plan knowing every latency and the truths; and whether it is on time."""
    d = job.deadline
    late = [i for i, lat in enumerate(job.latencies) if lat > d]
    on_time = job.n - sum(job.sizes[i] for i in late)
    if not late:
        return 0.5 * job.n, True

    def rest(t: float) -> int:
        return sum(job.sizes[i] - job.done_at(i, t) for i in late)

    def fits(t: float) -> bool:
        delay = job.cancel_delay if t > 0 else 0.0  # at t = 0 the late batches are never created
        return t + delay + job.true_seconds(rest(t)) <= d

    if not fits(0.0):
        return _cost(job.n, on_time), False
    lo, hi = 0.0, d
    for _ in range(50):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    done = sum(job.done_at(i, lo) for i in late) if lo > 0 else 0
    return _cost(job.n, on_time + done), True


def bound_cost(job: Job) -> float:
    """No plan costs less: the batches that end in time waited for, the late ones canceled at the
    deadline less the cancel, as if the sync route took no time."""
    t = max(0.0, job.deadline - job.cancel_delay)
    by_batch = (
        job.sizes[i] if lat <= job.deadline else job.done_at(i, t) for i, lat in enumerate(job.latencies)
    )
    return _cost(job.n, sum(by_batch))


def _hours(text: str) -> float:
    value = float(text.rstrip("h"))
    if not 0 < value < 24:
        raise argparse.ArgumentTypeError(f"a deadline in hours, under 24, got {text!r}")
    return value * 3_600.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--jobs", type=int, default=1_000, help="jobs per size and deadline (default: %(default)s)"
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=[2_000, 20_000, 100_000])
    ap.add_argument("--deadlines", type=_hours, nargs="+", default=[_hours(h) for h in ("1", "2", "4", "8")],
                    metavar="HOURS")  # fmt: skip
    ap.add_argument("--latency", choices=("pareto", "lognormal"), default="pareto")
    ap.add_argument("--median", type=float, default=1_200.0, help="batch latency median, seconds")
    ap.add_argument("--progress", choices=("linear", "none"), default="linear")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--share", type=float, default=DeadlinePolicy().share, help="margin: share of the sync time"
    )
    ap.add_argument("--fixed", type=float, default=DeadlinePolicy().fixed, help="margin: seconds")
    args = ap.parse_args()
    policy = DeadlinePolicy(share=args.share, fixed=args.fixed)
    print(
        f"# {args.jobs:,} jobs per row; latency {args.latency}, median {args.median:g} s; progress of a "
        f"canceled batch: {args.progress}; margin {policy.share:.0%} + {policy.fixed:g} s "
        f"(+ {policy.cancel:g} s for a cancel); min batch window {policy.min_batch_window:g} s"
    )
    print(
        "| N | deadline | all-sync needs | final: decision | all-sync | no deadline | oracle | switched "
        "| all sync | cost/all-sync (mean) | cost/oracle: mean | median | p95 | max | summed | oracle/bound "
        "| what-if split: final | its cost/oracle (summed) |"
    )
    print("|" + "---|" * 18)
    t0 = time.perf_counter()
    for n in args.sizes:
        for d in args.deadlines:
            rows = []
            for j in range(args.jobs):
                rng = random.Random(f"{args.seed}/{n}/{j}")  # the same draws for every deadline
                job = draw_job(rng, n, d, kind=args.latency, median=args.median, progress=args.progress)
                res = run_job(job, policy)
                oracle, oracle_on_time = oracle_cost(job)
                no_deadline = max(min(lat, EXPIRES) for lat in job.latencies) <= d
                rows.append(
                    (res, oracle, oracle_on_time, bound_cost(job), no_deadline, job.true_seconds(n) <= d,
                     run_split(job, policy))
                )  # fmt: skip
            _row(n, d, rows)
    print(f"# {time.perf_counter() - t0:.1f} s")


def _row(n: int, d: float, rows: list) -> None:
    jobs = len(rows)
    share = lambda k: sum(1 for r in rows if k(r)) / jobs  # noqa: E731
    vs_sync = [r[0].cost / n for r in rows]
    vs_oracle = [r[0].cost / r[1] for r in rows]
    summed = sum(r[0].cost for r in rows) / sum(r[1] for r in rows)
    oracle_vs_bound = sum(r[1] for r in rows) / sum(r[3] for r in rows)
    q = statistics.quantiles(vs_oracle, n=20)
    print(
        f"| {n:,} | {d / 3600:g} h | {PACE.seconds(Pile.of(n, TOKENS)) / 60:.0f} min "
        f"| {share(lambda r: r[0].final_by_deadline):.1%} | {share(lambda r: r[5]):.1%} | {share(lambda r: r[4]):.1%} "
        f"| {share(lambda r: r[2]):.1%} "
        f"| {share(lambda r: r[0].switched):.1%} | {share(lambda r: r[0].all_sync):.1%} "
        f"| {statistics.fmean(vs_sync):.3f} | {statistics.fmean(vs_oracle):.3f} | {statistics.median(vs_oracle):.3f} "
        f"| {q[18]:.3f} | {max(vs_oracle):.3f} | {summed:.3f} | {oracle_vs_bound:.3f} | {_split(rows)} |"
    )  # fmt: skip


def _split(rows: list) -> str:
    split = [(r[6], r[1]) for r in rows if r[6] is not None]
    if not split:
        return "- | -"
    final = sum(1 for s, _ in split if s.final_by_deadline) / len(split)
    return f"{final:.1%} of {len(split):,} | {sum(s.cost for s, _ in split) / sum(o for _, o in split):.3f}"


if __name__ == "__main__":
    main()
