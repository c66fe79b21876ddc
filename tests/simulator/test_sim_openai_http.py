"""The real `openai` SDK over real loopback HTTP to `judgecore simulator`'s server: chat, files (multipart
upload, streamed content), batches, faults with the SDK's own retries, a held create, and a served model
whose answers take longer as its queue fills."""

from __future__ import annotations

import asyncio
import time

import openai
import orjson
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.scenario import Scenario
from adapters.simulator.server import serve

pytestmark = pytest.mark.integration

MODEL = "gpt-5-mini"
SERVED = "Qwen/Qwen3-32B"


def ask(text: str, model: str = MODEL) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": "Grade on a 1-10 scale."},
                                         {"role": "user", "content": text}], "max_completion_tokens": 300}  # fmt: skip


def jsonl(n: int) -> bytes:
    rows = [{"custom_id": f"c{i}", "method": "POST", "url": "/v1/chat/completions", "body": ask(f"item {i}")}
            for i in range(n)]  # fmt: skip
    return b"".join(orjson.dumps(r) + b"\n" for r in rows)


def test_chat_files_and_a_batch_over_http_with_the_async_client(make_sim, clock):
    sim = make_sim(batch_seconds=5)

    async def run(base_url: str) -> tuple[list[str], list[dict], str]:
        client = openai.AsyncOpenAI(api_key="sk-sim", base_url=base_url, max_retries=0)
        answers = await asyncio.gather(*(client.chat.completions.create(**ask(f"q{i}")) for i in range(8)))
        f = await client.files.create(file=("in.jsonl", jsonl(20)), purpose="batch")
        batch = await client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions",
                                            completion_window="24h", metadata={"job": "http"})  # fmt: skip
        clock.advance(6)
        done = await client.batches.retrieve(batch.id)
        content = await client.files.content(done.output_file_id)
        await client.files.delete(f.id)
        return (
            [a.choices[0].message.content for a in answers],
            [orjson.loads(x) for x in content.content.splitlines()],
            done.status,
        )

    with serve(sim) as server:
        texts, out, status = asyncio.run(run(f"{server.base_url}/v1"))
    assert all(t.startswith("Score: ") for t in texts)
    assert "completed" == status and 20 == len(out)
    assert {f"c{i}" for i in range(20)} == {x["custom_id"] for x in out}


def test_the_sdks_own_retries_honour_retry_after_ms_on_429_and_5xx(clock):
    sim = Simulator(
        Scenario(error_retry_after_ms=5, openai=OpenAIScenario(chat_faults={1: "429", 2: "503", 3: "500"})),
        clock=clock,
    )
    with serve(sim) as server:
        client = openai.OpenAI(api_key="sk-sim", base_url=f"{server.base_url}/v1", max_retries=3)
        started = time.monotonic()
        reply = client.chat.completions.create(**ask("q"))
        took = time.monotonic() - started
    assert reply.choices[0].finish_reason == "stop"
    assert [429, 503, 500, 200] == [e.status for e in sim.requests("POST", "/v1/chat/completions")]
    assert took < 2  # the hints (ms), not the SDK's 0.5-8 s backoff


def test_a_held_create_leaves_a_batch_a_killed_client_never_learned_of(clock):
    sim = Simulator(Scenario(create_stall_seconds=0.3, openai=OpenAIScenario(create_faults={1: "persist_then_stall"})),
                    clock=clock)  # fmt: skip
    with serve(sim) as server:
        client = openai.OpenAI(api_key="sk-sim", base_url=f"{server.base_url}/v1", max_retries=0)
        f = client.files.create(file=("in.jsonl", jsonl(3)), purpose="batch")
        started = time.monotonic()
        with pytest.raises(openai.APIConnectionError):
            client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                                  metadata={"job": "j", "sub_batch": "0"})  # fmt: skip
        assert time.monotonic() - started >= 0.3
        [found] = client.batches.list().data
    assert {"job": "j", "sub_batch": "0"} == found.metadata


def test_a_served_model_over_http_slows_past_its_slots_and_a_bounded_queue_503s():
    sim = Simulator(Scenario(openai=OpenAIScenario(served_slots=2, served_latency=0.5, served_max_queued=2)))

    async def run(base_url: str) -> tuple[list[float], int]:
        client = openai.AsyncOpenAI(api_key="EMPTY", base_url=base_url, max_retries=0)

        async def one(i: int) -> float | None:
            started = time.monotonic()
            try:
                await client.chat.completions.create(**ask(f"q{i}", SERVED))
            except openai.InternalServerError as e:
                assert 503 == e.status_code
                return None
            return time.monotonic() - started

        took = await asyncio.gather(*(one(i) for i in range(6)))
        return [t for t in took if t is not None], sum(t is None for t in took)

    with serve(sim) as server:
        took, refused = asyncio.run(run(f"{server.base_url}/v1"))
    assert 2 == refused  # 2 slots + 2 queued: the fifth and sixth are refused
    assert 4 == len(took) and max(took) >= 0.9  # the last queued waits 2x the 0.5 s floor


def test_connection_refused_is_just_no_server():
    with serve(Simulator(Scenario())) as server:
        url = f"{server.base_url}/v1"
    client = openai.OpenAI(api_key="EMPTY", base_url=url, max_retries=0)
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(**ask("q", SERVED))


def test_judgecore_simulator_serves_the_openai_wire_from_the_command_line(tmp_path):
    import os
    import subprocess
    import sys

    proc = subprocess.Popen(
        [sys.executable, "-m", "adapters.cli", "simulator", "--port", "0", "--openai-tpm", "50000",
         "--self-preference", "gpt=1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        first = proc.stdout.readline()
        base = first.strip().rsplit(" ", 1)[-1]
        assert (
            f"export OPENAI_BASE_URL={base}/v1 OPENAI_API_KEY=sk-sim"
            in proc.stdout.readline() + proc.stdout.readline()
        )
        client = openai.OpenAI(api_key="sk-sim", base_url=f"{base}/v1", max_retries=0)
        raw = client.chat.completions.with_raw_response.create(**ask("Model: gpt-4o\nanswer"))
        assert "50000" == raw.headers["x-ratelimit-limit-tokens"]
        assert raw.parse().choices[0].message.content.startswith("Score: 10")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
