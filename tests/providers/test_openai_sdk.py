"""The OpenAI ports through the real `openai` SDK, against a tiny fake served over httpx's MockTransport:
one HTTP send per call (the SDK's retries off), every taxonomy row as `classify` reads it, uploads
streamed under their exact length, results read from both files, finders for a run that comes back."""

from __future__ import annotations

import asyncio
import io

import orjson
import pytest
from httpx2._utils import peek_filelike_length

from adapters.providers.anthropic.batch_api import BatchApiError
from adapters.providers.openai.batch import BatchMeta, OpenAIBatchApi, UploadBody, _BodyReader
from adapters.providers.openai.body import OpenAITemplate
from adapters.providers.openai.sync import OpenAIChatApi
from judgecore.results.outcomes import CONNECT_FAILED, FailureClass, Status, classify
from tests.providers.fake_openai import BASE_URL, FakeOpenAI
from tests.providers.test_openai_translate import ANSWERS, ERRORS, HEADERS, completion, error

MESSAGES = b'[{"role":"user","content":"Is 2+2=4? Answer 1-5."}]'
TEMPLATE = OpenAITemplate.build(model="gpt-5-mini", max_completion_tokens=256, rubric="You grade answers.")
NOW = 1_800_000_000.0


def run(coro):
    return asyncio.run(coro)


def sync_api(fake: FakeOpenAI) -> OpenAIChatApi:
    return OpenAIChatApi(fake.client(), now=lambda: NOW)


# -- the sync port -----------------------------------------------------------------------------


def test_an_answer_comes_back_with_its_reading_and_request_id():
    fake = FakeOpenAI()
    fake.answer(200, completion(), HEADERS)
    raw, reading, request_id = run(sync_api(fake).create(TEMPLATE.params(None, MESSAGES)))
    assert ("The score is 4.", "end_turn", "gpt-5-mini-2025-08-07") == (raw.text, raw.stop_reason, raw.model)
    assert (476, 1024) == (raw.usage.input_tokens, raw.usage.cache_read_input_tokens)
    assert (4_000_000, NOW + 360.0) == (reading.tokens.limit, reading.tokens.reset)
    assert "req_1" == request_id


def test_the_body_sent_is_the_templates():
    fake = FakeOpenAI()
    fake.answer(200, completion())
    run(sync_api(fake).create(TEMPLATE.params(99, MESSAGES)))
    (request,) = fake.requests
    assert ("POST", "/v1/chat/completions") == (request.method, request.url.path)
    assert orjson.loads(TEMPLATE.body(99, MESSAGES)) == orjson.loads(request.content)
    assert "Bearer sk-test-not-a-key" == request.headers["authorization"]


@pytest.mark.parametrize("row", ANSWERS, ids=list(ANSWERS))
def test_every_answer_row_classifies_through_the_sdk(row):
    body, status, failure = ANSWERS[row]
    fake = FakeOpenAI()
    fake.answer(200, body)
    raw, _, _ = run(sync_api(fake).create(TEMPLATE.params(None, MESSAGES)))
    assert (status, failure) == (classify(raw).status, classify(raw).failure)


@pytest.mark.parametrize("row", ERRORS, ids=list(ERRORS))
def test_every_error_row_classifies_through_the_sdk_after_exactly_one_send(row):
    """The SDK would retry 429 and 5xx twice by itself: the port sends once and lets the run decide."""
    status_code, body, status, failure = ERRORS[row]
    fake = FakeOpenAI()
    fake.answer(status_code, body, {"retry-after-ms": "10"})
    raw, _, request_id = run(sync_api(fake).create(TEMPLATE.params(None, MESSAGES)))
    assert (status, failure) == (classify(raw).status, classify(raw).failure)
    assert 1 == len(fake.requests)
    assert "req_1" == request_id


def test_a_429_carries_its_wait_and_the_reading_of_its_headers():
    fake = FakeOpenAI()
    fake.answer(
        429,
        error("Rate limit reached", "tokens", "rate_limit_exceeded"),
        {**HEADERS, "x-ratelimit-remaining-tokens": "0"},
    )
    raw, reading, _ = run(sync_api(fake).create(TEMPLATE.params(None, MESSAGES)))
    outcome = classify(raw)
    assert (Status.RETRY, 360.0) == (outcome.status, outcome.retry_after)
    assert 0 == reading.tokens.remaining


def test_a_refused_connection_names_the_endpoint_and_its_variable():
    fake = FakeOpenAI()
    fake.refuse_connections = True
    raw, _, request_id = run(sync_api(fake).create(TEMPLATE.params(None, MESSAGES)))
    assert (CONNECT_FAILED, None) == (raw.error_type, request_id)
    assert BASE_URL in (raw.message or "") and "OPENAI_BASE_URL" in (raw.message or "")
    assert 1 == len(fake.requests)
    assert "sk-test" not in (raw.message or "")


