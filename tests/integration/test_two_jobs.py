"""Two jobs in one workspace: the batch listing is the workspace's, so each job must know its own.

Two jobs over the same items (a second rubric) run against one simulator, and each is killed with
SIGKILL in the middle of its batch create: the batch exists on the API side, its id was never recorded.
Each rerun must then find its own batch by listing, never the other job's (same size, same minutes),
and every output line must come from the job's own requests.
"""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import kept_ids_job, read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]
ROWS = [{"id": f"shared-{i}", "prompt": f"grade answer {i}"} for i in range(30)]


def _killed_mid_create(srv, args: list[str], creates: int) -> None:
    """Start a run, wait until its create has made a batch (the answer stalls), and kill -9 it."""
    proc = srv.spawn(args)
    srv.wait_for(lambda: len(srv.sim.batches) >= creates, timeout=60)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)
    assert -signal.SIGKILL == proc.returncode


def _system_text(params: dict) -> str:
    return "".join(block["text"] for block in params["system"])


@pytest.mark.parametrize("ended", [True, False], ids=["orphans-ended", "orphans-running"])
def test_two_jobs_killed_mid_create_each_take_only_their_own_batch(served, tmp_path: Path, ended: bool):
    """Both jobs' orphans have the same size and minute; each rerun records its own job's answers only.
    When the orphans have ended before the reruns, each is told apart by its results before adoption,
    so neither job pays again; one still running may be adopted by the wrong job, and is then disowned
    at its first result line (nothing recorded, its requests sent again)."""
    faults = {1: "persist_then_stall", 2: "persist_then_stall"}
    srv = served(Scenario(seed=21, batch_seconds=0.2 if ended else 3.0, create_faults=faults))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    jobs = {}
    for name in ("a", "b"):
        rubric = tmp_path / f"rubric-{name}.txt"
        rubric.write_text(f"Rubric {name.upper()}: answer 'Score: N' with N from 1 to 5.\n")
        state = tmp_path / f"state-{name}"
        jobs[name] = (rubric, state, ["run", str(items), "--state", str(state), "--rubric", str(rubric)])
    for k, (_, _, args) in enumerate(jobs.values(), start=1):
        _killed_mid_create(srv, [*args, "--force-batch", *FAST_POLL], creates=k)
    assert 2 == len(srv.sim.batches)
    a_ids, b_ids = (set(b.custom_ids) for b in srv.sim.batches)
    assert not a_ids & b_ids  # the same items, but each job's custom_ids are its own
    if ended:  # the case under test: both orphans have ended when the reruns list them (not a race
        # between a rerun's start and the second orphan's 0.2 s; a machine under load lost it)
        srv.wait_for(lambda: all(b.processing_status == "ended" for b in srv.sim.batches), timeout=30)

    for name in ("b", "a"):  # b first: a's orphan is the older one, the first a count-and-time match takes
        _, _, args = jobs[name]
        res = srv.cli([*args, "--force-batch", *FAST_POLL], timeout=120)
        assert 0 == res.returncode, res.stderr

    by_id = {b.id: b for b in srv.sim.batches}
    for name, (rubric, state, _) in jobs.items():
        out = read_output(state / "output.jsonl")
        assert {"succeeded"} == {r["status"] for r in out}
        assert len(ROWS) == len(out)
        for row in out:
            batch = by_id[row["batch_id"]]
            params = batch.params[batch.custom_ids.index(row["custom_id"])]
            assert rubric.read_text() == _system_text(params), (name, row["id"])
        assert kept_ids_job(state) is not None
    if ended:
        assert 2 == len(srv.sim.batches)  # each adopted its own orphan: nothing paid twice


def test_a_state_dir_made_before_job_keys_keeps_its_custom_ids(served, tmp_path: Path):
    """A checkpoint bound with the `v1` ids (no job key) is resumed with those ids: a rerun of a job
    started by an older release neither resends nor loses what it holds."""
    from adapters.checkpoint.store import Store
    from adapters.run.settings import JobSettings
    from judgecore.job.ids import custom_id_for
    from judgecore.job.parsing import parse_items

    srv = served(Scenario(seed=22, batch_seconds=0.2))
    items = write_items(tmp_path / "in.jsonl", ROWS)
    state = tmp_path / "old"
    store = Store.open(state)
    store.bind_job(JobSettings().manifest(None), parse_items(items.read_bytes().splitlines()).bindings())
    store.close()
    args = ["run", str(items), "--state", str(state), "--force-batch", *FAST_POLL]
    res = srv.cli(args, timeout=120)
    assert 0 == res.returncode, res.stderr
    assert [tuple(custom_id_for(r["id"]) for r in ROWS)] == [b.custom_ids for b in srv.sim.batches]
    assert kept_ids_job(state) is None
    again = srv.cli(args, timeout=120)
    assert 0 == again.returncode, again.stderr
    assert 1 == len(srv.sim.batches)  # nothing sent again
    assert {"succeeded"} == {r["status"] for r in read_output(state / "output.jsonl")}


def test_two_data_sets_reusing_ids_under_one_rubric_each_take_only_their_own_batch(served, tmp_path: Path):
    """Two data sets that both number their rows `0, 1, 2...` under one rubric and model (the same
    manifest): a custom_id covers what its request asks, so the two jobs share no custom_id, and each
    rerun adopts its own orphan batch only, recording answers to its own prompts (nothing paid twice)."""
    srv = served(
        Scenario(seed=23, batch_seconds=0.2, create_faults={1: "persist_then_stall", 2: "persist_then_stall"})
    )
    jobs = {}
    for name in ("a", "b"):
        rows = [{"id": str(i), "prompt": f"data set {name}: grade answer {i}"} for i in range(30)]
        items = write_items(tmp_path / f"{name}.jsonl", rows)
        state = tmp_path / f"state-{name}"
        jobs[name] = (rows, state, ["run", str(items), "--state", str(state), "--force-batch", *FAST_POLL])
    for k, (_, _, args) in enumerate(jobs.values(), start=1):
        _killed_mid_create(srv, args, creates=k)
    a_ids, b_ids = (set(b.custom_ids) for b in srv.sim.batches)
    assert not a_ids & b_ids  # the same item ids and manifest, other prompts: other custom_ids
    srv.wait_for(lambda: all(b.processing_status == "ended" for b in srv.sim.batches), timeout=30)
    for name in ("b", "a"):
        res = srv.cli(jobs[name][2], timeout=120)
        assert 0 == res.returncode, res.stderr
    assert 2 == len(srv.sim.batches)  # each adopted its own orphan: nothing sent again
    by_id = {b.id: b for b in srv.sim.batches}
    for name, (rows, state, _) in jobs.items():
        prompts = {r["id"]: r["prompt"] for r in rows}
        out = read_output(state / "output.jsonl")
        assert [r["id"] for r in rows] == [r["id"] for r in out]
        for row in out:
            batch = by_id[row["batch_id"]]
            params = batch.params[batch.custom_ids.index(row["custom_id"])]
            assert prompts[row["id"]] == params["messages"][0]["content"], (name, row["id"])
