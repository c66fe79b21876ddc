"""The simulator's OpenAI wire, driven by the real `openai` SDK in-process (a fake clock): every response
parses into the SDK's own types; each fault and each validation failure answers as OpenAI does."""

from __future__ import annotations

import statistics
from typing import Any

import openai
import orjson
import pytest
from openai.types import Batch, FileObject
from openai.types.chat import ChatCompletion

from adapters.run.clock import FakeClock
from adapters.simulator.logic import Simulator
from adapters.simulator.openai_scenario import OpenAIScenario
from adapters.simulator.openai_transport import openai_client
from adapters.simulator.openai_wire import go_duration
from adapters.simulator.scenario import Scenario

MODEL = "gpt-5-mini"
RUBRIC = "You grade answers on a 1-10 scale. Reply 'Score: N' then a rationale. " * 120  # ~2,000 tokens


def sim_and_client(clock: FakeClock, **knobs: Any) -> tuple[Simulator, openai.OpenAI]:
    oai = knobs.pop("openai", None)
    scenario = Scenario(**knobs) if oai is None else Scenario(openai=oai, **knobs)
    sim = Simulator(scenario, clock=clock)
    return sim, openai_client(sim, async_=False)


def chat(text: str = "answer 1", *, system: str | None = RUBRIC, **extra: Any) -> dict[str, Any]:
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": text}
    ]
    return {"model": MODEL, "messages": messages, "max_completion_tokens": 400, **extra}


def line(
    cid: str | None, text: str, *, model: str = MODEL, url: str = "/v1/chat/completions", **body: Any
) -> bytes:
    record: dict[str, Any] = {"method": "POST", "url": url, "body": {**chat(text), "model": model, **body}}
    if cid is not None:
        record["custom_id"] = cid
    return orjson.dumps(record)


def upload(client: openai.OpenAI, lines: list[bytes]) -> FileObject:
    return client.files.create(file=("requests.jsonl", b"\n".join(lines) + b"\n"), purpose="batch")


def start_batch(client: openai.OpenAI, lines: list[bytes], **kw: Any) -> Batch:
    f = upload(client, lines)
    return client.batches.create(
        input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h", **kw
    )


def read_lines(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    if file_id is None:
        return []
    return [orjson.loads(x) for x in client.files.content(file_id).content.splitlines() if x]


# ------------------------------------------------------------------ chat completions


def test_chat_answers_a_judge_with_the_headers_openai_sends(clock):
    sim, client = sim_and_client(clock)
    raw = client.chat.completions.with_raw_response.create(**chat())
    completion = raw.parse()
    assert isinstance(completion, ChatCompletion)
    assert completion.choices[0].finish_reason == "stop"
    assert completion.choices[0].message.content.startswith("Score: ")
    assert completion.usage.prompt_tokens > 1024
    assert raw.headers["x-request-id"]
    assert raw.headers["x-ratelimit-limit-tokens"] == "150000000"
    assert raw.headers["x-ratelimit-reset-requests"] == "0s"
    # the same item gets the same answer again (checkable), another item may not
    assert (
        client.chat.completions.create(**chat()).choices[0].message.content
        == completion.choices[0].message.content
    )
    assert [e.path for e in sim.requests("POST")] == ["/v1/chat/completions"] * 2


def test_the_prompt_cache_serves_a_repeated_prefix_of_1024_tokens_or_more(clock):
    _sim, client = sim_and_client(clock)
    first = client.chat.completions.create(**chat("answer 1"))
    second = client.chat.completions.create(**chat("answer 2"))
    short = client.chat.completions.create(**chat("answer 3", system="Grade it."))
    short_again = client.chat.completions.create(**chat("answer 4", system="Grade it."))
    assert 0 == first.usage.prompt_tokens_details.cached_tokens
    cached = second.usage.prompt_tokens_details.cached_tokens
    assert cached >= 1024 and cached % 128 == 0 and cached <= second.usage.prompt_tokens
    assert (
        0
        == short.usage.prompt_tokens_details.cached_tokens
        == short_again.usage.prompt_tokens_details.cached_tokens
    )
    clock.advance(3600)  # the in-memory cache forgets an idle prefix
    assert 0 == client.chat.completions.create(**chat("answer 5")).usage.prompt_tokens_details.cached_tokens


@pytest.mark.parametrize(
    ("extra", "code", "param"),
    [
        ({"max_tokens": 100}, "unsupported_parameter", "max_tokens"),
        ({"temperature": 0}, "unsupported_value", "temperature"),
        ({"max_completion_tokens": 0}, "integer_below_min_value", "max_completion_tokens"),
    ],
)
def test_a_reasoning_model_refuses_max_tokens_and_temperature(clock, extra, code, param):
    _sim, client = sim_and_client(clock)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**chat(**extra))
    assert (code, param) == (info.value.code, info.value.param)
    # an older model takes both
    ok = client.chat.completions.create(**{**chat(), "model": "gpt-4o", "max_tokens": 100, "temperature": 0})
    assert "stop" == ok.choices[0].finish_reason


