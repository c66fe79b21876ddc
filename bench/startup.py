"""Start-up time of a command: the median wall time over N fresh processes, and the modules it loads.

    uv run python bench/startup.py [-n 9] [--modules] -- judgecore run examples/completions.jsonl \
        --rubric examples/rubric.txt --state /tmp/x --dry-run

Each run is a new process with PYTHONDONTWRITEBYTECODE=1 (as a user's first run after an install with
compiled bytecode). With --modules the command runs once more under `python -X importtime` and the
modules it imported are listed with their cumulative microseconds, the heaviest first.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _argv(command: list[str]) -> list[str]:
    """The command as a process runs it: a console script is resolved on PATH (the venv's bin first)."""
    found = shutil.which(command[0])
    return [found or command[0], *command[1:]]


def wall_times(command: list[str], runs: int) -> list[float]:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            _argv(command), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
        )
        times.append(time.perf_counter() - start)
    return times


def imported_modules(command: list[str]) -> list[tuple[str, int]]:
    """(module, cumulative us) for every module the command imports, from `-X importtime`."""
    argv = _argv(command)
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPROFILEIMPORTTIME": "1"}
    script = argv[0]
    with Path(script).open("rb") as handle:
        is_python_script = handle.read(2) == b"#!"
    full = [sys.executable, script, *argv[1:]] if is_python_script else argv
    done = subprocess.run(full, env=env, capture_output=True, text=True, check=False)
    found = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _self_us, cumulative, name = line.removeprefix("import time:").split("|")
        found.append((name.rstrip(), int(cumulative)))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=9, help="runs (default 9)")
    parser.add_argument("--modules", action="store_true", help="list the imported modules")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = [part for part in args.command if part != "--"] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    times = wall_times(command, args.n)
    print(
        f"median wall {statistics.median(times) * 1000:.1f} ms over {args.n} runs "
        f"(min {min(times) * 1000:.1f}, max {max(times) * 1000:.1f})"
    )
    if args.modules:
        modules = imported_modules(command)
        print(f"{len(modules)} modules imported")
        for name, cumulative in sorted(modules, key=lambda pair: -pair[1]):
            print(f"{cumulative:>9} us  {name}")


if __name__ == "__main__":
    main()
