"""The end of a job: writing the output from the checkpoint, and reading each item's latest outcome.

    uv run python bench/output.py                                   # 20,000 and 90,000 outcomes, 5 rounds
    uv run python bench/output.py --root /work/base-store           # also another checkout, alternated
    uv run python bench/output.py --sizes 20000 --callgrind         # + instructions per item (valgrind)

For each size a checkpoint is built by each checkout's own code (its `.venv`, outside the measured
process): every item bound, about 95% answered `succeeded` with usage, 2% a `miss`, 1% `quarantined`,
2% answered `retry` in a first sub-batch and `succeeded` in a second, a third of the items with
metadata. Then, round after round, one fresh process per checkout (alternated, so machine load falls on
them alike) times, over the same checkpoint:

- `write`: `write_output` of the JSONL output file (the items as a run holds them, no verdict);
- `latest`: iterating `Store.latest()` to the end;
- `counts`: `Store.counts()`.

Printed: medians of the rounds (seconds, and microseconds per item). `--callgrind` also runs each
checkout's `write` under `valgrind --tool=callgrind` once with one write and once with two in the same
process: the difference is one warm `write_output`, in instructions, divided by the items.
`--migrate` times this checkout's first writable open of a checkpoint built by `--root` (an older schema
builds its winners' table then, once).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the measured checkout, as `python -c CHILD ROOT STATE N MODE REPEAT`.
CHILD = r"""
import sys, time, json
root, state, n, mode, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
sys.path.insert(0, root)
from pathlib import Path
from adapters.checkpoint.store import Store
from judgecore.job.items import Item, Items

def cid(i): return f"item-{i:07d}-bench"

def build():
    from adapters.checkpoint.store import OutcomeRow
    from judgecore.results.outcomes import FailureClass, Outcome, Status, Usage
    store = Store.open(state)
    store.bind_job({"bench": True}, ((cid(i), f"item{i}", "d") for i in range(n)))
    text = '{"score": 7, "reason": "' + "The answer is correct and clearly argued. " * 4 + '"}'
    usage = Usage(input_tokens=812, output_tokens=96, cache_creation_input_tokens=0, cache_read_input_tokens=640)
    ok = Outcome(status=Status.SUCCEEDED, failure=None, reason="succeeded", text=text, stop_reason="end_turn",
                 model="claude-sonnet-4-6", usage=usage)
    miss = Outcome(status=Status.MISS, failure=FailureClass.MODEL_TRUNCATION, reason="max_tokens reached",
                   text=text[:40], stop_reason="max_tokens", model="claude-sonnet-4-6", usage=usage)
    bad = Outcome(status=Status.QUARANTINED, failure=FailureClass.INVALID_REQUEST, reason="invalid request",
                  error_type="invalid_request_error", error_message="messages: text content blocks must be non-empty")
    retry = Outcome(status=Status.RETRY, failure=FailureClass.INFRA_TRANSIENT, reason="transient server error",
                    error_type="api_error", error_message="Internal server error")
    first, second = [], []
    for i in range(n):
        k = i % 100
        o = miss if k < 2 else bad if k < 3 else retry if k < 5 else ok
        first.append(OutcomeRow(custom_id=cid(i), outcome=o, route="batch", at=1.0, sub_id=1 + i // 8000,
                                batch_id=f"msgbatch_{i // 8000:04d}"))
        if o is retry:
            second.append(OutcomeRow(custom_id=cid(i), outcome=ok, route="batch", at=2.0, sub_id=10_000,
                                     batch_id="msgbatch_again"))
    store.record_outcomes(first)
    store.record_outcomes(second)
    store.close()

if mode == "build":
    build()
    sys.exit(0)
if mode == "migrate":
    t = time.perf_counter()
    Store.open(state).close()
    print(json.dumps({"migrate": time.perf_counter() - t}))
    sys.exit(0)

items = Items.of(
    Item(id=f"item{i}", line=i + 1, messages_json=b"[]", metadata_json=b'{"split": "dev", "n": %d}' % i if i % 3 == 0 else None,
         custom_id=cid(i))
    for i in range(n)
)
from adapters.files.output import write_output
store = Store.open(state)
out = Path(state).parent / "out.jsonl"
got = {}
if mode in ("write", "all"):
    for _ in range(repeat):
        t = time.perf_counter()
        w = write_output(store, items, out, keep=False)
        got["write"] = time.perf_counter() - t
    got["counts_seen"] = w.counts
