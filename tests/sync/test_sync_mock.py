"""The sync path through the real SDK over an httpx2.MockTransport: probe, warm-up, taxonomy, fatal, resume."""

from __future__ import annotations

import asyncio
import itertools
import random

import httpx2
import orjson
import pytest

from adapters.run.clock import FakeClock
from adapters.run.events import Notice, SyncProgress
from adapters.run.sync import SyncSettings, probe, run_sync
from judgecore.job.parsing import parse_items
from judgecore.results.outcomes import Status
from judgecore.run.sync import CONNECT_FAILED
from judgecore.wire.requests import RequestTemplate, build_requests

from .conftest import (
    BASE_URL,
    MODEL,
    Recorder,
    bind,
    error,
    latest,
    make_job,
    message_json,
    mock_api,
    ok,
    prompt_of,
    sync_run,
)

RL_HEADERS = [
    ("anthropic-ratelimit-requests-limit", "50"),
    ("anthropic-ratelimit-requests-remaining", "49"),
    ("anthropic-ratelimit-requests-reset", "2026-11-29T10:00:01Z"),
    ("anthropic-ratelimit-input-tokens-limit", "30000"),
    ("anthropic-ratelimit-input-tokens-remaining", "29000"),
    ("anthropic-ratelimit-input-tokens-reset", "2026-11-29T10:00:02.500Z"),
    ("anthropic-ratelimit-output-tokens-limit", "8000"),
    ("anthropic-ratelimit-output-tokens-remaining", "8000"),
    ("anthropic-ratelimit-output-tokens-reset", "2026-11-29T10:00:00+00:00"),
    ("anthropic-ratelimit-tokens-limit", "8000"),
    ("anthropic-ratelimit-tokens-remaining", "8000"),
    ("anthropic-ratelimit-tokens-reset", "2026-11-29T10:00:00Z"),
]
T0 = 1_795_946_400.0  # 2026-11-29T10:00:00Z


def test_probe_reads_the_tier_and_returns_the_items_answer(tmp_path):
    """One request; its headers become a reading; its answer is the item's outcome, recorded."""
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return ok("Score: 9", headers=RL_HEADERS)

    items, template, requests = make_job(3)
    store = bind(tmp_path, items, requests)
    result = asyncio.run(
        probe(store=store, api=mock_api(handler), request=requests[0], template=template, clock=FakeClock())
    )
    outcome, reading = result.outcome, result.reading
    assert 1 == len(seen)
    assert ("succeeded", 1) == latest(store)[requests[0].custom_id]
    assert "Grade answer #0" == prompt_of(seen[0])
    assert Status.SUCCEEDED == outcome.status
    assert "Score: 9" == outcome.text
    assert 8000 == reading.otpm
    assert (50, 49, T0 + 1) == (reading.requests.limit, reading.requests.remaining, reading.requests.reset)
    assert (30000, 29000, T0 + 2.5) == (
        reading.input_tokens.limit,
        reading.input_tokens.remaining,
        reading.input_tokens.reset,
    )
    assert T0 == reading.output_tokens.reset


def test_probe_waits_out_retry_after_and_still_reads_the_tier(tmp_path):
    """The probe is the run's first launch: a 429 with retry-after 3 is resent no sooner than 3 s later."""
    clock = FakeClock()
    sent: list[float] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(clock.now())
        if len(sent) == 1:
            return error(429, "rate_limit_error", "slow down", headers=[("retry-after", "3"), *RL_HEADERS])
        return ok(headers=RL_HEADERS)

    items, template, requests = make_job(1)
    store = bind(tmp_path, items, requests)
    result = asyncio.run(
        probe(store=store, api=mock_api(handler), request=requests[0], template=template, clock=clock)
    )
    assert 2 == len(sent)
    assert sent[1] - sent[0] >= 3.0
    assert (Status.SUCCEEDED, None) == (result.outcome.status, result.fatal)
    assert 8000 == result.reading.otpm
    assert ("succeeded", 2) == latest(store)[requests[0].custom_id]


def test_probe_of_an_item_that_keeps_failing_leaves_it_pending_after_max_attempts(tmp_path):
    sent = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return error(500, "api_error", "boom")

    items, template, requests = make_job(2)
    store = bind(tmp_path, items, requests)
    result = asyncio.run(
        probe(
            store=store,
            api=mock_api(handler),
            request=requests[0],
            template=template,
            clock=FakeClock(),
            settings=SyncSettings(max_attempts=2),
        )
    )
    assert 2 == len(sent)
    assert (Status.RETRY, None) == (result.outcome.status, result.fatal)
    assert ("pending", 2) == latest(store)[requests[0].custom_id]


