"""A 100,000-item `judgecore run --dry-run --json` as a whole process, against the orjson floor.

    uv run python bench/plan.py                      # median of 5 runs each, interleaved
    uv run python bench/plan.py --root OTHER_CHECKOUT  # the same, for another checkout (its .venv)
    uv run python bench/plan.py --baseline OTHER_CHECKOUT  # this checkout and another, in one run

The floor is the least work any planner must do, also run as a whole process: read each line with
orjson, build the batch request dict (`{"custom_id", "params": {model, max_tokens, system, messages}}`),
serialize it once, and sum the sizes, with the raw item id as the custom_id (the issue's floor). A
valid batch request needs a derived custom_id, so a second floor derives it per line with
`judgecore.job.ids.custom_id_for` (importing `judgecore`), and is printed beside the first. The dry-run
does more (it validates every line, checks for repeated ids, sizes each request, chunks, estimates the
cost), and the target (issue 21) is that it stays within 1.5x the floor (issue 11's was 2.0x). On a
fresh state dir, as here, it derives no custom_id: the job key they would be derived with is drawn for
the dry run alone, and a request's size needs only their lengths, which the ids tell; and it keeps no
item, reading the file a chunk at a time into the plan's totals (`adapters/run/streamed.py`). Each is timed
(wall and CPU time) as a fresh `python` process, interleaved so the machine's load hits all alike.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
N = 100_000
RUNS = 5
RUBRIC = "".join(
    f"Criterion {n}: judge whether the answer is correct, complete and grounded in the question; "
    f"score 1-5 and justify briefly.\n"
    for n in range(1, 46)
)

FLOOR = r"""
import sys, orjson
from judgecore.job.ids import custom_id_for
system = [{"type": "text", "text": open(sys.argv[2]).read(), "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
total = 0
with open(sys.argv[1], "rb") as f:
    for line in f:
        obj = orjson.loads(line)
        messages = obj.get("messages") or [{"role": "user", "content": obj["prompt"]}]
        body = {"custom_id": custom_id_for(obj["id"]), "params": {"model": "claude-sonnet-4-6", "max_tokens": 1024,
                "system": system, "messages": messages}}
        total += len(orjson.dumps(body))
print(total)
"""


def write_items(path: Path, n: int) -> None:
    with path.open("wb") as f:
        for i in range(n):
            row: dict[str, object] = {"id": f"q{i:07d}-s{i % 7}"}
            if i % 3:
                row["prompt"] = f"Question {i}: " + "why is the sky blue? " * (1 + i % 12)
            else:
                row["messages"] = [
                    {"role": "user", "content": f"Question {i}: why is the sky blue?"},
                    {"role": "assistant", "content": "Rayleigh scattering. " * (1 + i % 5)},
                    {"role": "user", "content": "Grade the answer above."},
                ]
            if i % 5 == 0:
                row["metadata"] = {"source": "bench", "n": i, "tags": ["a", "b"]}
            f.write(orjson.dumps(row) + b"\n")


def timed(args: list[str], root: Path = ROOT) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one process."""
    env = dict(os.environ)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    res = subprocess.run(args, cwd=root, env=env, capture_output=True, check=False)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert res.returncode == 0, res.stderr.decode()[-2000:]
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (its .venv)")
    ap.add_argument(
        "--baseline",
        type=Path,
        default=None,
        help="another checkout whose dry run is timed in the same run, interleaved (its .venv)",
    )
    ap.add_argument("--runs", type=int, default=RUNS, help=f"runs of each (default {RUNS})")
    args = ap.parse_args()
    roots = {"judgecore": args.root.resolve()}
    if args.baseline is not None:
        roots["baseline"] = args.baseline.resolve()
    root = roots["judgecore"]
    python = str(root / ".venv" / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        items, rubric = Path(tmp) / "items.jsonl", Path(tmp) / "rubric.txt"
        write_items(items, N)
        rubric.write_text(RUBRIC)
        floor_cmd = [python, "-c", FLOOR, str(items), str(rubric)]
        raw_floor = FLOOR.replace('custom_id_for(obj["id"])', 'obj["id"]').replace(
            "from judgecore.job.ids import custom_id_for", ""
        )
        raw_cmd = [python, "-c", raw_floor, str(items), str(rubric)]
        plan_args = [
            "-m",
            "adapters.cli",
            "run",
            str(items),
            "--rubric",
            str(rubric),
            "--state",
            str(Path(tmp) / "never-created"),
            "--dry-run",
            "--json",
        ]
        plan_cmds = {name: [str(r / ".venv" / "bin" / "python"), *plan_args] for name, r in roots.items()}
        timed(floor_cmd, root)  # warm the page cache and the bytecode caches
        for name, cmd in plan_cmds.items():
            timed(cmd, roots[name])
        floors, raws = [], []
        plans: dict[str, list[tuple[float, float]]] = {name: [] for name in roots}
        for _ in range(args.runs):
            floors.append(timed(floor_cmd, root))
            for name, cmd in plan_cmds.items():
                plans[name].append(timed(cmd, roots[name]))
            raws.append(timed(raw_cmd, root))
        assert not (Path(tmp) / "never-created").exists(), "a dry run must not create the state dir"
        print(f"dry-run --json of {N:,} items, whole process, median of {args.runs} (interleaved)")
        for k, what in ((0, "wall"), (1, "CPU")):
            raw = statistics.median(x[k] for x in raws)
            derived = statistics.median(x[k] for x in floors)
            for name, runs in plans.items():
                p = statistics.median(x[k] for x in runs)
                r_raw = statistics.median(b[k] / a[k] for a, b in zip(raws, runs, strict=True))
                r_derived = statistics.median(b[k] / a[k] for a, b in zip(floors, runs, strict=True))
                print(
                    f"  {what:<4} {name} dry-run {p:6.3f} s; orjson floor {raw:6.3f} s: {r_raw:.2f}x "
                    f"(target <= 1.5x); floor deriving custom_ids {derived:6.3f} s: {r_derived:.2f}x"
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