def test_the_clients_own_retry_setting_is_overridden():
    fake = FakeOpenAI()
    fake.answer(503, error("busy", "server_error"))
    fake.answer(200, completion())
    api = OpenAIChatApi(fake.client(max_retries=5), now=lambda: NOW)
    raw, _, _ = run(api.create(TEMPLATE.params(None, MESSAGES)))
    assert ("http_error", 1) == (raw.kind, len(fake.requests))


# -- the batch port ----------------------------------------------------------------------------

META = BatchMeta(job="j3f9", sub_batch="0")


def upload_body(n: int = 3) -> tuple[UploadBody, bytes, list[int]]:
    requests = [(f"cid-{i}", None) for i in range(n)]
    pulls: list[int] = []

    def chunks():
        pulls.append(1)
        return TEMPLATE.lines(requests, [MESSAGES] * n)

    whole = b"".join(TEMPLATE.lines(requests, [MESSAGES] * n))
    return UploadBody(chunks, len(whole)), whole, pulls


def batch_api(fake: FakeOpenAI, **kw) -> OpenAIBatchApi:
    return OpenAIBatchApi(fake.client(), now=lambda: NOW, **kw)


def test_an_upload_sends_the_file_once_under_its_name_and_exact_length():
    fake = FakeOpenAI()
    body, whole, _ = upload_body()
    file_id = run(batch_api(fake).upload(body, META))
    (request,) = fake.requests
    assert "chunked" not in request.headers.get("transfer-encoding", "")
    assert len(request.content) == int(request.headers["content-length"])
    stored = fake.files[file_id]
    assert ("judgecore-j3f9-0.jsonl", "batch", whole) == (
        stored["filename"],
        stored["purpose"],
        fake.contents[file_id],
    )


def test_a_failed_upload_is_sent_once_and_raised_as_its_result():
    fake = FakeOpenAI()
    fake.fail_next.append((500, error("upload failed", "server_error")))
    body, _, _ = upload_body()
    with pytest.raises(BatchApiError) as caught:
        run(batch_api(fake).upload(body, META))
    assert (Status.RETRY, 1) == (classify(caught.value.raw).status, len(fake.requests))


def test_the_upload_reader_rewinds_measures_and_reads_a_piece_at_a_time():
    body, whole, pulls = upload_body(200)
    reader = _BodyReader(body)
    assert len(whole) == peek_filelike_length(reader)
    reader.seek(0)
    first = reader.read(4096)
    assert whole[:4096] == first
    assert 0 < reader.tell() < len(whole)
    with pytest.raises(io.UnsupportedOperation):
        reader.seek(10)
    reader.seek(0)
    assert whole == b"".join(iter(lambda: reader.read(65536), b""))
    assert len(pulls) >= 2  # each rewind made the pieces afresh: nothing was kept


def test_a_body_shorter_than_its_size_is_an_error_not_a_torn_upload():
    body = UploadBody(lambda: [b"abc"], 10)
    reader = _BodyReader(body)
    with pytest.raises(ValueError, match="ended at 3 bytes, not its 10"):
        while reader.read(4):
            pass


def test_a_create_names_the_file_the_endpoint_the_window_and_the_sub_batch():
    fake = FakeOpenAI()
    file_id = fake.add_file(b"{}\n", filename=META.filename, purpose="batch")
    batch = run(batch_api(fake).create(file_id, META))
    (request,) = fake.requests
    assert {
        "input_file_id": file_id,
        "endpoint": "/v1/chat/completions",
        "completion_window": "24h",
        "metadata": {"judgecore_job": "j3f9", "judgecore_sub_batch": "0"},
    } == orjson.loads(request.content)
    assert (file_id, "in_progress", META.metadata()) == (
        batch.input_file_id,
        batch.snapshot().status,
        batch.metadata,
    )


def test_a_failed_create_is_sent_once():
    fake = FakeOpenAI()
    fake.fail_next.append((503, error("busy", "server_error")))
    with pytest.raises(BatchApiError):
        run(batch_api(fake).create("file-1", META))
    assert 1 == len(fake.requests)


def test_after_a_kill_between_upload_and_create_the_file_is_found_not_uploaded_again():
    fake = FakeOpenAI()
    fake.add_file(b"x", filename="judgecore-j3f9-1.jsonl", purpose="batch")
    body, _, _ = upload_body()
    uploaded = run(batch_api(fake).upload(body, META))
    fake.add_file(b"y", filename="judgecore-other-0.jsonl", purpose="batch")
    fake.add_file(b"z", filename=META.filename, purpose="batch_output")
    api = batch_api(fake, list_page=1)  # one file a page: the finder pages on
    assert uploaded == run(api.find_upload(META))
    assert None is run(api.find_upload(BatchMeta("j3f9", "7")))
    assert None is run(api.find_upload(META, since=fake.files[uploaded]["created_at"] + 1))