def test_probe_of_a_one_item_job_whose_request_is_invalid_trips_the_breaker(tmp_path):
    """need = min(20, 1) = 1: the one invalid answer is the job's configuration, exit 4, not quarantined."""

    def handler(request: httpx2.Request) -> httpx2.Response:
        return error(400, "invalid_request_error", "max_tokens: too large")

    items, template, requests = make_job(1)
    store = bind(tmp_path, items, requests)
    result = asyncio.run(
        probe(store=store, api=mock_api(handler), request=requests[0], template=template, clock=FakeClock())
    )
    assert result.fatal is not None and "invalid" in result.fatal
    assert ("pending", 0) == latest(store)[requests[0].custom_id]


def test_sdk_retries_are_off_whatever_the_client_says():
    """A client built with max_retries=5 still makes exactly one send per create."""
    sends = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sends.append(request)
        return error(500, "api_error", "boom")

    items, template, requests = make_job(1)
    api = mock_api(handler, max_retries=5)
    raw, _reading, request_id = asyncio.run(api.create(requests[0].params(template, items[0].messages_json)))
    assert 1 == len(sends)
    assert ("http_error", 500, "api_error", "req_err") == (raw.kind, raw.status, raw.error_type, request_id)


def test_warm_up_answers_the_first_request_before_any_other_leaves(tmp_path):
    log: list[str] = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        name = prompt_of(request)
        log.append(f"start {name}")
        await asyncio.sleep(0.01)  # give any eager sender a chance to fire meanwhile
        log.append(f"end {name}")
        return ok()

    items, template, requests = make_job(6)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert ["start Grade answer #0", "end Grade answer #0"] == log[:2]
    assert 6 == res.succeeded
    assert any(a.startswith("start") and b.startswith("start") for a, b in itertools.pairwise(log[2:])), (
        "after the warm-up, requests fan out concurrently"
    )
    # the rubric travels as a system block with a 5-minute cache marker
    params = requests[0].params(template, items[0].messages_json)
    assert {"type": "ephemeral"} == params["system"][0]["cache_control"]


def test_warm_up_waits_for_the_first_items_retries_too(tmp_path):
    log: list[str] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        name = prompt_of(request)
        log.append(name)
        if name == "Grade answer #0" and log.count(name) == 1:
            return error(529, "overloaded_error", "Overloaded")
        return ok()

    items, template, requests = make_job(4)
    store = bind(tmp_path, items, requests)
    sync_run(store, requests, template, mock_api(handler))
    assert ["Grade answer #0", "Grade answer #0"] == log[:2]


# --- the failure taxonomy, one row at a time ---------------------------------------------------------
# Item q1 gets the scripted answers (q0, the warm-up, always succeeds); (status, sends, failure class).

TAXONOMY = {
    "rate_limit": (
        [
            error(
                429,
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
                headers=[("retry-after", "7")],
            ),
            ok(),
        ],
        ("succeeded", 2, None),
    ),
    "server_error": ([error(500, "api_error", "Internal server error"), ok()], ("succeeded", 2, None)),
    "overloaded": ([error(529, "overloaded_error", "Overloaded"), ok()], ("succeeded", 2, None)),
    "gateway_timeout": ([error(504, "timeout_error", "timed out"), ok()], ("succeeded", 2, None)),
    "connection": (["drop", ok()], ("succeeded", 2, None)),
    "context": (
        [error(400, "invalid_request_error", "prompt is too long: 210000 tokens > 200000 maximum")],
        ("miss", 1, "MODEL_CONTEXT"),
    ),
    "truncation": ([ok("Score: 7, because", stop_reason="max_tokens")], ("miss", 1, "MODEL_TRUNCATION")),
    "context_window_stop": (
        [ok("Score", stop_reason="model_context_window_exceeded")],
        ("miss", 1, "MODEL_CONTEXT"),
    ),
    "invalid": (
        [error(400, "invalid_request_error", "messages.0.content: Input should be a valid list")],
        ("quarantined", 1, "INVALID_REQUEST"),
    ),
    "too_large": (
        [error(413, "request_too_large", "Request exceeds the maximum allowed size")],
        ("quarantined", 1, "INVALID_REQUEST"),
    ),
    "transient_exhausted": (
        [error(500, "api_error", "boom")] * 5,
        ("pending", 3, "INFRA_TRANSIENT"),
    ),
}


