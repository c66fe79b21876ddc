"""A 1,000,000-row Parquet input planned with `judgecore run --dry-run --json`, in bounded memory.

    uv run python bench/parquet_plan.py            # 1,000,000 rows
    uv run python bench/parquet_plan.py --n 200000

The Parquet reader streams (`adapters.files.readers`: `BATCH_ROWS` rows converted to Python at a time), so
a plan of a Parquet file should hold what a plan of the same rows as JSON Lines holds (each item's id,
custom_id, size and metadata bytes: the job's columns), whatever the file's size. The bench writes the
same rows both ways, plans each in a fresh process, and prints each process's peak RSS beside the
size of the rows as JSONL. Not a timed test: the wall times are printed for information only.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 50_000

# The CLI in this process, then the process's own peak RSS (KiB on Linux) on stderr's last line.
MEASURED = """
import resource, runpy, sys
try:
    runpy.run_module("adapters.cli", run_name="__main__", alter_sys=True)
except SystemExit as exc:
    code = exc.code
else:
    code = 0
print(f"maxrss_kib={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}", file=sys.stderr)
sys.exit(code)
"""


def columns(start: int, n: int) -> dict[str, list[object]]:
    ks = range(start, start + n)
    return {
        "id": [f"q{k:07d}-s{k % 7}" for k in ks],
        "prompt": [f"Question {k}: " + "why is the sky blue? " * (1 + k % 12) for k in ks],
        "model": [("alpha", "beta", "gamma")[k % 3] for k in ks],
        "gold": [1 + k % 5 for k in ks],
    }


def write_both(parquet: Path, jsonl: Path, n: int) -> None:
    writer = None
    with jsonl.open("wb") as f:
        for start in range(0, n, CHUNK):
            cols = columns(start, min(CHUNK, n - start))
            table = pa.table(cols)
            if writer is None:
                writer = pq.ParquetWriter(parquet, table.schema)
            writer.write_table(table)
            for i, p, m, g in zip(cols["id"], cols["prompt"], cols["model"], cols["gold"], strict=True):
                f.write(orjson.dumps({"id": i, "prompt": p, "metadata": {"model": m, "gold": g}}) + b"\n")
    assert writer is not None
    writer.close()


def plan(path: Path) -> tuple[int, float, dict[str, object]]:
    """(peak RSS in KiB, wall seconds, the plan) of `judgecore run PATH --dry-run --json`."""
    t0 = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-c", MEASURED, "run", str(path), "--dry-run", "--json", "--force-batch"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.monotonic() - t0
    if res.returncode != 0:
        raise SystemExit(f"{path}: exit {res.returncode}\n{res.stderr}")
    rss = int(res.stderr.strip().splitlines()[-1].removeprefix("maxrss_kib="))
    return rss, wall, orjson.loads(res.stdout)


# What a reader that is not streaming would hold: the whole file as Python rows.
WHOLE = """
import resource, sys
import pyarrow.parquet as pq
rows = pq.read_table(sys.argv[1]).to_pylist()
print(len(rows), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def whole(path: Path) -> int:
    """Peak RSS in KiB of reading `path` whole into Python rows (no planning at all)."""
    res = subprocess.run([sys.executable, "-c", WHOLE, str(path)], capture_output=True, text=True, check=True)
    return int(res.stdout.split()[1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    n = ap.parse_args().n
    gaps = []
    for size in (n // 4, n):  # the Parquet reader's cost over JSONL's must not grow with the rows
        with tempfile.TemporaryDirectory() as tmp:
            parquet, jsonl = Path(tmp) / "items.parquet", Path(tmp) / "items.jsonl"
            write_both(parquet, jsonl, size)
            print(
                f"{size:,} rows: Parquet {parquet.stat().st_size / 1e6:,.1f} MB, "
                f"as JSONL {jsonl.stat().st_size / 1e6:,.1f} MB"
            )
            results, rss = {}, {}
            for name, path in (("parquet", parquet), ("jsonl", jsonl)):
                rss[name], wall, results[name] = plan(path)
                got = results[name]
                print(
                    f"{name:>9}: peak RSS {rss[name] / 1024:,.0f} MiB, {wall:,.1f} s, n={got['n']:,}, "
                    f"sub-batches {len(got['sub_batches'])}"
                )
            assert results["parquet"] == results["jsonl"], "the two plans differ"
            gaps.append((rss["parquet"] - rss["jsonl"]) / 1024)
            print(f"  the plans are identical; Parquet over JSONL: {gaps[-1]:+,.0f} MiB")
            print(
                f"  for scale, reading the file whole into Python rows alone: {whole(parquet) / 1024:,.0f} MiB"
            )
    print(f"Parquet's extra memory at {n // 4:,} and {n:,} rows: {gaps[0]:+,.0f} / {gaps[1]:+,.0f} MiB")


if __name__ == "__main__":
    main()