def strict_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "verdict", "schema": schema, "strict": True}}


GOOD_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5}, "reason": {"type": "string"}},
    "required": ["score", "reason"],
    "additionalProperties": False,
}


@pytest.mark.parametrize(
    ("schema", "words"),
    [
        ({**GOOD_SCHEMA, "additionalProperties": True}, "'additionalProperties' is required to be supplied"),
        ({k: v for k, v in GOOD_SCHEMA.items() if k != "additionalProperties"}, "'additionalProperties'"),
        ({**GOOD_SCHEMA, "required": ["score"]}, "Missing 'reason'"),
        ({**GOOD_SCHEMA, "properties": {**GOOD_SCHEMA["properties"], "sub": {"type": "object", "properties": {}}},
          "required": ["score", "reason", "sub"]}, "In context=('properties', 'sub')"),
        ({"type": "array", "items": GOOD_SCHEMA}, 'type: "object"'),
    ],
)  # fmt: skip
def test_a_strict_schema_outside_openais_subset_is_a_400(clock, schema, words):
    _sim, client = sim_and_client(clock)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**chat(response_format=strict_format(schema)))
    assert "invalid_json_schema" == info.value.code
    assert words in info.value.message


def test_a_strict_schema_in_the_subset_gets_a_valid_json_answer(clock):
    _sim, client = sim_and_client(clock)
    completion = client.chat.completions.create(**chat(response_format=strict_format(GOOD_SCHEMA)))
    answer = orjson.loads(completion.choices[0].message.content)
    assert set(answer) == {"score", "reason"} and 1 <= answer["score"] <= 5


@pytest.mark.parametrize(
    ("fault", "error", "status"),
    [
        ("429", openai.RateLimitError, 429),
        ("500", openai.InternalServerError, 500),
        ("503", openai.InternalServerError, 503),
        ("insufficient_quota", openai.RateLimitError, 429),
    ],
)
def test_chat_faults_answer_with_openais_errors(clock, fault, error, status):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(chat_faults={1: fault}))
    with pytest.raises(error) as info:
        client.chat.completions.create(**chat())
    assert status == info.value.status_code
    if fault == "429":
        assert "rate_limit_exceeded" == info.value.code
        headers = info.value.response.headers
        assert headers["retry-after-ms"] and headers["x-ratelimit-limit-requests"]
    if fault == "insufficient_quota":
        assert "insufficient_quota" == info.value.code
    assert "stop" == client.chat.completions.create(**chat()).choices[0].finish_reason  # call 2 is fine


def test_a_dropped_connection_is_a_connection_error(clock):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(chat_faults={1: "drop"}))
    with pytest.raises(openai.APIConnectionError):
        client.chat.completions.create(**chat())