def scripted(script: list[object]):
    answers = {"Grade answer #1": list(script)}

    def handler(request: httpx2.Request) -> httpx2.Response:
        queue = answers.get(prompt_of(request))
        if not queue:
            return ok()
        answer = queue.pop(0) if len(queue) > 1 else queue[0]
        if answer == "drop":
            raise httpx2.RemoteProtocolError("Server disconnected without sending a response.")
        assert isinstance(answer, httpx2.Response)
        return httpx2.Response(answer.status_code, headers=answer.headers, content=answer.content)

    return handler


@pytest.mark.parametrize("row", sorted(TAXONOMY))
def test_taxonomy_row(tmp_path, row):
    script, (status, sends, failure) = TAXONOMY[row]
    items, template, requests = make_job(3)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(scripted(script)))
    assert res.fatal is None
    assert (status, sends) == latest(store)[requests[1].custom_id]
    outcome = next(o for cid, o, *_ in store.latest() if cid == requests[1].custom_id)
    assert failure == (str(outcome.failure) if outcome.failure else None)
    assert ("succeeded", 1) == latest(store)[requests[2].custom_id]


def test_rate_limit_waits_at_least_retry_after_plus_jitter(tmp_path):
    clock = FakeClock()
    script, _ = TAXONOMY["rate_limit"]
    items, template, requests = make_job(2)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(scripted(script)), clock=clock)
    assert 1 == res.rate_limited
    assert any(7.0 <= s < 7.0 + SyncSettings().backoff_base for s in clock.sleeps)
    assert res.elapsed >= 7.0


@pytest.mark.parametrize(
    ("status", "error_type", "message"),
    [
        (401, "authentication_error", "invalid x-api-key"),
        (403, "permission_error", "key lacks permission"),
        (404, "not_found_error", "model: claude-nonexistent"),
    ],
)
def test_fatal_config_stops_the_run_at_once(tmp_path, status, error_type, message):
    """The first answer is fatal: nothing else is sent, nothing is recorded, a one-line reason comes back."""
    sends = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sends.append(request)
        return error(status, error_type, message)

    items, template, requests = make_job(30)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert 1 == len(sends)
    assert res.fatal is not None and "\n" not in res.fatal and message in res.fatal
    assert {"pending"} == {s for s, _ in latest(store).values()}


def test_fatal_mid_run_stops_after_a_bounded_number_of_sends_and_keeps_every_answer(tmp_path):
    sends = []

    async def handler(request: httpx2.Request) -> httpx2.Response:
        sends.append(request)
        await asyncio.sleep(0)
        if len(sends) > 10:
            return error(401, "authentication_error", "key revoked")
        return ok()

    items, template, requests = make_job(200)
    store = bind(tmp_path, items, requests)
    settings = SyncSettings(concurrency=8)
    res = sync_run(store, requests, template, mock_api(handler), settings=settings)
    assert res.fatal is not None and "key revoked" in res.fatal
    assert len(sends) <= 10 + settings.concurrency
    succeeded = [cid for cid, (s, _) in latest(store).items() if s == "succeeded"]
    assert res.succeeded == len(succeeded) >= 10 - settings.concurrency


def test_breaker_trips_when_the_first_outcomes_are_all_invalid_and_keeps_nothing(tmp_path):
    def handler(request: httpx2.Request) -> httpx2.Response:
        return error(400, "invalid_request_error", "system: unknown field 'rubrik'")

    items, template, requests = make_job(50)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert res.fatal is not None and "rubrik" in res.fatal
    assert {"pending"} == {s for s, _ in latest(store).values()}, "quarantines of a tripped run are not kept"


def test_a_few_invalid_items_are_quarantined_not_fatal(tmp_path):
    def handler(request: httpx2.Request) -> httpx2.Response:
        if prompt_of(request) in {"Grade answer #1", "Grade answer #2"}:
            return error(400, "invalid_request_error", "bad item")
        return ok()

    items, template, requests = make_job(25)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert (None, 23, 2) == (res.fatal, res.succeeded, res.quarantined)


