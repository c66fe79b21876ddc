"""kill -9 anywhere on OpenAI's batch route (a real subprocess, the real `openai` SDK, real HTTP): between
the intent and the upload, the upload and the create, the create and its record, in the middle of the
output file's download and of the error file's. The rerun loses nothing, and uploads and creates
nothing twice (the simulator's own files and batches say so); it adopts its own batch, never another
job's."""

from __future__ import annotations

import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.checkpoint.store import DB_NAME, Store
from adapters.simulator.logic import Simulator
from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests import children
from tests.children import Child
from tests.integration.conftest import outcomes_so_far

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def child(base_url: str, state: Path, n: int, every_other: str = "") -> Child:
    args = [base_url, str(state), str(n), "25", every_other]
    return children.start("tests.batch.kill_child_openai", args, env=os.environ)


def _meta(state: Path, key: str) -> object:
    db = state / DB_NAME
    if not db.exists():
        return None
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            return row[0] if row else None
    except sqlite3.OperationalError:
        return None


def _intents(state: Path) -> int:
    db = state / DB_NAME
    if not db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            return conn.execute("SELECT COUNT(*) FROM sub_batches").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def _posted(sim: Simulator, path: str) -> bool:
    """The call is in the simulator's hands (held by its fault)."""
    return any(e.method == "POST" and e.path == path for e in sim.log)


def _kill_when(c: Child, ready: Callable[[], bool], within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline and c.poll() is None and not ready():
        time.sleep(0.02)
    assert c.poll() is None, c.stderr.read()
    assert ready()
    c.send_signal(signal.SIGKILL)
    c.wait(timeout=10)
    assert -signal.SIGKILL == c.returncode


def _uploads(sim: Simulator) -> list[str]:
    return [f.id for f in sim.openai.files.values() if f.purpose == "batch"]


def _rerun_and_check(sim: Simulator, base_url: str, state: Path, n: int, every_other: str = "") -> None:
    again = child(base_url, state, n, every_other)
    _out, err = again.communicate(timeout=60)
    calls = "\n".join(f"{e.time:.2f} {e.method} {e.path} {e.status} {e.fault}" for e in sim.log)
    assert 0 == again.returncode, err[-3000:] + "\n" + calls
    batches = [b for b in sim.openai.batches() if b.status != "failed"]
    assert 1 == len(_uploads(sim)), _uploads(sim)  # uploaded once
    assert 1 == len(batches)  # created once
    paid = Counter(c for b in batches for c in b.custom_ids)
    assert n == len(paid) and {1} == set(paid.values())
    store = Store.open(state)
    try:
        counts = store.counts()
    finally:
        store.close()
    assert 0 == counts["pending"] and n == counts["succeeded"] + counts["miss"]


N = 40


@pytest.mark.parametrize(
    ("where", "openai", "ready"),
    [
        # the intent is durable; the upload is held and made nothing
        ("intent-upload", {"upload_faults": {1: "stall"}}, lambda sim, st: _posted(sim, "/v1/files")),
        # the file exists; its answer (the file id) never came back
        (
            "upload-create",
            {"upload_faults": {1: "persist_then_stall"}},
            lambda sim, st: len(_uploads(sim)) == 1,
        ),
        # the file id is recorded; the create is held and made nothing
        (
            "upload-recorded",
            {"create_faults": {1: "stall"}},
            lambda sim, st: _meta(st, "upload:1") is not None,
        ),
        # the batch exists; its answer (the batch id) never came back
        (
            "create-record",
            {"create_faults": {1: "persist_then_stall"}},
            lambda sim, st: len(sim.openai.batches()) == 1,
        ),
    ],
)
def test_kill_9_between_any_two_durable_steps_uploads_and_creates_nothing_twice(
    tmp_path: Path, where: str, openai: dict, ready: Callable
) -> None:
    state = tmp_path / "state"
    sim = Simulator(Scenario(batch_seconds=0.25, create_stall_seconds=20.0, openai=OpenAIScenario(**openai)))
    with serve(sim) as server:
        first = child(server.base_url, state, N)
        _kill_when(first, lambda: ready(sim, state))
        assert _intents(state) == 1
        if where == "upload-recorded":
            assert _meta(state, "upload:1") is not None  # the file id was durable before the create
        _rerun_and_check(sim, server.base_url, state, N)


@pytest.mark.parametrize(("where", "every_other"), [("output file", ""), ("error file", "[[sim:context]]")])
def test_kill_9_mid_download_of_either_file_loses_nothing_and_resends_nothing(
    tmp_path: Path, where: str, every_other: str
) -> None:
    n = 400
    state = tmp_path / "state"
    sim = Simulator(Scenario(batch_seconds=0.25, results_chunk_lines=20, results_line_delay=0.05))
    # the output file holds every other line (200) when half go to the error file: kill past it
    at = 100 if not every_other else 260
    with serve(sim) as server:
        first = child(server.base_url, state, n, every_other)
        _kill_when(first, lambda: outcomes_so_far(state) >= at)
        assert outcomes_so_far(state) < n
        _rerun_and_check(sim, server.base_url, state, n, every_other)
        fetches = Counter(e.path for e in sim.log if e.path.endswith("/content"))
        assert max(fetches.values()) == 2  # the file cut by the kill was read again, by the same batch
        (batch,) = sim.openai.batches()
        if every_other:  # half the lines are in the error file, the one cut
            assert batch.error_file_id is not None
            assert 200 == len(sim.openai.file_bytes(batch.error_file_id).splitlines())
            assert 2 == fetches[f"/v1/files/{batch.error_file_id}/content"]


def test_a_resumed_run_adopts_its_own_batch_never_another_jobs(tmp_path: Path) -> None:
    """Another job's batch of the same size, made just before, named by its own tag: never adopted."""
    state, other = tmp_path / "state", tmp_path / "other"
    sim = Simulator(
        Scenario(
            batch_seconds=0.25,
            create_stall_seconds=20.0,
            openai=OpenAIScenario(create_faults={2: "persist_then_stall"}),
        )
    )
    with serve(sim) as server:
        done = child(server.base_url, other, N)  # another state dir: its own tag
        _out, err = done.communicate(timeout=60)
        assert 0 == done.returncode, err[-3000:]
        first = child(server.base_url, state, N)
        _kill_when(first, lambda: len(sim.openai.batches()) == 2)
        again = child(server.base_url, state, N)
        _out, err = again.communicate(timeout=60)
        assert 0 == again.returncode, err[-3000:]
        ours, theirs = sim.openai.batches()[1], sim.openai.batches()[0]
        assert ours.metadata and theirs.metadata
        assert ours.metadata["judgecore_job"] != theirs.metadata["judgecore_job"]
        assert 2 == len(sim.openai.batches())  # ours adopted, not made again; theirs left alone
    store = Store.open(state)
    try:
        rows = store.sub_batches()
    finally:
        store.close()
    assert [r.batch_id for r in rows] == [ours.id]