def test_token_limit_headers_count_down_and_a_429_says_when_to_retry(clock):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(tpm_limit=10_000, rpm_limit=100))
    raw = client.chat.completions.with_raw_response.create(**chat())
    remaining = int(raw.headers["x-ratelimit-remaining-tokens"])
    assert 10_000 - remaining == raw.parse().usage.prompt_tokens + 400
    assert "99" == raw.headers["x-ratelimit-remaining-requests"]
    assert raw.headers["x-ratelimit-reset-tokens"].endswith("s")
    for i in range(2):  # each costs ~2,500 of the 10,000: the fourth does not fit
        client.chat.completions.create(**chat(f"more {i}"))
    with pytest.raises(openai.RateLimitError) as info:
        client.chat.completions.create(**chat("one too many"))
    assert "tokens" == info.value.type and "Please try again in" in info.value.message
    clock.advance(60)
    assert client.chat.completions.create(**chat("after the minute")).choices


def test_go_durations_read_as_openai_writes_them():
    assert ["0s", "12ms", "1s", "1.5s", "6m0s", "1h2m3s"] == [
        go_duration(x) for x in (0, 0.012, 1, 1.5, 360, 3723)
    ]


def test_length_refusal_and_content_filter(clock):
    _sim, client = sim_and_client(clock)
    cut = client.chat.completions.create(**chat("answer [[sim:max_tokens]]"))
    assert "length" == cut.choices[0].finish_reason and cut.choices[0].message.content
    refused = client.chat.completions.create(**chat("answer [[sim:refusal]]"))
    assert refused.choices[0].message.refusal and refused.choices[0].message.content is None
    filtered = client.chat.completions.create(**chat("answer [[sim:content_filter]]"))
    assert "content_filter" == filtered.choices[0].finish_reason


def test_a_context_overflow_is_a_400_context_length_exceeded(clock):
    _sim, client = sim_and_client(clock)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**chat("answer [[sim:context]]"))
    assert "context_length_exceeded" == info.value.code
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**{**chat("x " * 300_000), "model": "gpt-3.5-turbo"})
    assert "maximum context length is 16385 tokens" in info.value.message


def test_bad_key_and_unknown_model(clock):
    sim, client = sim_and_client(clock)
    bad = openai_client(sim, async_=False, api_key="sk-bad")
    with pytest.raises(openai.AuthenticationError) as info:
        bad.chat.completions.create(**chat())
    assert "sk-bad" not in info.value.message
    with pytest.raises(openai.AuthenticationError):
        bad.files.list()
    with pytest.raises(openai.NotFoundError) as info:
        client.chat.completions.create(**{**chat(), "model": "gpt-2"})
    assert "model_not_found" == info.value.code
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**chat(), extra_body={"thinking": {"type": "enabled"}})
    assert "unknown_parameter" == info.value.code


# ------------------------------------------------------------------ files and batches


def test_a_batch_runs_validating_in_progress_finalizing_completed(clock):
    sim, client = sim_and_client(
        clock, batch_seconds=10, openai=OpenAIScenario(validating_seconds=1, finalizing_seconds=2)
    )
    lines = [line(f"c{i}", f"item {i}") for i in range(6)] + [line("bad", "item", max_tokens=5)]
    batch = start_batch(client, lines, metadata={"job": "j1", "sub_batch": "3"})
    seen = [batch.status]
    for _ in range(13):
        clock.advance(1)
        seen.append(client.batches.retrieve(batch.id).status)
    assert ["validating", "in_progress", "finalizing", "completed"] == list(dict.fromkeys(seen))
    done = client.batches.retrieve(batch.id)
    assert {"job": "j1", "sub_batch": "3"} == done.metadata and MODEL == done.model
    assert (7, 6, 1) == (done.request_counts.total, done.request_counts.completed, done.request_counts.failed)
    assert done.created_at < done.in_progress_at < done.finalizing_at < done.completed_at < done.expires_at
    out = read_lines(client, done.output_file_id)
    assert {f"c{i}" for i in range(6)} == {x["custom_id"] for x in out}
    for x in out:
        assert x["error"] is None and 200 == x["response"]["status_code"]
        ChatCompletion.model_validate(x["response"]["body"])
    assert done.usage.input_tokens == sum(x["response"]["body"]["usage"]["prompt_tokens"] for x in out)
    [err] = read_lines(client, done.error_file_id)
    assert ("bad", 400, "unsupported_parameter") == (
        err["custom_id"], err["response"]["status_code"], err["response"]["body"]["error"]["code"]
    )  # fmt: skip
    # the batch's answers are the sync route's answers for the same request
    sync = client.chat.completions.create(**chat("item 0"))
    [c0] = [x for x in out if x["custom_id"] == "c0"]
    assert sync.choices[0].message.content == c0["response"]["body"]["choices"][0]["message"]["content"]
    assert len(sim.openai.batches()) == 1