def test_a_429_halves_concurrency_and_a_5xx_does_not(tmp_path):
    for status, error_type, expected in [(429, "rate_limit_error", 4), (529, "overloaded_error", 8)]:
        calls = []

        def handler(request: httpx2.Request, status=status, error_type=error_type, calls=calls):
            calls.append(1)
            if len(calls) == 2:
                return error(status, error_type, "no", headers=[("retry-after-ms", "10")])
            return ok()

        items, template, requests = make_job(3)
        store = bind(tmp_path, items, requests, name=f"s{status}")
        emit = Recorder()
        res = sync_run(
            store, requests, template, mock_api(handler), settings=SyncSettings(concurrency=8), emit=emit
        )
        assert expected == res.concurrency
        assert 3 == res.succeeded
        cut = [e for e in emit.events if isinstance(e, Notice) and "concurrency 8 -> 4" in e.message]
        assert (status == 429) == bool(cut)


def test_resume_after_a_partial_run_resends_only_non_final_ids(tmp_path):
    first_run: list[str] = []

    def broken(request: httpx2.Request) -> httpx2.Response:
        first_run.append(prompt_of(request))
        if len(first_run) > 12:
            return error(401, "authentication_error", "key revoked")
        if prompt_of(request) == "Grade answer #3":
            return error(400, "invalid_request_error", "bad item")
        return ok()

    items, template, requests = make_job(40)
    store = bind(tmp_path, items, requests)
    res1 = sync_run(store, requests, template, mock_api(broken), settings=SyncSettings(concurrency=4))
    assert res1.fatal is not None
    done_first = {cid for cid, (s, _) in latest(store).items() if s != "pending"}
    assert done_first and len(done_first) < 40

    second_run: list[str] = []

    def healthy(request: httpx2.Request) -> httpx2.Response:
        second_run.append(prompt_of(request))
        return ok()

    res2 = sync_run(store, requests, template, mock_api(healthy))
    by_prompt = {f"Grade answer #{i}": r.custom_id for i, r in enumerate(requests)}
    resent = {by_prompt[p] for p in second_run}
    assert len(second_run) == len(resent), "each id sent once"
    assert set() == resent & done_first
    assert len(done_first) == res2.skipped
    assert {"succeeded", "quarantined"} == {s for s, _ in latest(store).values()}
    assert ("quarantined", 1) == latest(store)[requests[3].custom_id]


def test_progress_events_are_throttled_and_end_with_the_totals(tmp_path):
    items, template, requests = make_job(30)
    store = bind(tmp_path, items, requests)
    emit = Recorder()
    sync_run(store, requests, template, mock_api(lambda r: ok()), emit=emit)
    progress = [e for e in emit.events if isinstance(e, SyncProgress)]
    assert progress and len(progress) <= 10
    assert (30, 30) == (progress[-1].done, progress[-1].total)


def test_cache_tokens_are_summed_into_a_hit_rate(tmp_path):
    def handler(request: httpx2.Request) -> httpx2.Response:
        return ok()

    items, template, requests = make_job(4)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert (0, 4 * 3600, 1.0) == (
        res.cache_creation_input_tokens,
        res.cache_read_input_tokens,
        res.cache_hit_rate,
    )


def test_the_breaker_counts_earlier_runs_so_a_rerun_of_invalid_leftovers_is_not_fatal(tmp_path):
    """Run 1 succeeds for most items then stops; run 2 meets only invalid items: they are quarantined."""
    calls: list[str] = []

    def first(request: httpx2.Request) -> httpx2.Response:
        calls.append(prompt_of(request))
        if len(calls) > 5:
            return error(401, "authentication_error", "key revoked")
        return ok()

    items, template, requests = make_job(8)
    store = bind(tmp_path, items, requests)
    assert sync_run(store, requests, template, mock_api(first), settings=SyncSettings(concurrency=1)).fatal

    def invalid(request: httpx2.Request) -> httpx2.Response:
        return error(400, "invalid_request_error", "bad item")

    res = sync_run(store, requests, template, mock_api(invalid))
    assert (None, 3) == (res.fatal, res.quarantined)


def test_sends_per_item_are_bounded_when_the_api_keeps_refusing(tmp_path):
    """Always 429 then always 500 for one item: it is left pending after a bounded number of sends."""
    for answer, expected in [
        (error(429, "rate_limit_error", "busy", headers=[("retry-after", "2")]), 10),
        (error(503, "api_error", "down"), 3),
    ]:
        items, template, requests = make_job(3)
        store = bind(tmp_path, items, requests, name=f"s{answer.status_code}")
        res = sync_run(store, requests, template, mock_api(scripted([answer])))
        assert ("pending", expected) == latest(store)[requests[1].custom_id]
        assert (None, 2, 1) == (res.fatal, res.succeeded, res.pending)


# --- streaming: requests allowed more than STREAM_ABOVE output tokens --------------------------------


