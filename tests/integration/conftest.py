"""Integration fixtures: the simulator served over real loopback HTTP, and the CLI run against it.

The simulator lives in the test process, so its request log survives a kill -9 of the CLI and the
tests assert on exactly what was sent.
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import orjson
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests import children
from tests.children import Child

ROOT = Path(__file__).resolve().parents[2]


def cli_in_process(
    args: Sequence[str], *, env: dict[str, str], timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """`adapters.cli.main(args)` run to its end in this process as a child would run it: with exactly
    `env` as its environment, the clone as its working directory, and its own stdout and stderr,
    returned as a `CompletedProcess`. A run still going after `timeout` seconds fails the test."""
    from adapters.cli import main

    def hung(signum: int, frame: object) -> None:
        raise AssertionError(f"the CLI did not end within {timeout} s")

    saved_env, saved_cwd = dict(os.environ), Path.cwd()
    out, err = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(ROOT)
    previous = signal.signal(signal.SIGALRM, hung)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args))
            except SystemExit as exc:  # argparse's own errors
                code = exc.code if isinstance(exc.code, int) else 1 if exc.code else 0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)
    return subprocess.CompletedProcess(["judgecore", *args], code, out.getvalue(), err.getvalue())


class Served:
    def __init__(self, sim: Simulator, base_url: str) -> None:
        self.sim = sim
        self.base_url = base_url

    def env(self, key: str = "sk-test") -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
        env.update(ANTHROPIC_BASE_URL=self.base_url, ANTHROPIC_API_KEY=key, PYTHONUNBUFFERED="1")
        return env

    def cli(
        self, args: Sequence[str], *, key: str = "sk-test", timeout: float = 120, process: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """The CLI run to its end: in this process (`adapters.cli.main`, with the environment, working
        directory and standard streams it would have as a child), or, with `process=True`, in a child
        process (`spawn`), for a run that should not share this process's GIL with the simulator."""
        if not process:
            return cli_in_process(args, env=self.env(key), timeout=timeout)
        child = self.spawn(args, key=key)
        try:
            out, err = child.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            raise
        return subprocess.CompletedProcess(["judgecore", *args], child.wait(), out, err)

    def spawn(self, args: Sequence[str], *, key: str = "sk-test") -> Child:
        """The CLI in the background, as `python -m adapters.cli ARGS` in a process of its own (a fork
        of a server that has imported the SDK, see tests/children.py), with SIGINT handled as in a
        terminal's foreground job."""
        return children.start("adapters.cli", args, env=self.env(key), cwd=ROOT)

    def creates(self) -> list[tuple[str, ...]]:
        """custom_ids of every batch create the simulator persisted, in order."""
        return [b.custom_ids for b in self.sim.batches]

    def polls(self) -> int:
        """How many times the client has retrieved a batch (its poll loop is running)."""
        return sum(1 for e in self.sim.requests("GET") if e.batch_id is not None and e.path.count("/") == 4)

    def wait_for(self, predicate: Callable[[], bool], timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while not predicate():
            if time.monotonic() > deadline:
                raise AssertionError("condition not reached in time")
            time.sleep(0.02)


@pytest.fixture
def served() -> Iterator[Callable[[Scenario], Served]]:
    stack: list[object] = []

    def start(scenario: Scenario) -> Served:
        sim = Simulator(scenario)
        cm = serve(sim)
        handle = cm.__enter__()
        stack.append(cm)
        return Served(sim, handle.base_url)

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)  # type: ignore[attr-defined]


def python_c(code: str, args: Sequence[str], *, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ARGS...` run to its end in the clone with exactly `env` (a served simulator's,
    say), its output captured as text; a child still going after 120 s fails the test."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def write_items(path: Path, rows: Sequence[dict]) -> Path:
    with path.open("wb") as f:
        for row in rows:
            f.write(orjson.dumps(row) + b"\n")
    return path


def outcomes_so_far(state: Path) -> int:
    """How many outcomes a (possibly running) job's checkpoint holds, read-only: 0 before it exists or
    while it is locked."""
    from adapters.checkpoint.store import DB_NAME

    db = state / DB_NAME
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            return conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def read_output(path: Path) -> list[dict]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


RUBRIC = "You are a strict grader. Output 'Score: N' then one sentence of rationale.\n" * 60


def kept_ids_job(state_dir: Path) -> str | None:
    """The job key a state dir's custom_ids are derived with (`judgecore.job.ids.job_key`)."""
    from adapters.checkpoint.store import Store

    store = Store.open_readonly(state_dir)
    try:
        return store.ids_job
    finally:
        store.close()


# --- a panel across families: a graded-answers job and the environment both providers' clients read ----

PANEL_TEMPLATE = (
    "Question: {question}\nAnswer: {response}\nGrade the answer from 0 to 3. End with 'Score: N'.\n"
)


def panel_env(s: Served) -> dict[str, str]:
    """`s.env()` with OpenAI's base URL (the simulator's `/v1`) and key, and no served model's key."""
    env = s.env()
    env.update(OPENAI_BASE_URL=f"{s.base_url}/v1", OPENAI_API_KEY="sk-test")
    env.pop("SERVED_API_KEY", None)
    return env


def panel_job(tmp_path: Path, n: int, judges: Sequence[str], *extra: str, state: str = "state") -> list[str]:
    """`run` of `n` graded answers (a template and a `Score: N` verdict) by `judges`, in `tmp_path/state`."""
    rows = [{"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i)} for i in range(n)]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(PANEL_TEMPLATE)
    (tmp_path / "verdict.json").write_text(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}).decode())
    flags = [w for j in judges for w in ("--judge", j)]
    return [
        "run",
        str(items),
        "--state",
        str(tmp_path / state),
        "--template",
        str(tmp_path / "grade.txt"),
        "--verdict",
        str(tmp_path / "verdict.json"),
        *flags,
        *extra,
    ]