def test_results_come_in_an_order_other_than_the_inputs(clock):
    _sim, client = sim_and_client(clock)
    batch = start_batch(client, [line(f"c{i:02}", f"item {i}") for i in range(30)])
    clock.advance(5)
    out = read_lines(client, client.batches.retrieve(batch.id).output_file_id)
    order = [x["custom_id"] for x in out]
    assert sorted(order) == [f"c{i:02}" for i in range(30)] != order


@pytest.mark.parametrize(
    ("lines", "code", "line_no"),
    [
        ([line("a", "x"), line(None, "y")], "missing_required_parameter", 2),
        ([line("a", "x"), line("a", "y")], "duplicate_custom_id", 2),
        ([line("a", "x"), line("b", "y", model="gpt-4o")], "mismatched_model", 2),
        ([line("a", "x", url="/v1/embeddings")], "invalid_url", 1),
        ([line("a", "x", model="gpt-2")], "model_not_found", 1),
        ([b"{not json"], "invalid_json_line", 1),
    ],
)
def test_a_file_breaking_a_rule_fails_validation_after_create(clock, lines, code, line_no):
    _sim, client = sim_and_client(clock)
    batch = start_batch(client, lines)
    assert "validating" == batch.status  # the create succeeds: only polling shows the failure
    clock.advance(1)
    failed = client.batches.retrieve(batch.id)
    assert "failed" == failed.status and failed.failed_at is not None
    assert code in [e.code for e in failed.errors.data]
    assert line_no in [e.line for e in failed.errors.data if e.code == code]
    assert failed.output_file_id is None and failed.error_file_id is None


def test_a_file_over_the_line_or_byte_limit_fails_validation(clock):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(max_file_lines=3, max_file_bytes=50_000))
    many = start_batch(client, [line(f"c{i}", "x") for i in range(4)])  # ~10 KB
    big = start_batch(client, [line("c", "x" * 60_000)])
    clock.advance(1)
    assert "too_many_requests" == client.batches.retrieve(many.id).errors.data[0].code
    assert "file_too_large" == client.batches.retrieve(big.id).errors.data[0].code


def test_the_enqueued_token_limit_fails_a_later_batch_once_polled(clock):
    _sim, client = sim_and_client(clock, batch_seconds=100, openai=OpenAIScenario(enqueued_token_limit=6_000))
    first = start_batch(client, [line(f"a{i}", f"item {i}") for i in range(2)])  # ~4,200 prompt tokens
    clock.advance(1)
    second = start_batch(client, [line(f"b{i}", f"item {i}") for i in range(2)])
    assert "validating" == second.status
    clock.advance(1)
    failed = client.batches.retrieve(second.id)
    assert ("failed", "token_limit_exceeded") == (failed.status, failed.errors.data[0].code)
    assert "in_progress" == client.batches.retrieve(first.id).status
    clock.advance(200)  # once the first is done, the same requests go through
    again = start_batch(client, [line(f"b{i}", f"item {i}") for i in range(2)])
    clock.advance(101)
    assert "completed" == client.batches.retrieve(again.id).status


