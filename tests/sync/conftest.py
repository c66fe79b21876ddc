"""Shared helpers of the sync-path tests: items, a bound store, a real SDK client over a MockTransport."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.sync_api import AnthropicMessagesApi
from adapters.providers.port import MessagesApi
from adapters.run.clock import FakeClock
from adapters.run.events import Event
from adapters.run.sync import SyncRunResult, SyncSettings, run_sync
from judgecore.decide.ratelimit import RateLimitReading
from judgecore.job.parsing import parse_items
from judgecore.wire.requests import Request, RequestTemplate, build_requests

MODEL = "claude-opus-4-8"
RUBRIC = "You grade answers on a 1-10 scale. " * 400  # ~3,600 tokens: above the cache minimum
BASE_URL = "http://mock.local"


def make_job(n: int, *, rubric: str | None = RUBRIC, prompt: Callable[[int], str] | None = None):
    """`n` items q0..q{n-1} with their sync template and requests."""
    text = prompt or (lambda i: f"Grade answer #{i}")
    lines = [orjson.dumps({"id": f"q{i}", "prompt": text(i), "metadata": {"i": i}}) for i in range(n)]
    items = parse_items(lines)
    template = RequestTemplate.build(model=MODEL, max_tokens=256, rubric=rubric, path="sync")
    return items, template, build_requests(items, template)


def bind(tmp_path: Path, items: Sequence[Any], requests: Sequence[Request], name: str = "state") -> Store:
    """A store bound to the job, its messages kept (the sync shell reads each back as it sends)."""
    store = Store.open(tmp_path / name)
    store.bind_job(
        {"model": MODEL},
        ((r.custom_id, i.id, i.digest) for i, r in zip(items, requests, strict=True)),
    )
    store.keep_messages((r.custom_id, i.messages_json) for i, r in zip(items, requests, strict=True))
    return store


def message_json(text: str = "Score: 7", *, stop_reason: str = "end_turn", output_tokens: int = 5) -> bytes:
    return orjson.dumps(
        {
            "id": "msg_01",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "text", "text": text}],
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": 12,
                "output_tokens": output_tokens,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": 3600,
            },
        }
    )


def ok(text: str = "Score: 7", *, headers: Sequence[tuple[str, str]] = (), **kw: Any) -> httpx2.Response:
    return httpx2.Response(
        200,
        headers=[("content-type", "application/json"), ("request-id", "req_ok"), *headers],
        content=message_json(text, **kw),
    )


def error(status: int, error_type: str, message: str, *, headers: Sequence[tuple[str, str]] = ()):
    body = {"type": "error", "error": {"type": error_type, "message": message}, "request_id": "req_err"}
    return httpx2.Response(
        status,
        headers=[("content-type", "application/json"), ("request-id", "req_err"), *headers],
        content=orjson.dumps(body),
    )


def prompt_of(request: httpx2.Request) -> str:
    """The user text of a Messages request (the item's prompt)."""
    return orjson.loads(request.content)["messages"][-1]["content"]


def mock_api(handler: Callable[[httpx2.Request], Any], *, max_retries: int = 2) -> MessagesApi:
    """The real AsyncAnthropic over an httpx2.MockTransport; the port pins its retries to 0 anyway."""
    client = anthropic.AsyncAnthropic(
        api_key="sk-test",
        base_url=BASE_URL,
        max_retries=max_retries,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler), base_url=BASE_URL),
    )
    return AnthropicMessagesApi(client)


class Recorder:
    """An `Emit` that keeps every event."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)


def sync_run(
    store: Store,
    requests: Sequence[Request],
    template: RequestTemplate,
    api: MessagesApi,
    *,
    clock: FakeClock | None = None,
    settings: SyncSettings | None = None,
    reading: RateLimitReading | None = None,
    emit: Recorder | None = None,
) -> SyncRunResult:
    return asyncio.run(
        run_sync(
            store=store,
            requests=requests,
            template=template,
            api=api,
            clock=clock or FakeClock(),
            settings=settings or SyncSettings(),
            emit=emit or Recorder(),
            rng=random.Random(7),
            reading=reading,
        )
    )


def latest(store: Store) -> dict[str, tuple[str, int]]:
    """custom_id -> (status or 'pending', attempts) as the output would show it."""
    out = {}
    for cid, outcome, _route, _bid, attempts in store.latest():
        status = str(outcome.status) if outcome is not None and outcome.final else "pending"
        out[cid] = (status, attempts)
    return out


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()
