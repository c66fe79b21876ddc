"""The simulator in its own process, for benches: `python -m adapters.cli simulator --lazy-batches` on a
free loopback port, so its CPU and memory are neither the measured client's nor the bench's own.

    with sim_process(python, root, "--seed", "1", "--batch-seconds", "1") as sim:
        ... sim.base_url ...; sim.stats()["requests"]; sim.cpu()
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson


class SimProcess:
    """A running simulator process: its base URL, its counters, its CPU seconds and peak RSS so far."""

    def __init__(self, proc: subprocess.Popen[str], base_url: str) -> None:
        self.proc = proc
        self.base_url = base_url

    def stats(self) -> dict[str, Any]:
        """`requests` handled and `batches` created (read from its `/_sim/stats`, which counts as neither)."""
        with urllib.request.urlopen(self.base_url + "/_sim/stats", timeout=30) as r:
            return orjson.loads(r.read())

    def cpu(self) -> float:
        """User + system CPU seconds so far."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self) -> float:
        """Peak resident set so far (VmHWM)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")


@contextlib.contextmanager
def sim_process(python: str, root: Path, *args: str) -> Iterator[SimProcess]:
    """Start `judgecore simulator --port 0 --lazy-batches ARGS` from `root` (this checkout's simulator
    serves every client alike); stopped when the block exits."""
    cmd = [python, "-m", "adapters.cli", "simulator", "--port", "0", "--lazy-batches", *args]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "OPENAI_"))}
    # Two malloc arenas, not glibc's 8 a core: each create's body is parsed in its connection's thread,
    # and freed memory left in a dozen arenas was most of the simulator's peak (a 200,000-item job:
    # 621 MB, 278 MB with two; the same CPU).
    env.setdefault("MALLOC_ARENA_MAX", "2")
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line.startswith("simulator listening on "):
            raise SystemExit(f"the simulator did not start: {line!r}")
        yield SimProcess(proc, line.split()[-1])
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