def test_an_expired_batch_keeps_what_completed_and_writes_the_rest_as_batch_expired(clock):
    _sim, client = sim_and_client(clock, batch_seconds=100, expires_after=40)
    batch = start_batch(client, [line(f"c{i}", f"item {i}") for i in range(10)])
    clock.advance(39)
    assert "in_progress" == client.batches.retrieve(batch.id).status
    clock.advance(2)
    expired = client.batches.retrieve(batch.id)
    assert "expired" == expired.status and expired.expired_at is not None
    out, err = read_lines(client, expired.output_file_id), read_lines(client, expired.error_file_id)
    assert (4, 6) == (len(out), len(err))
    assert {"batch_expired"} == {x["error"]["code"] for x in err}
    assert all(x["response"] is None for x in err)
    assert (10, 4, 6) == (
        expired.request_counts.total,
        expired.request_counts.completed,
        expired.request_counts.failed,
    )


def test_a_cancelled_batch_keeps_what_completed(clock):
    _sim, client = sim_and_client(clock, batch_seconds=10, cancel_seconds=2)
    batch = start_batch(client, [line(f"c{i}", f"item {i}") for i in range(10)])
    clock.advance(5)
    assert "cancelling" == client.batches.cancel(batch.id).status
    clock.advance(1)
    assert "cancelling" == client.batches.retrieve(batch.id).status
    clock.advance(1)
    cancelled = client.batches.retrieve(batch.id)
    assert "cancelled" == cancelled.status and cancelled.cancelled_at is not None
    assert 5 == len(read_lines(client, cancelled.output_file_id))
    with pytest.raises(openai.ConflictError):
        client.batches.cancel(batch.id)


def test_a_failed_batch_by_knob_and_line_outcomes_by_marker(clock):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(batch_fail={1: "invalid_request"}))
    refused = start_batch(client, [line("a", "x")])
    marked = start_batch(client, [line("ok", "x"), line("ctx", "x [[sim:context]]"), line("cut", "y [[sim:max_tokens]]"),
                                  line("boom", "z [[sim:api_error]]")])  # fmt: skip
    clock.advance(5)
    assert "failed" == client.batches.retrieve(refused.id).status
    done = client.batches.retrieve(marked.id)
    out = {x["custom_id"]: x for x in read_lines(client, done.output_file_id)}
    err = {x["custom_id"]: x for x in read_lines(client, done.error_file_id)}
    assert {"ok", "cut"} == set(out) and {"ctx", "boom"} == set(err)
    assert "length" == out["cut"]["response"]["body"]["choices"][0]["finish_reason"]
    assert "context_length_exceeded" == err["ctx"]["response"]["body"]["error"]["code"]
    assert 500 == err["boom"]["response"]["status_code"]


def test_create_refuses_bad_arguments(clock):
    _sim, client = sim_and_client(clock)
    f = upload(client, [line("a", "x")])
    with pytest.raises(openai.NotFoundError):
        client.batches.create(
            input_file_id="file-nope", endpoint="/v1/chat/completions", completion_window="24h"
        )
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="48h")  # type: ignore[arg-type]
    with pytest.raises(openai.BadRequestError):
        client.batches.create(input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h",
                              metadata={f"k{i}": "v" for i in range(17)})  # fmt: skip
    with pytest.raises(openai.BadRequestError):
        client.files.create(file=("requests.txt", b"{}\n"), purpose="batch")


def test_files_list_get_delete_and_batches_paginate(clock):
    _sim, client = sim_and_client(clock)
    ids = []
    for i in range(5):
        ids.append(start_batch(client, [line("a", f"x{i}")], metadata={"n": str(i)}).id)
        clock.advance(1)
    page = client.batches.list(limit=2)
    assert ids[::-1][:2] == [b.id for b in page.data] and page.has_more
    assert ids[::-1] == [b.id for b in client.batches.list(limit=2)]  # the SDK follows `after`
    assert ["4", "3", "2", "1", "0"] == [b.metadata["n"] for b in client.batches.list()]
    inputs = client.files.list(purpose="batch")
    assert 5 == len(inputs.data) and all(isinstance(f, FileObject) for f in inputs.data)
    gone = client.files.delete(inputs.data[0].id)
    assert gone.deleted
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(inputs.data[0].id)
    assert 4 == len(client.files.list(purpose="batch").data)


