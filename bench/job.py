"""A whole batch job as a separate process, against the simulator: CPU per 1,000 items, peak memory,
a no-op rerun of the finished job, and the start-up of the small commands.

    uv run python bench/job.py                       # 20,000, 90,000 and 180,000 items
    uv run python bench/job.py --sizes 90000 --reruns 3
    uv run python bench/job.py --root OTHER_CHECKOUT  # the same, for another checkout (its .venv)
    uv run python bench/job.py --prompt-bytes 2000 --sizes 20000 90000 --no-small  # judge-sized prompts
    uv run python bench/job.py --samples 3 --sizes 20000 --no-small  # a --samples 3 job against one sample
    uv run python bench/job.py --sizes 90000 1000000 --no-small  # issue 42: a million items end to end
    uv run python bench/job.py --dry-run --sizes 1000000 10000000   # the plan alone, its time and memory

Each job is `judgecore run` (the real SDK over loopback HTTP; one probe on the sync path, the rest in
sub-batches) against this checkout's simulator in its own process (`bench/simproc.py`, lazy batches),
fast batches (1 s), polls every 0.2 s; its CPU is the child's user + system time (the simulator's is
printed apart), and each job's exit status and its items by status are printed. Targets (issue 11):
<= 0.25 CPU s per 1,000 items and <= 300 MB peak RSS at 90,000 (CPU linear, memory flat past the
sub-batches in flight); a no-op rerun of the final 90,000-item job <= 1.5 s wall; `--help`, `status`
and a 10-item `--dry-run` <= 0.3 s each. Issue 21: a no-op rerun's wall time flat in N. Once every
size's job is done, their reruns alternate (`--reruns` rounds), and the largest size's is within 1.2x
of the smallest's (median of the rounds' ratios).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))

from simproc import SimProcess, sim_process  # noqa: E402

#: The simulator every job runs against: its own process (this checkout's), lazy batches, seed 1, 1 s.
SIM_ARGS = ("--seed", "1", "--batch-seconds", "1")


def start_sim(stack: contextlib.ExitStack) -> SimProcess:
    """This checkout's simulator in its own process, until `stack` closes."""
    return stack.enter_context(sim_process(str(ROOT / ".venv" / "bin" / "python"), ROOT, *SIM_ARGS))


RUBRIC = "Score the answer from 0 to 10 for correctness and clarity.\n" * 40


# Measures one child from a small process: a child forked from this process (which holds the
# simulator, hundreds of MB after a big job) would count the pages it shares with it before `exec`
# in its peak RSS.
_MEASURE = """
import os, subprocess, sys, time
t0 = time.perf_counter()
with open(sys.argv[1], "wb") as out, open(sys.argv[2], "wb") as err:
    code = subprocess.call(sys.argv[3:], stdout=out, stderr=err)
wall = time.perf_counter() - t0
import resource
u = resource.getrusage(resource.RUSAGE_CHILDREN)
print(code, wall, u.ru_utime + u.ru_stime, u.ru_maxrss)
"""


# `--trace`: the child under tracemalloc, a thread sampling the traced size every 20 ms; at each new
# high (3% over the last), a snapshot and the main thread's stack. At exit, stderr gets where the peak
# was and the top allocations (by line) of the snapshot nearest it.
_TRACE = """
import runpy, sys, threading, time, traceback, tracemalloc
tracemalloc.start(1)
main = threading.main_thread().ident
best = {"cur": 0, "snap": None, "stack": [], "at": 0.0}
t0 = time.perf_counter()
def sample():
    while True:
        time.sleep(0.02)
        cur, _ = tracemalloc.get_traced_memory()
        if cur > best["cur"] * 1.03:
            frame = sys._current_frames().get(main)
            # lines looked up at exit: linecache would hold every source file read meanwhile
            stack = traceback.StackSummary.extract(traceback.walk_stack(frame), limit=12, lookup_lines=False)
            best.update(cur=cur, snap=tracemalloc.take_snapshot(), stack=stack, at=time.perf_counter() - t0)
threading.Thread(target=sample, daemon=True).start()
def report():
    _, peak = tracemalloc.get_traced_memory()
    out = sys.__stderr__
    print(f"TRACE peak {peak / 2**20:.1f} MiB; nearest snapshot {best['cur'] / 2**20:.1f} MiB at "
          f"{best['at']:.1f} s, in:", file=out)
    print("".join(reversed(traceback.StackSummary.format(best["stack"]))) if best["stack"] else "", file=out)
    if best["snap"] is not None:
        for st in best["snap"].statistics("lineno")[:15]:
            print(f"TRACE {st.size / 2**20:7.1f} MiB {st.count:>9,} blocks  {st.traceback[0]}", file=out)
import os
_exit = os._exit
def exit_after_report(code):  # the command ends with os._exit, which runs no atexit hook
    report()
    _exit(code)
os._exit = exit_after_report
sys.argv = ["judgecore", *sys.argv[1:]]
runpy.run_module("adapters.cli", run_name="__main__")
"""


