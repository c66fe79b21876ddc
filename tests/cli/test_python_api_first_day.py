"""The Python API on a new user's first day: a notebook's running loop, watching progress, bad paths."""

from __future__ import annotations

import asyncio
import warnings

import pytest

from adapters.api import UsageError, ajudge, judge
from adapters.run.events import Notice, SyncProgress
from adapters.run.settings import JobSettings
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client


def _items(n: int) -> list[dict]:
    return [{"id": f"e{i}", "prompt": f"grade answer {i}"} for i in range(n)]


def test_judge_inside_a_running_loop_says_to_await_ajudge_and_leaves_no_coroutine(tmp_path):
    """Was asyncio's own "cannot be called from a running event loop" and a "never awaited" warning."""
    sim = Simulator(Scenario(seed=1))

    async def notebook_cell() -> None:
        judge(_items(2), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0))

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(UsageError, match=r"await ajudge\(\.\.\.\)"):
            asyncio.run(notebook_cell())
    assert [] == [str(w.message) for w in caught if "never awaited" in str(w.message)]
    assert 0 == len(sim.log)


def test_ajudge_runs_inside_a_running_loop(tmp_path):
    sim = Simulator(Scenario(seed=2))

    async def notebook_cell() -> int:
        result = await ajudge(
            _items(2), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim, max_retries=0)
        )
        return result.exit_code

    assert 0 == asyncio.run(notebook_cell())


def test_judge_takes_a_progress_callback_that_sees_the_runs_events(tmp_path):
    sim = Simulator(Scenario(seed=3))
    events: list[object] = []
    result = judge(
        _items(6),
        rubric=None,
        state_dir=tmp_path / "s",
        client=sim_client(sim, max_retries=0),
        progress=events.append,
    )
    assert 0 == result.exit_code
    assert any(isinstance(e, Notice) and e.message.startswith("route: sync") for e in events)
    last = [e for e in events if isinstance(e, SyncProgress)][-1]
    assert last.done == last.total


def test_judge_refuses_an_out_path_that_is_a_directory_before_sending(tmp_path):
    sim = Simulator(Scenario(seed=4))
    with pytest.raises(UsageError, match=r"--out .*is a directory"):
        judge(_items(2), rubric=None, state_dir=tmp_path / "s", client=sim_client(sim), out=tmp_path)
    assert 0 == len(sim.log)


def test_judge_refuses_an_items_max_tokens_above_the_models_limit_naming_its_line(tmp_path):
    sim = Simulator(Scenario(seed=5))
    items = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y", "max_tokens": 70_000}]
    with pytest.raises(UsageError, match="line 2: item 'b': max_tokens 70,000 is above claude-haiku-4-5's"):
        judge(
            items,
            rubric=None,
            state_dir=tmp_path / "s",
            client=sim_client(sim),
            settings=JobSettings(model="claude-haiku-4-5"),
        )
    assert 0 == len(sim.log)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"model": ""}, "--model must be a non-empty model id"),
        ({"poll_interval": float("inf")}, "--poll-interval must be a finite number"),
        ({"grace": float("nan")}, "--grace must be a finite number"),
        ({"max_tokens": 10**9}, "--max-tokens must be a whole number at most 1,000,000"),
    ],
)
def test_job_settings_refuse_values_that_cannot_run(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JobSettings(**kwargs)