def test_held_and_lost_creates_and_uploads_leave_the_object_behind(clock):
    sim, client = sim_and_client(
        clock,
        openai=OpenAIScenario(upload_faults={1: "persist_then_500"}, create_faults={1: "persist_then_drop"}),
    )
    with pytest.raises(openai.InternalServerError):
        upload(client, [line("a", "x")])
    [stored] = client.files.list().data  # the upload happened: a run finds it by listing
    with pytest.raises(openai.APIConnectionError):
        client.batches.create(input_file_id=stored.id, endpoint="/v1/chat/completions", completion_window="24h",
                              metadata={"job": "j"})  # fmt: skip
    [batch] = client.batches.list().data
    assert {"job": "j"} == batch.metadata and 1 == len(sim.openai.batches())


def test_an_output_file_cut_mid_download_reads_whole_the_second_time(clock):
    _sim, client = sim_and_client(clock, results_drop_after_lines=3)
    batch = start_batch(client, [line(f"c{i}", f"item {i}") for i in range(8)])
    clock.advance(5)
    out_id = client.batches.retrieve(batch.id).output_file_id
    with pytest.raises(openai.APIConnectionError):
        client.files.content(out_id).content  # noqa: B018
    assert 8 == len(read_lines(client, out_id))


# ------------------------------------------------------------------ served (vLLM) mode and self-preference

SERVED = "Qwen/Qwen3-32B"


def test_a_served_model_sends_no_rate_limit_headers_and_vllms_error_shape(clock):
    _sim, client = sim_and_client(clock, openai=OpenAIScenario(served_context=4_000))
    raw = client.chat.completions.with_raw_response.create(
        **{**chat(), "model": SERVED, "max_tokens": 100, "temperature": 0}
    )
    assert not [h for h in raw.headers if h.startswith("x-ratelimit")]
    assert raw.parse().choices[0].message.content.startswith("Score: ")
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**{**chat("x " * 10_000), "model": SERVED})
    body = info.value.body
    assert 400 == body["code"] and "BadRequestError" == body["type"] and "400" == info.value.code
    assert "your request has" in body["message"] and "input tokens" in body["message"]
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(**{**chat(), "model": SERVED, "max_completion_tokens": 3_000})
    assert "'max_tokens' or 'max_completion_tokens' is too large" in info.value.message


def test_served_context_overflow_comes_in_vllms_three_wordings(clock):
    _sim, client = sim_and_client(clock)
    wordings = set()
    for i in range(30):
        with pytest.raises(openai.BadRequestError) as info:
            client.chat.completions.create(**{**chat(f"item {i} [[sim:context]]"), "model": SERVED})
        message = info.value.message
        wordings.add(
            "input" if "your request has" in message and "too large" not in message
            else "requested" if "you requested" in message else "too_large" if "is too large" in message else message
        )  # fmt: skip
    assert {"input", "requested", "too_large"} == wordings


def test_a_bounded_served_queue_refuses_with_503_and_latency_climbs(clock):
    sim, client = sim_and_client(
        clock, openai=OpenAIScenario(served_slots=2, served_latency=1.0, served_max_queued=2)
    )
    stalls = []
    for i in range(4):
        stalls.append(sim.handle(served_request(f"q{i}")).stall)
    assert [1.0, 1.0, 1.5, 2.0] == stalls
    with pytest.raises(openai.InternalServerError) as info:
        client.chat.completions.create(**{**chat("one more"), "model": SERVED})
    assert 503 == info.value.status_code and 503 == info.value.body["code"]
    clock.advance(3)
    assert client.chat.completions.create(**{**chat("later"), "model": SERVED}).choices


def served_request(text: str):
    from adapters.simulator.wire import SimRequest

    body = orjson.dumps({**chat(text), "model": SERVED})
    return SimRequest(method="POST", path="/v1/chat/completions", body=body,
                      headers=(("content-type", "application/json"),))  # fmt: skip