def sse(*events: tuple[str, dict]) -> httpx2.Response:
    body = b"".join(
        b"event: " + name.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n" for name, data in events
    )
    return httpx2.Response(200, headers=[("content-type", "text/event-stream")], content=body)


def streamed_message(text: str) -> httpx2.Response:
    start = orjson.loads(message_json(""))
    start.update(content=[], stop_reason=None)
    return sse(
        ("message_start", {"type": "message_start", "message": start}),
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None}, "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    )  # fmt: skip


def test_a_large_max_tokens_request_is_streamed_and_a_mid_stream_error_is_retried(tmp_path):
    """max_tokens 32000: sent with stream=true; an overloaded error event inside the 200 is transient."""
    bodies: list[dict] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        bodies.append(orjson.loads(request.content))
        if len(bodies) == 1:
            error_event = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
            return sse(("error", error_event))
        return streamed_message("Score: 8")

    lines = [orjson.dumps({"id": "q0", "prompt": "Grade answer #0"})]
    items = parse_items(lines)
    template = RequestTemplate.build(model=MODEL, max_tokens=32000, rubric=None, path="sync")
    requests = build_requests(items, template)
    store = bind(tmp_path, items, requests)
    res = sync_run(store, requests, template, mock_api(handler))
    assert [True, True] == [b.get("stream") for b in bodies]
    assert (1, 1) == (res.succeeded, res.retries)
    outcome = next(o for _cid, o, *_ in store.latest())
    assert ("Score: 8", 9) == (outcome.text, outcome.usage.output_tokens)
    assert ("succeeded", 2) == latest(store)[requests[0].custom_id]


def test_a_connection_refused_is_reported_as_such_naming_the_base_url():
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("[Errno 111] Connection refused")

    items, template, requests = make_job(1)
    params = requests[0].params(template, items[0].messages_json)
    raw, _reading, _rid = asyncio.run(mock_api(handler).create(params))
    assert ("connection_error", CONNECT_FAILED) == (raw.kind, raw.error_type)
    assert BASE_URL in (raw.message or "")


def _interrupted_mid_flight(tmp_path, *, answer: bool):
    """A sync run of 10 items at concurrency 4, cancelled (as Ctrl-C cancels `asyncio.run`'s task) while
    4 requests are in flight; `answer`: their answers come back after the interrupt."""
    in_flight: list[str] = []
    launched, release = asyncio.Event(), asyncio.Event()

    async def handler(request: httpx2.Request) -> httpx2.Response:
        in_flight.append(prompt_of(request))
        if len(in_flight) == 4:
            launched.set()
        await release.wait()
        return ok()

    items, template, requests = make_job(10, rubric=None)
    store = bind(tmp_path, items, requests)
    emit, clock = Recorder(), FakeClock()

    async def main() -> None:
        task = asyncio.ensure_future(
            run_sync(
                store=store,
                requests=requests,
                template=template,
                api=mock_api(handler),
                clock=clock,
                settings=SyncSettings(concurrency=4),
                emit=emit,
                rng=random.Random(7),
                reading=None,
            )
        )
        await launched.wait()
        task.cancel()
        if answer:
            release.set()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    return store, requests, in_flight, emit, clock


def test_an_interrupt_keeps_the_answers_already_in_flight(tmp_path):
    """Ctrl-C mid-run: the requests in flight were sent (and are billed); their answers are waited for
    and recorded, so the rerun does not send them again."""
    store, requests, in_flight, emit, _ = _interrupted_mid_flight(tmp_path, answer=True)
    by_prompt = {f"Grade answer #{i}": r.custom_id for i, r in enumerate(requests)}
    assert 4 == len(in_flight)
    assert {by_prompt[p]: ("succeeded", 1) for p in in_flight} == {
        cid: s for cid, s in latest(store).items() if s[0] != "pending"
    }
    (notice,) = [e for e in emit.events if isinstance(e, Notice) and "interrupted" in e.message]
    assert "4 answers in flight" in notice.message


def test_an_interrupt_waits_for_the_answers_in_flight_a_bounded_time(tmp_path):
    """Answers that never come back after the interrupt are dropped once the wait's bound has passed."""
    from adapters.run.sync import DRAIN_SECONDS

    store, _, in_flight, _, clock = _interrupted_mid_flight(tmp_path, answer=False)
    assert 4 == len(in_flight)
    assert {"pending"} == {s for s, _ in latest(store).values()}
    assert DRAIN_SECONDS == pytest.approx(sum(clock.sleeps))