if mode == "all":
    t = time.perf_counter()
    for _ in store.latest():
        pass
    got["latest"] = time.perf_counter() - t
    t = time.perf_counter()
    store.counts()
    got["counts"] = time.perf_counter() - t
store.close()
print(json.dumps(got))
"""


def python_of(root: Path) -> str:
    return str(root / ".venv" / "bin" / "python")


def child(root: Path, state: Path, n: int, mode: str, repeat: int = 1, prefix: tuple[str, ...] = ()) -> dict:
    proc = subprocess.run(
        [*prefix, python_of(root), "-c", CHILD, str(root), str(state), str(n), mode, str(repeat)],
        cwd=root,
        check=False,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{root}: {mode} failed:\n{proc.stderr}")
    lines = proc.stdout.strip().splitlines()
    return json.loads(lines[-1]) if lines else {}


def instructions(root: Path, state: Path, n: int, repeat: int, tmp: Path) -> int:
    """Instructions (callgrind's Ir) of a whole `write` child doing `repeat` writes."""
    out = tmp / f"cg.{os.getpid()}.{repeat}.out"
    child(
        root,
        state,
        n,
        "write",
        repeat,
        prefix=("valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"),
    )
    for line in out.read_text().splitlines():
        if line.startswith("summary:") or line.startswith("totals:"):
            total = int(line.split()[1])
    out.unlink()
    return total


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 90_000])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--root", type=Path, help="another checkout of judgecore (its .venv), measured alongside")
    ap.add_argument("--callgrind", action="store_true", help="also count one write's instructions per item")
    ap.add_argument("--migrate", action="store_true", help="time this checkout's open of --root's checkpoint")
    ns = ap.parse_args()
    roots = {"this": ROOT}
    if ns.root is not None:
        roots["root"] = ns.root.resolve()
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        for n in ns.sizes:
            states = {}
            for name, root in roots.items():
                states[name] = tmp / f"{name}-{n}" / "state"
                states[name].parent.mkdir()
                child(root, states[name], n, "build")
            times: dict[str, dict[str, list[float]]] = {name: {} for name in roots}
            seen = {}
            for _ in range(ns.rounds):
                for name, root in roots.items():
                    got = child(root, states[name], n, "all")
                    seen[name] = got.pop("counts_seen")
                    for k, v in got.items():
                        times[name].setdefault(k, []).append(v)
            print(f"{n:,} items ({ns.rounds} rounds, medians):")
            for name, root in roots.items():
                parts = ", ".join(
                    f"{k} {statistics.median(v):.3f} s ({1e6 * statistics.median(v) / n:.1f} us/item)"
                    for k, v in times[name].items()
                )
                print(f"  {name:<5} {parts}   [{root}]")
            if len(roots) == 2:
                ratios = ", ".join(
                    f"{k} {statistics.median(times['this'][k]) / statistics.median(times['root'][k]):.2f}x"
                    for k in times["this"]
                )
                print(f"  this / root: {ratios}")
                if seen["this"] != seen["root"]:
                    print(f"  COUNTS DIFFER: {seen}")
                same = (states["this"].parent / "out.jsonl").read_bytes() == (
                    states["root"].parent / "out.jsonl"
                ).read_bytes()
                print(f"  output files byte-identical: {same}")
            if ns.callgrind:
                for name, root in roots.items():
                    one = instructions(root, states[name], n, 1, tmp)
                    two = instructions(root, states[name], n, 2, tmp)
                    print(
                        f"  {name:<5} callgrind: one warm write_output {(two - one) / n:,.0f} instructions per item"
                    )
            if ns.migrate and "root" in roots:
                old = tmp / f"migrate-{n}" / "state"
                shutil.copytree(states["root"], old)
                got = child(ROOT, old, n, "migrate")
                print(f"  first writable open of root's checkpoint by this checkout: {got['migrate']:.3f} s")
                shutil.rmtree(old.parent)
            for name in roots:
                shutil.rmtree(states[name].parent)


if __name__ == "__main__":
    main()
