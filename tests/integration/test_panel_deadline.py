"""The deadline's switch of a panel whose two lanes batch at once (Claude's on Message Batches, GPT's on
OpenAI's Batch API), through the real SDKs over HTTP against the simulator on a clock 100 times the
wall's: when one lane switches, the other follows; each lane's live batches are canceled through its
own provider, what they completed is kept, the rest goes on each provider's sync route, once."""

from __future__ import annotations

import asyncio
import contextlib
import io
from collections import Counter
from pathlib import Path

import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve
from tests.integration.conftest import read_output, write_items
from tests.integration.switching import RUBRIC, ScaledClock, settings

pytestmark = pytest.mark.integration

N = 6  # items: 6 requests a judge, two sub-batches of 4 and 2 on each lane
JUDGES = ("claude-sonnet-4-6", "openai:gpt-5-mini")
DEADLINE = 900.0
SWITCH_LINE = "deadline: switching to the sync route at"


async def _panel(base_url: str, tmp_path: Path, clock: ScaledClock) -> object:
    import anthropic

    from adapters.run.job import ajudge
    from adapters.run.progress import PlainProgress

    client = anthropic.AsyncAnthropic(api_key="sk-test", base_url=base_url, max_retries=2)
    async with client:
        return await ajudge(
            tmp_path / "items.jsonl",
            rubric=RUBRIC,
            state_dir=tmp_path / "s",
            settings=settings(DEADLINE, judges=JUDGES),
            client=client,
            out=tmp_path / "out.jsonl",
            clock=clock,
            progress=PlainProgress(),
            environ={"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": f"{base_url}/v1"},
        )


def test_a_panels_lanes_switch_together_each_canceled_through_its_own_provider(tmp_path: Path) -> None:
    write_items(tmp_path / "items.jsonl", [{"id": f"i{k}", "prompt": f"question {k}"} for k in range(N)])
    clock = ScaledClock()
    sim = Simulator(
        Scenario(seed=7, batch_seconds=1_400.0, never_end=True, cancel_seconds=60.0), clock=clock.now
    )
    err = io.StringIO()
    with serve(sim) as server, contextlib.redirect_stderr(err):
        result = asyncio.run(_panel(server.base_url, tmp_path, clock))
    said = err.getvalue()
    assert 0 == result.exit_code, said[-1200:]  # type: ignore[attr-defined]
    assert 1 <= sum(SWITCH_LINE in line for line in said.splitlines()), said[-3000:]
    # both lanes batched, and every batch of both was canceled through its own provider
    assert 2 == len(sim.batches) and all(b.cancel_initiated_at is not None for b in sim.batches)
    openai_batches = sim.openai.batches()
    assert 2 == len(openai_batches) and {b.status for b in openai_batches} == {"cancelled"}
    rows = read_output(tmp_path / "out.jsonl")
    assert len(rows) == N and {r["status"] for r in rows} == {"succeeded"}
    assert all(set(r["judges"]) == set(JUDGES) for r in rows)
    # each request paid once, on one route: Claude's batch answers plus its sync sends, GPT's likewise
    claude_batch = sum(1 for b in sim.batches for r in b.results or () if r["result"]["type"] == "succeeded")
    claude_sync = len([e for e in sim.message_requests() if e.status == 200])
    assert claude_batch + claude_sync == N == len(sim.billed)
    gpt = Counter(route for _, route, _ in sim.openai.billed)
    assert gpt["batch"] + gpt["sync"] == N