def run(
    python: str,
    root: Path,
    args: list[str],
    env: dict[str, str],
    module: str | None = "adapters.cli",
    keep_err: bool = False,
) -> dict[str, Any]:
    """One `judgecore` process (`python -m module args`, or `python args` when `module` is None): wall,
    CPU (user + system) and its own peak RSS (`keep_err`: and the `--trace` lines of its stderr)."""
    head = [python, "-m", module] if module is not None else [python]
    err_text = ""
    with tempfile.TemporaryDirectory() as tmp:
        out, err = Path(tmp) / "out", Path(tmp) / "err"
        res = subprocess.run(
            [sys.executable, "-c", _MEASURE, out, err, *head, *args],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        code, wall, cpu, rss = res.stdout.split()
        if int(code) not in (0, 3):
            raise SystemExit(f"{args[0]} failed ({code}): {err.read_text()[-2000:]}")
        if keep_err:
            err_text = "".join(ln for ln in err.read_text().splitlines(True) if ln.startswith(("TRACE", " ")))
    return {
        "wall": float(wall),
        "cpu": float(cpu),
        "rss_mb": int(rss) / 1024,
        "err": err_text,
        "code": int(code),
    }


def write_items(path: Path, n: int, prompt_bytes: int = 0) -> None:
    """n items; each prompt padded to about `prompt_bytes` (a judge prompt carries the completion it
    grades: a few KB is usual), or a one-line prompt."""
    pad = "The completion under review says the sky is blue because of Rayleigh scattering. "
    with path.open("wb") as f:
        for i in range(n):
            prompt = f"Grade answer {i}: the sky is blue."
            if prompt_bytes > len(prompt):
                prompt += (pad * (1 + prompt_bytes // len(pad)))[: prompt_bytes - len(prompt)]
            f.write(orjson.dumps({"id": f"item-{i}", "prompt": prompt}) + b"\n")


def job(
    python: str,
    root: Path,
    n: int,
    reruns: int,
    prompt_bytes: int = 0,
    samples: int = 1,
    trace: bool = False,
    keep: contextlib.ExitStack | None = None,
) -> dict[str, Any]:
    """One job of `n` items, then `reruns` no-op reruns of it. With `keep`, its simulator and files
    stay up until `keep` closes, and the result's `rerun` times one more no-op rerun of it (for
    `alternate_reruns`)."""
    with contextlib.ExitStack() as own:
        stack = keep if keep is not None else own
        tmp = stack.enter_context(tempfile.TemporaryDirectory())
        srv = start_sim(stack)
        items, rubric, state = Path(tmp) / "items.jsonl", Path(tmp) / "rubric.txt", Path(tmp) / "s"
        write_items(items, n, prompt_bytes)
        rubric.write_text(RUBRIC)
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=srv.base_url, ANTHROPIC_API_KEY="sk-bench")
        args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--poll-interval", "0.2"]
        if samples > 1:
            args += ["--samples", str(samples)]
        if trace:  # the first run only, under tracemalloc (its CPU and RSS are not the job's)
            traced = run(python, root, ["-c", _TRACE, *args], env, module=None, keep_err=True)
            print(traced["err"], end="")
            return traced
        sim_cpu = srv.cpu()
        first = run(python, root, args, env)
        sim_cpu = srv.cpu() - sim_cpu
        sent = srv.stats()["requests"]
        status = subprocess.run(
            [python, "-m", "adapters.cli", "status", "--state", str(state), "--json"],
            cwd=root,
            env=env,
            capture_output=True,
            check=False,
        )
        counts = orjson.loads(status.stdout).get("counts", {}) if status.stdout else {}
        # The job leaves its checkpoint and output (about 1.1 GB at 720,000 items) in the page cache,
        # dirty: flushed now, the kernel's writeback of them does not fall on the reruns timed next
        # (which read neither).
        os.sync()
        again = [run(python, root, args, env) for _ in range(reruns)]
        assert sent == srv.stats()["requests"], "a rerun of a finished job sent something"

        def rerun() -> float:
            wall = run(python, root, args, env)["wall"]
            assert sent == srv.stats()["requests"], "a rerun of a finished job sent something"
            return wall

        return {
            "cpu": first["cpu"],
            "rss_mb": first["rss_mb"],
            "wall": first["wall"],
            "rerun_wall": statistics.median(r["wall"] for r in again) if again else float("nan"),
            "rerun_rss_mb": max((r["rss_mb"] for r in again), default=float("nan")),
            "batches": srv.stats()["batches"],
            "rerun": rerun,
            "code": first["code"],
            "counts": counts,
            "sim_cpu": sim_cpu,
            "sim_rss_mb": srv.rss_mb(),
        }


def alternate_reruns(jobs: dict[int, Callable[[], float]], rounds: int) -> dict[int, list[float]]:
    """No-op reruns of finished jobs (by size), one of each in turn, `rounds` times: the machine's
    load falls on every size alike, which timing each size's reruns right after its job does not."""
    walls: dict[int, list[float]] = {n: [] for n in jobs}
    for _ in range(rounds):
        for n, rerun in jobs.items():
            walls[n].append(rerun())
    return walls


def small_commands(python: str, root: Path, runs: int = 5) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as tmp:
        items = Path(tmp) / "ten.jsonl"
        write_items(items, 10)
        state = Path(tmp) / "s"
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        # a checkpoint for `status`: a dry run writes none, so bind one by hand through the store
        subprocess.run(
            [
                python,
                "-c",
                f"from adapters.checkpoint.store import Store; s = Store.open({str(state)!r}); s.close()",
            ],
            cwd=root,
            check=True,
        )
        cmds = {
            "--help": ["--help"],
            "status": ["status", "--state", str(state)],
            "dry-run (10 items)": ["run", str(items), "--state", str(Path(tmp) / "none"), "--dry-run"],
        }
        return {
            name: statistics.median(run(python, root, args, env)["wall"] for _ in range(runs))
            for name, args in cmds.items()
        }


def dry_runs(root: Path, sizes: list[int], prompt_bytes: int) -> None:
    """A `judgecore run --dry-run` of each size, as a whole process: its wall, CPU and peak RSS."""
    python = str(root / ".venv" / "bin" / "python")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    peaks: list[tuple[int, float]] = []
    print(f"judgecore --dry-run, whole process, {root}")
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            items, rubric = Path(tmp) / "items.jsonl", Path(tmp) / "rubric.txt"
            write_items(items, n, prompt_bytes)
            rubric.write_text(RUBRIC)
            args = ["run", str(items), "--state", str(Path(tmp) / "s"), "--rubric", str(rubric), "--dry-run"]
            r = run(python, root, args, env)
        peaks.append((n, r["rss_mb"]))
        print(
            f"  {n:>10,} items: {r['wall']:6.1f} s wall, {r['cpu']:6.1f} CPU s "
            f"({r['cpu'] / n * 1e6:.1f} us an item), peak RSS {r['rss_mb']:,.0f} MB, exit {r['code']}"
        )
    for (n0, m0), (n1, m1) in itertools.pairwise(peaks):
        print(
            f"  peak RSS growth {n0:,} -> {n1:,} items: {m1 - m0:+,.0f} MB, "
            f"{(m1 - m0) * 1024 / (n1 - n0):.4f} KB an item (flat: 0)"
        )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[20_000, 90_000, 180_000])
    ap.add_argument("--reruns", type=int, default=3, help="no-op reruns timed after each job")
    ap.add_argument("--root", type=Path, default=ROOT, help="the checkout to measure (its .venv)")
    ap.add_argument("--prompt-bytes", type=int, default=0, help="pad each prompt to about this many bytes")
    ap.add_argument("--no-small", action="store_true", help="skip the small commands' start-up")
    ap.add_argument(
        "--samples",
        type=int,
        default=1,
        metavar="K",
        help="also run each size as a --samples K job, alternating with the one-sample job "
        "(--repeats times), and print the medians' CPU ratio (target for K=3: <= 3.3x)",
    )
    ap.add_argument("--repeats", type=int, default=3, help="runs of each job for --samples (median)")
    ap.add_argument(
        "--dry-run",
        action="store_true",
        help="only a `--dry-run` of each size (no simulator): wall, CPU, peak RSS and its growth per item "
        "(issue 42: 10,000,000 items planned in flat memory)",
    )
    ap.add_argument(
        "--trace",
        action="store_true",
        help="run each size's job once under tracemalloc: where its traced peak is, and the top "
        "allocations (by line) nearest it (slow; no timing, no reruns)",
    )
    ns = ap.parse_args()
    if ns.dry_run:
        dry_runs(ns.root.resolve(), ns.sizes, ns.prompt_bytes)
        return
    if ns.samples > 1:
        root = ns.root.resolve()
        python = str(root / ".venv" / "bin" / "python")
        print(f"judgecore --samples {ns.samples} against one sample, {root}")
        for n in ns.sizes:
            one: list[float] = []
            many: list[float] = []
            for _ in range(ns.repeats):  # alternated, so load on the machine falls on both alike
                one.append(job(python, root, n, 0, ns.prompt_bytes)["cpu"])
                many.append(job(python, root, n, 0, ns.prompt_bytes, samples=ns.samples)["cpu"])
            m1, mk = statistics.median(one), statistics.median(many)
            print(
                f"  {n:>7,} items: one sample {m1:6.2f} CPU s ({n:,} requests), --samples {ns.samples} "
                f"{mk:6.2f} CPU s ({n * ns.samples:,} requests): {mk / m1:.2f}x "
                f"(medians of {ns.repeats}; target <= {1.1 * ns.samples:.1f}x)"
            )
        return
    root = ns.root.resolve()
    python = str(root / ".venv" / "bin" / "python")
    print(f"judgecore whole-process bench of {root}")
    for name, wall in ({} if ns.no_small else small_commands(python, root)).items():
        print(f"  {name:<20} {wall:6.3f} s wall (median of 5; target <= 0.3 s)")
    if ns.trace:
        for n in ns.sizes:
            print(f"  {n:,} items, under tracemalloc:")
            job(python, root, n, 0, ns.prompt_bytes, trace=True)
        return
    peaks: list[tuple[int, float]] = []
    keep = contextlib.ExitStack()
    finished: dict[int, Callable[[], float]] = {}
    for n in ns.sizes:
        r = job(python, root, n, ns.reruns, ns.prompt_bytes, keep=keep)
        peaks.append((n, r["rss_mb"]))
        finished[n] = r["rerun"]
        per_k = r["cpu"] / (n / 1000)
        print(
            f"  {n:>7,} items: {r['cpu']:6.1f} CPU s = {per_k:.3f} per 1,000 (target <= 0.25), "
            f"peak RSS {r['rss_mb']:,.0f} MB (target <= 300), wall {r['wall']:.1f} s, "
            f"{r['batches']} sub-batches; no-op rerun {r['rerun_wall']:.2f} s wall "
            f"(median of {ns.reruns}; target <= 1.5 s), {r['rerun_rss_mb']:,.0f} MB"
        )
        print(
            f"           exit {r['code']}, items by status {r['counts']}; {n / r['cpu']:,.0f} items per "
            f"judgecore CPU s; the simulator (its own process): {r['sim_cpu']:.1f} CPU s over the job, "
            f"peak RSS {r['sim_rss_mb']:,.0f} MB"
        )

    with keep:
        if len(finished) > 1 and ns.reruns:
            walls = alternate_reruns(finished, ns.reruns)
            small, large = min(walls), max(walls)
            ratio = statistics.median(b / a for a, b in zip(walls[small], walls[large], strict=True))
            print(
                f"  no-op reruns alternated ({ns.reruns} rounds): {large:,} items "
                f"{statistics.median(walls[large]):.3f} s, {small:,} items {statistics.median(walls[small]):.3f} s "
                f"wall (medians): {ratio:.2f}x (median ratio; target <= 1.2x)"
            )
    for (n0, m0), (n1, m1) in itertools.pairwise(peaks):
        print(
            f"  peak RSS growth {n0:,} -> {n1:,} items: {m1 - m0:+,.0f} MB, "
            f"{(m1 - m0) * 1024 / ((n1 - n0) / 1000):,.0f} KB per 1,000 items (flat: 0)"
        )


if __name__ == "__main__":
    main()