def test_after_a_kill_between_create_and_record_the_batch_is_found_by_its_metadata():
    fake = FakeOpenAI()
    api = batch_api(fake, list_page=1)
    mine = run(api.create("file-a", META))
    run(api.create("file-b", BatchMeta("j3f9", "1")))
    run(api.create("file-c", BatchMeta("other", "0")))
    found = run(api.find_batch(META))
    assert found is not None and mine.id == found.id
    assert None is run(api.find_batch(BatchMeta("j3f9", "2")))
    assert None is run(api.find_batch(META, since=mine.created_at + 1))


def test_retrieve_and_cancel_read_the_batch():
    fake = FakeOpenAI()
    api = batch_api(fake)
    made = run(api.create("file-a", META))
    fake.batches[made.id].update(
        status="in_progress", request_counts={"completed": 2, "failed": 1, "total": 5}
    )
    got = run(api.retrieve(made.id))
    assert (2, 2, 1) == (got.snapshot().counts.processing, got.completed, got.failed)
    assert "canceling" == run(api.cancel(made.id)).snapshot().status


def test_a_retrieve_refused_for_the_key_raises_a_fatal_result():
    fake = FakeOpenAI()
    fake.fail_next.append((401, error("Incorrect API key provided", code="invalid_api_key")))
    with pytest.raises(BatchApiError) as caught:
        run(batch_api(fake).retrieve("batch_1"))
    assert FailureClass.FATAL_CONFIG == classify(caught.value.raw).failure
    assert "sk-test" not in str(caught.value)


def _line(custom_id, response=None, err=None):
    return orjson.dumps({"id": f"br_{custom_id}", "custom_id": custom_id, "response": response, "error": err})


def test_results_stream_the_output_file_then_the_error_file_by_custom_id():
    fake = FakeOpenAI()
    out = b"\n".join(
        [
            _line("c2", {"status_code": 200, "request_id": "r", "body": completion(content="B")}),
            _line(
                "c1",
                {"status_code": 200, "request_id": "r", "body": completion(content="A", finish="length")},
            ),
        ]
    )  # no newline at the end: the last line is read all the same
    err = (
        _line(
            "c3",
            {
                "status_code": 400,
                "request_id": "r",
                "body": error("maximum context length is 128000", code="context_length_exceeded"),
            },
        )
        + b"\n"
        + _line("c4", None, {"code": "batch_expired", "message": "not run"})
        + b"\n"
    )
    api = batch_api(fake)
    made = run(api.create("file-in", META))
    fake.batches[made.id].update(
        status="expired",
        output_file_id=fake.add_file(out),
        error_file_id=fake.add_file(err),
        request_counts={"completed": 2, "failed": 1, "total": 4},
    )

    async def collect():
        batch = await api.retrieve(made.id)
        return [(cid, o.status, o.failure, o.text) async for lines in api.results(batch) for cid, o in lines]

    assert [
        ("c2", Status.SUCCEEDED, None, "B"),
        ("c1", Status.MISS, FailureClass.MODEL_TRUNCATION, "A"),
        ("c3", Status.MISS, FailureClass.MODEL_CONTEXT, None),
        ("c4", Status.RETRY, FailureClass.NOT_RUN, None),
    ] == run(collect())


def test_a_torn_results_line_raises_rather_than_losing_it_silently():
    fake = FakeOpenAI()
    api = batch_api(fake)
    made = run(api.create("file-in", META))
    fake.batches[made.id].update(
        status="completed", output_file_id=fake.add_file(b'{"custom_id": "c1", "resp')
    )

    async def collect():
        return [x async for lines in api.results(await api.retrieve(made.id)) for x in lines]

    with pytest.raises(BatchApiError):
        run(collect())


def test_discard_deletes_the_input_output_and_error_files_and_a_gone_file_is_no_error():
    fake = FakeOpenAI()
    api = batch_api(fake)
    inp = fake.add_file(b"in", filename=META.filename, purpose="batch")
    made = run(api.create(inp, META))
    fake.batches[made.id].update(
        status="completed", output_file_id=fake.add_file(b""), error_file_id="file-gone"
    )
    run(api.discard(run(api.retrieve(made.id))))
    assert {} == fake.files
    assert False is run(api.delete_file(inp))


def test_a_plain_install_is_told_which_extra_to_add(monkeypatch):
    import adapters.providers.openai as port

    assert None is port.missing_extra()
    monkeypatch.setattr(port, "find_spec", lambda name: None)
    assert "pip install 'judgecore[openai]'" in (port.missing_extra() or "")
