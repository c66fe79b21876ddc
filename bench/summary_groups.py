"""`judgecore summary --by KEY` at many groups: text, `--json` and `--html`, wall time and peak memory.

    uv run python bench/summary_groups.py                                # 20,000 items over 10,000 groups
    uv run python bench/summary_groups.py --items 20000 --groups 3000 20 --rounds 3
    uv run python bench/summary_groups.py --root /work/main              # another checkout instead

For each checkout (this one, or each `--root` given) and each group count, a finished job's checkpoint is
built by that checkout's own code (its `.venv`, outside the measured process): N items, their answers
`{"score": k}` (k on the 1-5 scale a schema verdict spec declares, `minimum` 1 and `maximum` 5), 2% a
truncation miss, each item's metadata `{"uid": "u00042"}` spread over G groups
(so most groups hold two items: the case whose t interval reaches far past the scale). Then, round after
round, one fresh process per measurement runs `python -m adapters summary --state DIR --by uid` with
nothing, `--json` or `--html FILE`, and its wall time and peak RSS (the child's `ru_maxrss`, from
`wait4`) are kept, and its CPU time (user + system, from the same `rusage`: on a machine other jobs
load, the wall time grows with them and the CPU time much less). A run past `--timeout` seconds or `--max-rss` MB is killed and reported as such
(the summary before issue 37 printed every pair of groups: 50 million at 10,000 groups).

Printed: per checkout, group count and mode, the median wall time, CPU time and peak RSS over the
rounds, and the output's size.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# Run in the measured checkout, as `python -c BUILD ROOT STATE N G`: the checkpoint of a finished job.
BUILD = r"""
import sys
root, state, n, g = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
import orjson
from adapters.checkpoint.store import OutcomeRow, Store
from judgecore.results.outcomes import FailureClass, Outcome, Status, Usage

def cid(i): return f"item-{i:07d}-bench"

store = Store.open(state)
store.bind_job({"model": "claude-sonnet-4-6", "bench": "summary_groups"},
               ((cid(i), f"item{i}", "d") for i in range(n)))
schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}},
          "required": ["score"], "additionalProperties": False}
store.set_meta("verdict", {"schema": schema, "score": "score"})
store.set_meta("route", {"path": "sync", "reason": "bench"})
store.record_metadata((cid(i), orjson.dumps({"uid": f"u{i % g:05d}"})) for i in range(n))
usage = Usage(input_tokens=400, output_tokens=20, cache_creation_input_tokens=0, cache_read_input_tokens=0)
rows = []
for i in range(n):
    score = 1 + ((i * 2654435761) >> 13) % 5  # a scrambled 1-5: groups of unlike means
    if i % 50 == 49:
        o = Outcome(status=Status.MISS, failure=FailureClass.MODEL_TRUNCATION, reason="max_tokens reached",
                    text='{"sco', stop_reason="max_tokens", model="claude-sonnet-4-6", usage=usage)
    else:
        o = Outcome(status=Status.SUCCEEDED, failure=None, reason="succeeded", text='{"score": %d}' % score,
                    stop_reason="end_turn", model="claude-sonnet-4-6", usage=usage)
    rows.append(OutcomeRow(custom_id=cid(i), outcome=o, route="sync", at=1_700_000_000.0 + i * 0.01))
store.record_outcomes(rows)
store.close()
"""

MODES = ("text", "json", "html")


def python_of(root: Path) -> str:
    return str(root / ".venv" / "bin" / "python")


def build(root: Path, state: Path, n: int, g: int) -> None:
    proc = subprocess.run(
        [python_of(root), "-c", BUILD, str(root), str(state), str(n), str(g)],
        cwd=root,
        check=False,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{root}: building the checkpoint failed:\n{proc.stderr}")


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def measure(root: Path, state: Path, mode: str, tmp: Path, timeout: float, max_rss: float) -> dict:
    """One fresh process: (wall seconds, peak RSS MB, output bytes, why it was killed or None)."""
    out = tmp / "out.txt"
    html = tmp / "report.html"
    html.unlink(missing_ok=True)
    args = [python_of(root), "-m", "adapters", "summary", "--state", str(state), "--by", "uid"]
    args += {"text": [], "json": ["--json"], "html": ["--html", str(html)]}[mode]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "JUDGECORE_"))}
    killed: list[str] = []
    with out.open("wb") as sink:
        t = time.perf_counter()
        proc = subprocess.Popen(args, cwd=root, stdout=sink, stderr=subprocess.DEVNULL, env=env)

        done = threading.Event()

        def watch() -> None:  # the machine is shared: a run that would eat it is stopped
            while not done.is_set():  # never `proc.poll()`: it would reap the child before `wait4`
                if time.perf_counter() - t > timeout:
                    killed.append(f"killed after {timeout:.0f} s")
                elif _rss_mb(proc.pid) > max_rss:
                    killed.append(f"killed above {max_rss:,.0f} MB")
                if killed:
                    os.kill(proc.pid, signal.SIGKILL)  # not `send_signal`: it polls too
                    return
                time.sleep(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        done.set()
        proc.returncode = os.waitstatus_to_exitcode(status)
        watcher.join()
    size = html.stat().st_size if mode == "html" and html.exists() else out.stat().st_size
    if not killed and proc.returncode != 0:
        killed.append(f"exit {proc.returncode}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,
        "bytes": size,
        "killed": killed[0] if killed else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--items", type=int, default=20_000)
    ap.add_argument("--groups", type=int, nargs="+", default=[10_000])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES))
    ap.add_argument(
        "--root",
        type=Path,
        action="append",
        default=[],
        help="measure this checkout (its .venv) instead of this one; repeat for several, alternated",
    )
    ap.add_argument("--timeout", type=float, default=180.0, help="seconds before a run is killed")
    ap.add_argument("--max-rss", type=float, default=4096.0, help="MB of RSS before a run is killed")
    a = ap.parse_args()
    roots = [r.resolve() for r in a.root] or [ROOT]
    tmp = Path(tempfile.mkdtemp(prefix="bench-summary-groups-"))
    try:
        for g in a.groups:
            states = {}
            for root in roots:
                states[root] = tmp / f"{root.name}-{g}" / "state"
                build(root, states[root], a.items, g)
            for mode in a.modes:
                got: dict[Path, list[dict]] = {root: [] for root in roots}
                for _ in range(a.rounds):  # checkouts alternated, so the machine's load falls on them alike
                    for root in roots:
                        if got[root] and got[root][-1]["killed"]:
                            continue  # killed once: not again
                        got[root].append(measure(root, states[root], mode, tmp, a.timeout, a.max_rss))
                for root in roots:
                    runs = got[root]
                    wall = statistics.median(r["wall"] for r in runs)
                    rss = statistics.median(r["rss"] for r in runs)
                    cpu = statistics.median(r["cpu"] for r in runs)
                    killed = next((r["killed"] for r in runs if r["killed"]), None)
                    print(
                        f"{root.name:<16} {a.items:>7,} items {g:>6,} groups  {mode:<5} "
                        f"wall {wall:7.2f} s  cpu {cpu:6.2f} s  peak RSS {rss:7.0f} MB  output {runs[-1]['bytes'] / 1e3:9,.0f} KB"
                        f"  ({len(runs)} round{'s' if len(runs) > 1 else ''})"
                        + (f"  {killed}" if killed else ""),
                        flush=True,
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
