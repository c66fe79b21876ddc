"""What the job's and the batch run's machines hold per item, in one process, no HTTP: the items and
requests are built first (their bytes are not counted), then `JobRun` hands out its `RunBatch` and a
`BatchRun` runs it to `Done` with every batch answered at once and every line final. tracemalloc
gives the peak and the end state over what the items hold, per item.

    uv run python bench/machines.py --sizes 90000 720000
    uv run python bench/machines.py --sizes 90000 720000 --root /work/base-scale   # another checkout
    uv run python bench/machines.py --reference /work/main   # this checkout and a reference, ratio

Each size runs in its own process (`--root`'s .venv), so one size's garbage never counts in the next.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import sys, time, tracemalloc
n = int(sys.argv[1])
from judgecore.job.items import Items, raw_digest, DIGEST_BYTES
from judgecore.job.ids import custom_ids_for
from judgecore.wire.requests import RequestTemplate, build_requests
from judgecore.run.job._machine import JobRun, History, JobPolicy, RunBatch
from judgecore.decide.polling import BatchSnapshot
from judgecore.run import batch as br
from judgecore.job.ints import Ints

ids = tuple(f"item-{i}" for i in range(n))
cids = custom_ids_for(ids, job="abcdefghijklmnop")
items = Items(ids, range(1, n + 1), None, (None,) * n, (None,) * n, cids,
              message_sizes=Ints([60] * n), digests=bytes(DIGEST_BYTES * n), job="abcdefghijklmnop")
template = RequestTemplate.build(model="claude-sonnet-4-6", max_tokens=64, rubric="Rate.", path="batch")
requests = build_requests(items, template)

tracemalloc.start(1)
base = tracemalloc.get_traced_memory()[0]
t0 = time.process_time()
job = JobRun.start(tuple(requests.custom_ids), History(), JobPolicy(force="batch"))
job, actions = job.advance()
(op,) = [a for a in actions if isinstance(a, RunBatch)]
try:
    from adapters.run.operations import requests_of
    class _Job:
        pass
    j = _Job(); j.requests = requests
    part = requests_of(j, op.ids)
except ImportError:
    part = requests.only(op.ids)
run = br.BatchRun.start(br.Checkpoint(), requests=part, settings=br.BatchSettings(), now=0.0, total=n)
now, steps = 0.0, 0
while True:
    now += 1.0
    run, actions = run.advance(now)
    events = []
    for a in actions:
        if isinstance(a, br.Create):
            snap = BatchSnapshot(id=f"b{a.sub_id}", status="in_progress", created_at=now, expires_at=now + 86400)
            events.append(br.Created(a.sub_id, snap, now))
        elif isinstance(a, br.Poll):
            snap = BatchSnapshot(id=a.batch_id, status="ended", created_at=now, expires_at=now + 86400)
            events.append(br.Snapshot(a.sub_id, snap, now))
        elif isinstance(a, br.Harvest):
            events.append(br.Harvested(a.sub_id, at=now, u=0.0, breaker=a.breaker, held=()))
        elif isinstance(a, br.Done):
            events = None
            break
    if events is None:
        break
    for e in events:
        run = run.on(e)
    steps += 1
assert run.pending() == 0, run.pending()
cur, peak = tracemalloc.get_traced_memory()
import json
print(json.dumps({"peak": peak - base, "end": cur - base, "cpu": time.process_time() - t0, "steps": steps}))
"""


def measure(root: Path, n: int) -> dict[str, float]:
    python = root / ".venv" / "bin" / "python"
    out = subprocess.run(
        [str(python), "-c", _CHILD, str(n)], cwd=root, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[90_000, 720_000])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (its .venv)")
    ap.add_argument("--reference", type=Path, default=None, help="another checkout, measured in turn")
    ap.add_argument("--runs", type=int, default=3, help="runs per size and checkout (medians printed)")
    ns = ap.parse_args()
    roots = [ns.root.resolve()] + ([ns.reference.resolve()] if ns.reference is not None else [])
    for n in ns.sizes:
        rows: dict[Path, list[dict[str, float]]] = {r: [] for r in roots}
        for _ in range(ns.runs):  # interleaved, so a busy moment weighs on both checkouts alike
            for root in roots:
                rows[root].append(measure(root, n))
        cpu = {r: statistics.median(x["cpu"] for x in rows[r]) for r in roots}
        for root in roots:
            r = {k: statistics.median(x[k] for x in rows[root]) for k in ("peak", "end", "steps")}
            ratio = f", {cpu[root] / cpu[roots[-1]]:.2f}x the reference's CPU" if root != roots[-1] else ""
            print(
                f"{root}\n  {n:>7,} items: peak {r['peak'] / 2**20:7.1f} MiB = {r['peak'] / n:6.1f} B per item, "
                f"at Done {r['end'] / 2**20:7.1f} MiB = {r['end'] / n:6.1f} B per item "
                f"(median of {ns.runs}: {cpu[root]:.2f} CPU s{ratio}, {r['steps']:.0f} steps)"
            )


if __name__ == "__main__":
    sys.exit(main())