def test_a_served_api_key_is_required_when_set(clock):
    sim, _client = sim_and_client(clock, openai=OpenAIScenario(served_api_key="s3cret"))
    with pytest.raises(openai.AuthenticationError):
        openai_client(sim, async_=False, api_key="other").chat.completions.create(
            **{**chat(), "model": SERVED}
        )
    ok = openai_client(sim, async_=False, api_key="s3cret").chat.completions.create(
        **{**chat(), "model": SERVED}
    )
    assert ok.choices


def mean_scores(client: openai.OpenAI, model: str, author: str, n: int = 30) -> float:
    scores = []
    for i in range(n):
        text = f"Model: {author}\nAnswer #{i}: the capital of France is Paris."
        reply = client.chat.completions.create(**{**chat(text), "model": model})
        scores.append(int(reply.choices[0].message.content.split("\n")[0].split(": ")[1]))
    return statistics.mean(scores)


def test_self_preference_raises_a_judges_scores_on_its_own_familys_answers_only(clock):
    _sim, plain = sim_and_client(clock)
    _sim, biased = sim_and_client(clock, self_preference={"gpt": 0.8})
    own_plain, own_biased = mean_scores(plain, MODEL, "gpt-4o"), mean_scores(biased, MODEL, "gpt-4o")
    other_plain, other_biased = (
        mean_scores(plain, MODEL, "claude-opus-4-8"),
        mean_scores(biased, MODEL, "claude-opus-4-8"),
    )
    assert own_biased > own_plain + 2
    assert other_biased == other_plain  # answers by another family are left alone
    # a judge of another family is not biased by a `gpt` knob
    assert mean_scores(biased, SERVED, "gpt-4o") == mean_scores(plain, SERVED, "gpt-4o")


def test_self_preference_applies_on_the_anthropic_wire_too(clock):
    from adapters.simulator.transport import sim_client

    def mean(sim: Simulator) -> float:
        client = sim_client(sim, async_=False)
        texts = [
            client.messages.create(model="claude-opus-4-8", max_tokens=200, system=RUBRIC,
                                   messages=[{"role": "user", "content": f"Model: claude-sonnet-4-6\nAnswer {i}"}]).content[0].text
            for i in range(40)
        ]  # fmt: skip
        return statistics.mean(int(t.split("\n")[0].split(": ")[1]) for t in texts)

    assert mean(Simulator(Scenario(self_preference={"claude": 1.0}), clock=clock)) == 10
    assert mean(Simulator(Scenario(), clock=clock)) < 8


