"""The deadline's switch (CONTRACT.md "A deadline"), through the real SDK over HTTP against the
simulator, on a clock 100 times the wall's (`tests.integration.switching`): a batch that stalls is
canceled at the latest switch time, what it completed is harvested and never resent, the rest goes on
the sync route, one stderr line says so, every item is final by the deadline and keeps its true route;
a kill during the switch loses nothing and pays nothing twice."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import signal
import sqlite3
import time
from collections import Counter
from pathlib import Path

import orjson
import pytest

from adapters.simulator.answers import content_digest
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests import children
from tests.integration.conftest import cli_in_process, read_output, write_items
from tests.integration.switching import BASE, SPEED, ScaledClock, run_job

pytestmark = pytest.mark.integration

N = 12  # three sub-batches of four
DEADLINE = 900.0  # 15 simulated minutes: the latest switch time is about 12 minutes in
SWITCH_LINE = "deadline: switching to the sync route at"


def _items(tmp_path: Path) -> Path:
    return write_items(
        tmp_path / "items.jsonl", [{"id": f"i{k}", "prompt": f"question {k}"} for k in range(N)]
    )


def _stalled(**changes: object) -> Scenario:
    """Batches that never end on their own (processing a request every 1,400 / 4 simulated seconds:
    about half of each done at the switch); a cancel ends one 60 simulated seconds later."""
    base = {"seed": 7, "batch_seconds": 1_400.0, "never_end": True, "cancel_seconds": 60.0}
    return Scenario(**(base | changes))


def _sent(sim: Simulator) -> tuple[set[str], set[str], Counter[str]]:
    """By content digest: the requests batches answered, those they canceled, and the sync sends."""
    answered, canceled = set(), set()
    for b in sim.batches:
        assert b.results is not None, f"batch {b.id} never ended"
        by_id = {r["custom_id"]: r["result"]["type"] for r in b.results}
        for cid, params in zip(b.custom_ids, b.params, strict=True):
            (answered if by_id[cid] == "succeeded" else canceled).add(content_digest(params))
    synced = Counter(e.digest for e in sim.message_requests() if e.digest is not None)
    return answered, canceled, synced


def _deadline(state: Path) -> float:
    """The run's deadline as it resolved it at its start (the checkpoint's meta)."""
    from adapters.checkpoint.store import Store

    store = Store.open_readonly(state)
    try:
        assert store.deadline is not None
        return store.deadline
    finally:
        store.close()


def _run(srv_url: str, tmp_path: Path, clock: ScaledClock, deadline: float | None, progress=None):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        result = asyncio.run(
            run_job(
                srv_url,
                tmp_path / "s",
                tmp_path / "items.jsonl",
                tmp_path / "out.jsonl",
                clock,
                deadline,
                progress,
            )
        )
    return result, err.getvalue()


def test_a_stalled_batch_is_canceled_at_the_switch_its_answers_kept_and_the_rest_sent_sync(tmp_path):
    _items(tmp_path)
    clock = ScaledClock()
    sim = Simulator(_stalled(), clock=clock.now)
    with serve(sim) as server:
        result, err = _run(server.base_url, tmp_path, clock, DEADLINE)
    assert 0 == result.exit_code, err[-3000:]
    assert max(e.time for e in sim.log) <= _deadline(tmp_path / "s")  # every item final by the deadline
    assert 1 == sum(SWITCH_LINE in line for line in err.splitlines()), err[-3000:]
    line = next(line for line in err.splitlines() if SWITCH_LINE in line)
    assert "canceling 3 live batches" in line and "extra cost at most $" in line and "why: deadline" in line
    assert 3 == len(sim.batches)  # nothing created after the switch
    assert all(b.cancel_initiated_at is not None for b in sim.batches)
    answered, canceled, synced = _sent(sim)
    assert answered and canceled  # the switch came mid-batch: some answered, some not
    assert not answered & set(synced)  # what a canceled batch completed is never resent
    assert canceled == set(synced) and {1} == set(synced.values())  # the rest sent sync, once each
    assert len(answered) + len(synced) == len(sim.billed) == N  # nothing paid twice
    rows = read_output(tmp_path / "out.jsonl")
    assert ["succeeded"] * N == [r["status"] for r in rows]
    routes = Counter(r["route"] for r in rows)
    assert {"batch": len(answered), "sync": len(synced)} == dict(routes)  # each keeps its true route
    status = cli_in_process(["status", "--state", str(tmp_path / "s")], env=dict(os.environ))
    assert 1 == status.stdout.count("switched to the sync route at"), status.stdout
    shown = orjson.loads(
        cli_in_process(["status", "--state", str(tmp_path / "s"), "--json"], env=dict(os.environ)).stdout
    )
    assert shown["switch"]["at"] <= shown["switch"]["latest_switch"] + 1.0


def test_heavy_tailed_batches_only_the_one_in_the_tail_is_canceled(tmp_path):
    """Pareto latencies (median 300 simulated seconds; seed 9 draws 364 s, 295 s and 2,079 s for the
    three batches): the two that end before the switch time are harvested as they are, only the one in
    the tail is canceled, and only what it had not completed goes sync."""
    _items(tmp_path)
    clock = ScaledClock()
    scenario = Scenario(seed=9, batch_seconds=300.0, batch_latency="pareto", cancel_seconds=60.0)
    sim = Simulator(scenario, clock=clock.now)
    with serve(sim) as server:
        result, err = _run(server.base_url, tmp_path, clock, DEADLINE)
    assert 0 == result.exit_code, err[-3000:]
    assert max(e.time for e in sim.log) <= _deadline(tmp_path / "s")
    said = [line for line in err.splitlines() if SWITCH_LINE in line]
    assert 1 == len(said) and "canceling 1 live batch " in said[0], err[-3000:]
    canceled_batches = [b for b in sim.batches if b.cancel_initiated_at is not None]
    assert 1 == len(canceled_batches) and 3 == len(sim.batches)
    answered, canceled, synced = _sent(sim)
    assert 8 <= len(answered) < N  # the two short batches whole (and what the long one completed)
    assert not answered & set(synced) and canceled == set(synced) and {1} == set(synced.values())
    assert len(sim.billed) == N
    rows = read_output(tmp_path / "out.jsonl")
    assert {"batch": len(answered), "sync": len(synced)} == dict(Counter(r["route"] for r in rows))


def test_batches_that_end_before_the_switch_time_are_not_switched(tmp_path):
    _items(tmp_path)
    clock = ScaledClock()
    sim = Simulator(
        Scenario(seed=7, batch_seconds=120.0, batch_latency="lognormal", batch_latency_shape=0.3),
        clock=clock.now,
    )
    with serve(sim) as server:
        result, err = _run(server.base_url, tmp_path, clock, DEADLINE)
    assert 0 == result.exit_code, err[-3000:]
    assert SWITCH_LINE not in err
    assert [] == list(sim.message_requests())
    assert all(b.cancel_initiated_at is None for b in sim.batches)
    assert {"batch"} == {r["route"] for r in read_output(tmp_path / "out.jsonl")}


def test_a_switch_interrupted_at_its_cancels_is_resumed_by_a_rerun_without_a_deadline(tmp_path):
    """The run stops right after the switch is recorded (its progress callback raises on the line):
    batches left live. A rerun with no deadline resumes the switch: it cancels the batches,
    harvests them, sends the rest sync; nothing created again, nothing paid twice."""
    _items(tmp_path)
    clock = ScaledClock()
    sim = Simulator(_stalled(), clock=clock.now)

    class Stop(Exception):
        pass

    def stop_at_the_switch(event: object) -> None:
        if SWITCH_LINE in str(getattr(event, "message", "")):
            raise Stop

    with serve(sim) as server:
        with pytest.raises(Stop):
            _run(server.base_url, tmp_path, clock, DEADLINE, progress=stop_at_the_switch)
        # stopped at the first cancel (the request may have gone out): the others are left live
        assert 2 <= sum(b.cancel_initiated_at is None for b in sim.batches)
        assert [] == list(sim.message_requests())
        result, err = _run(server.base_url, tmp_path, clock, None)
    assert 0 == result.exit_code, err[-3000:]
    assert "resuming the switch" in err
    assert 3 == len(sim.batches)
    assert all(b.cancel_initiated_at is not None for b in sim.batches)
    answered, canceled, synced = _sent(sim)
    assert not answered & set(synced) and canceled == set(synced) and {1} == set(synced.values())
    assert len(sim.billed) == N
    assert ["succeeded"] * N == [r["status"] for r in read_output(tmp_path / "out.jsonl")]


def _switched(state: Path) -> bool:
    """The checkpoint records a switch (read-only; False while it cannot be read)."""
    from adapters.checkpoint.store import DB_NAME

    db = state / DB_NAME
    if not db.exists():
        return False
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=1.0) as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'switch'").fetchone()
    except sqlite3.OperationalError:
        return False
    return row is not None and orjson.loads(row[0]) is not None


@pytest.mark.slow
def test_kill_9_during_the_switch_loses_nothing_and_pays_nothing_twice(tmp_path):
    """SIGKILL once the switch is recorded, while the canceled batches are ending (a cancel takes 400
    simulated seconds here: 4 s of the wall); the rerun finishes the switch."""
    items = _items(tmp_path)
    origin = time.time()
    clock = ScaledClock(origin=origin)
    sim = Simulator(_stalled(cancel_seconds=400.0), clock=clock.now)
    state, out = tmp_path / "s", tmp_path / "out.jsonl"
    with serve(sim) as server:

        def child(deadline: str) -> children.Child:
            args = [
                server.base_url,
                str(state),
                str(items),
                str(out),
                str(SPEED),
                str(BASE),
                str(origin),
                deadline,
            ]
            return children.start("tests.integration.switching", args, env=os.environ)

        first = child(str(DEADLINE))
        limit = time.monotonic() + 60
        while time.monotonic() < limit and first.poll() is None and not _switched(state):
            time.sleep(0.01)
        assert first.poll() is None, first.stderr.read()
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=10)
        assert -signal.SIGKILL == first.returncode
        assert 3 == len(sim.batches)
        assert [] == list(sim.message_requests())  # killed before the sync route sent anything

        second = child("-")
        _out, err = second.communicate(timeout=120)
        assert 0 == second.returncode, err[-3000:]
    assert 3 == len(sim.batches)  # nothing created again
    assert all(b.cancel_initiated_at is not None for b in sim.batches)
    answered, canceled, synced = _sent(sim)
    assert answered and canceled
    assert not answered & set(synced) and canceled == set(synced) and {1} == set(synced.values())
    assert len(sim.billed) == N  # nothing paid twice
    rows = read_output(out)
    assert ["succeeded"] * N == [r["status"] for r in rows]
    assert {"batch": len(answered), "sync": len(synced)} == dict(Counter(r["route"] for r in rows))