def test_the_async_client_in_process_runs_chat_and_a_batch(clock):
    import asyncio

    sim = Simulator(Scenario(), clock=clock)
    client = openai_client(sim)  # AsyncOpenAI

    async def run() -> tuple[list[ChatCompletion], Batch, bytes]:
        replies = await asyncio.gather(*(client.chat.completions.create(**chat(f"a{i}")) for i in range(5)))
        f = await client.files.create(
            file=("in.jsonl", b"\n".join(line(f"c{i}", f"x{i}") for i in range(4))), purpose="batch"
        )
        batch = await client.batches.create(
            input_file_id=f.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        clock.advance(5)
        done = await client.batches.retrieve(batch.id)
        return list(replies), done, (await client.files.content(done.output_file_id)).content

    replies, done, content = asyncio.run(run())
    assert all(r.choices[0].message.content.startswith("Score: ") for r in replies)
    assert "completed" == done.status and 4 == len(content.splitlines())


def test_models_are_listed_for_the_openai_sdk_and_the_anthropic_side_keeps_its_own(clock):
    from adapters.simulator.transport import sim_client

    sim, client = sim_and_client(clock)
    listed = {m.id: m for m in client.models.list()}
    assert MODEL in listed and SERVED in listed and "vllm" == listed[SERVED].owned_by
    assert "gpt-4o" == client.models.retrieve("gpt-4o").id
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-2")
    # the Anthropic SDK's /v1/models request is not answered by the OpenAI side
    import anthropic

    with pytest.raises(anthropic.NotFoundError):
        sim_client(sim, async_=False).models.retrieve("claude-opus-4-8")


def test_a_batchs_cost_grows_linearly_with_its_lines(clock):
    """A 50,000-line batch must stay cheap to simulate: 4x the lines costs about 4x the CPU, not 16x."""
    import time

    def cost(n: int) -> float:
        _sim, client = sim_and_client(clock)
        rows = [line(f"c{i}", f"item {i}") for i in range(n)]
        started = time.process_time()
        batch = start_batch(client, rows)
        clock.advance(5)
        done = client.batches.retrieve(batch.id)
        assert n == len(client.files.content(done.output_file_id).content.splitlines())
        return time.process_time() - started

    small, large = cost(500), cost(2_000)
    assert large / small < 8, f"{small:.2f} s for 500 lines, {large:.2f} s for 2,000"


def test_every_answer_validates_strictly_against_the_sdks_types(clock):
    """The SDK builds its types without validating them; here each body the simulator sent is validated
    (pydantic `model_validate`: a wrong literal, a missing field or a wrong type fails)."""
    from openai.types import FileDeleted, Model
    from openai.types.batch_error import BatchError

    sim, client = sim_and_client(
        clock, batch_seconds=10, expires_after=8, cancel_seconds=1,
        openai=OpenAIScenario(validating_seconds=1, finalizing_seconds=1),
    )  # fmt: skip
    sent: list[tuple[str, str, int, bytes]] = []
    handle = sim.handle

    def recording(request):
        response = handle(request)
        sent.append((request.method, request.path, response.status, response.body))
        return response

    sim.handle = recording  # type: ignore[method-assign]
    client.chat.completions.create(**chat())
    client.chat.completions.create(**chat("x [[sim:refusal]]"))
    client.chat.completions.create(**chat("x [[sim:content_filter]]"))
    client.chat.completions.create(**{**chat(), "model": SERVED})
    expiring = start_batch(client, [line(f"c{i}", f"x{i}") for i in range(4)])
    cancelled = start_batch(client, [line(f"d{i}", f"x{i}") for i in range(4)])
    failed = start_batch(client, [line("a", "x"), line("a", "y")])
    for t in range(12):
        clock.advance(1)
        for b in (expiring, cancelled, failed):
            client.batches.retrieve(b.id)
        if t == 3:
            client.batches.cancel(cancelled.id)
    bodies = [orjson.loads(body) for _m, p, st, body in sent if p.startswith("/v1/batches") and st == 200]
    statuses = {Batch.model_validate(x).status for x in bodies if x.get("object") == "batch"}
    assert {"validating", "in_progress", "expired", "cancelling", "cancelled", "failed"} <= statuses
    client.batches.list()
    client.files.list()
    client.models.list()
    client.files.delete(client.files.list(purpose="batch").data[0].id)
    for method, path, status, body in sent:
        if path.endswith("/content") and status == 200:
            continue  # JSON Lines, read by the batch tests
        data = orjson.loads(body)
        if status != 200:
            assert set(data["error"]) >= {"message", "type", "param", "code"}
        elif path == "/v1/chat/completions":
            ChatCompletion.model_validate(data)
        elif path.startswith("/v1/batches") and "object" in data and data["object"] == "list":
            [Batch.model_validate(x) for x in data["data"]]
        elif path.startswith("/v1/batches"):
            batch = Batch.model_validate(data)
            for e in batch.errors.data if batch.errors else ():
                BatchError.model_validate(e.model_dump())
        elif path == "/v1/files" and method == "GET":
            [FileObject.model_validate(x) for x in data["data"]]
        elif path.startswith("/v1/files") and method == "DELETE":
            FileDeleted.model_validate(data)
        elif path.startswith("/v1/files"):
            FileObject.model_validate(data)
        elif path == "/v1/models":
            [Model.model_validate(x) for x in data["data"]]
