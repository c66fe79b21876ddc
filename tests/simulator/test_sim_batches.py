"""Message Batches through the real SDK over the in-process transport: lifecycle, counts, results,
list pagination, cancel, expiry, create-time validation, outcome mixes, markers and create faults."""

from __future__ import annotations

import asyncio
from collections import Counter

import anthropic
import httpx2
import pytest

from adapters.simulator.logic import Simulator
from adapters.simulator.transport import sim_client

from .support import batch_requests, cached_system, params


def submit(sim: Simulator, requests: list[dict], **client_kw) -> anthropic.types.messages.MessageBatch:
    return sim_client(sim, async_=False, **client_kw).messages.batches.create(requests=requests)


def results(sim: Simulator, batch_id: str) -> list:
    return list(sim_client(sim, async_=False).messages.batches.results(batch_id))


def test_batch_starts_in_progress_with_all_processing(make_sim):
    sim = make_sim()
    batch = submit(sim, batch_requests(3))
    assert batch.id.startswith("msgbatch_")
    assert batch.processing_status == "in_progress"
    assert batch.request_counts.processing == 3
    assert batch.request_counts.succeeded == 0
    assert batch.results_url is None
    assert (batch.expires_at - batch.created_at).total_seconds() == 86_400


def test_counts_jump_only_at_the_end(make_sim, clock):
    sim = make_sim(batch_seconds=10)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(4))
    clock.advance(9.9)
    mid = client.messages.batches.retrieve(batch.id)
    assert (
        mid.processing_status,
        mid.request_counts.processing,
        mid.request_counts.succeeded,
    ) == ("in_progress", 4, 0)
    with pytest.raises(anthropic.AnthropicError, match="No `results_url`"):
        client.messages.batches.results(batch.id)
    clock.advance(0.1)
    done = client.messages.batches.retrieve(batch.id)
    assert done.processing_status == "ended"
    assert (done.request_counts.processing, done.request_counts.succeeded) == (0, 4)
    assert (done.ended_at - done.created_at).total_seconds() == 10
    assert done.results_url == f"http://simulator.local/v1/messages/batches/{batch.id}/results"


def test_results_stream_every_custom_id_once_in_shuffled_order(make_sim, clock):
    sim = make_sim()
    batch = submit(sim, batch_requests(40))
    clock.advance(2)
    got = results(sim, batch.id)
    ids = [r.custom_id for r in got]
    assert sorted(f"r{i}" for i in range(40)) == sorted(ids)
    assert [f"r{i}" for i in range(40)] != ids
    assert {"succeeded"} == {r.result.type for r in got}
    message = got[0].result.message
    assert message.usage.service_tier == "batch"
    assert message.content[0].text.startswith("Score: ")


def test_results_body_is_plain_newline_jsonl(make_sim, clock):
    sim = make_sim()
    batch = submit(sim, batch_requests(5))
    clock.advance(2)
    client = sim_client(sim, async_=False)
    url = client.messages.batches.retrieve(batch.id).results_url
    body = client.get(url, cast_to=httpx2.Response).content
    assert body.endswith(b"\n")
    assert b"\r" not in body
    assert b"\n\n" not in body
    assert body.count(b"\n") == 5


def test_async_client_runs_the_whole_lifecycle(make_sim, clock):
    sim = make_sim()

    async def run() -> list[str]:
        client = sim_client(sim)
        batch = await client.messages.batches.create(requests=batch_requests(7))
        clock.advance(2)
        assert (await client.messages.batches.retrieve(batch.id)).processing_status == "ended"
        return [r.custom_id async for r in await client.messages.batches.results(batch.id)]

    assert len(set(asyncio.run(run()))) == 7


def test_batch_answer_matches_sync_answer(make_sim, clock):
    sim = make_sim()
    batch = submit(sim, [{"custom_id": "a", "params": params("same question")}])
    clock.advance(2)
    sync = sim_client(sim, async_=False).messages.create(**params("same question"))
    assert sync.content[0].text == results(sim, batch.id)[0].result.message.content[0].text


def test_list_is_newest_first_and_auto_paginates(make_sim, clock):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    created = []
    for i in range(7):
        created.append(client.messages.batches.create(requests=batch_requests(1, prefix=f"b{i}-")).id)
        clock.advance(1)
    page = client.messages.batches.list(limit=3)
    assert created[::-1][:3] == [b.id for b in page.data]
    assert page.has_more
    assert created[::-1] == [b.id for b in client.messages.batches.list(limit=3)]
    before = client.messages.batches.list(limit=2, before_id=created[2])
    assert [created[4], created[3]] == [b.id for b in before.data]
    # the SDK pages backwards with before_id=<first_id>, so newer pages come after older ones
    assert [created[4], created[3], created[6], created[5]] == [
        b.id for b in client.messages.batches.list(limit=2, before_id=created[2])
    ]


@pytest.mark.parametrize("limit", [0, 1001])
def test_list_limit_out_of_range_is_rejected(make_sim, limit):
    with pytest.raises(anthropic.BadRequestError):
        sim_client(make_sim(), async_=False).messages.batches.list(limit=limit)


def test_cancel_then_ended_with_unprocessed_requests_canceled(make_sim, clock):
    sim = make_sim(batch_seconds=10, cancel_seconds=1)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(10))
    clock.advance(5)
    canceling = client.messages.batches.cancel(batch.id)
    assert canceling.processing_status == "canceling"
    assert canceling.cancel_initiated_at is not None
    assert canceling.request_counts.processing == 10
    clock.advance(1)
    ended = client.messages.batches.retrieve(batch.id)
    assert ended.processing_status == "ended"
    assert (ended.request_counts.succeeded, ended.request_counts.canceled) == (5, 5)
    assert Counter({"succeeded": 5, "canceled": 5}) == Counter(r.result.type for r in results(sim, batch.id))


def test_cancel_after_end_is_rejected_and_delete_needs_end(make_sim, clock):
    sim = make_sim()
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(1))
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.delete(batch.id)
    clock.advance(2)
    with pytest.raises(anthropic.BadRequestError):
        client.messages.batches.cancel(batch.id)
    assert client.messages.batches.delete(batch.id).type == "message_batch_deleted"
    with pytest.raises(anthropic.NotFoundError):
        client.messages.batches.retrieve(batch.id)


def test_batch_past_its_deadline_ends_with_the_rest_expired(make_sim, clock):
    sim = make_sim(batch_seconds=100, expires_after=40)
    batch = submit(sim, batch_requests(10))
    clock.advance(1000)
    view = sim.batch(batch.id)
    assert view.processing_status == "ended"
    assert view.ended_at == view.expires_at
    assert dict(view.request_counts) == {
        "succeeded": 4,
        "errored": 0,
        "canceled": 0,
        "expired": 6,
        "processing": 0,
    }


def test_never_end_stays_in_progress_past_expires_at(make_sim, clock):
    sim = make_sim(never_end=True, expires_after=10)
    client = sim_client(sim, async_=False)
    batch = client.messages.batches.create(requests=batch_requests(2))
    clock.advance(10_000)
    again = client.messages.batches.retrieve(batch.id)
    assert again.processing_status == "in_progress"
    assert again.results_url is None


@pytest.mark.parametrize(
    "bad",
    [
        [{"custom_id": "has space", "params": params()}],
        [{"custom_id": "x" * 65, "params": params()}],
        [{"custom_id": "dup", "params": params()}, {"custom_id": "dup", "params": params()}],
        [],
    ],
)
def test_bad_batch_is_rejected_at_create_time(make_sim, bad):
    sim = make_sim()
    with pytest.raises(anthropic.BadRequestError):
        submit(sim, bad)
    assert sim.batches == ()


def test_too_many_requests_is_400_and_too_many_bytes_is_413(make_sim):
    with pytest.raises(anthropic.BadRequestError):
        submit(make_sim(max_batch_requests=3), batch_requests(4))
    with pytest.raises(anthropic.ContentTooLargeError) as info:
        submit(make_sim(max_batch_bytes=500), batch_requests(10))
    assert info.value.status_code == 413
    assert info.value.type == "request_too_large"


def test_params_problems_become_errored_lines_at_the_end(make_sim, clock):
    sim = make_sim()
    bad_params = [
        {"custom_id": "no-max", "params": {"model": "claude-opus-4-8", "messages": params()["messages"]}},
        {"custom_id": "zero", "params": params(max_tokens=0)},
        {"custom_id": "empty", "params": {**params(), "messages": []}},
        {"custom_id": "model", "params": params(model="claude-nope")},
        {"custom_id": "fine", "params": params()},
    ]
    batch = submit(sim, bad_params)
    clock.advance(2)
    by_id = {r.custom_id: r.result for r in results(sim, batch.id)}
    assert by_id["fine"].type == "succeeded"
    for cid in ("no-max", "zero", "empty"):
        assert by_id[cid].type == "errored"
        assert by_id[cid].error.error.type == "invalid_request_error"
    assert by_id["model"].error.error.type == "not_found_error"
    assert by_id["model"].error.request_id.startswith("req_")
    assert sim.batch(batch.id).request_counts["errored"] == 4


def test_markers_force_exact_outcomes(make_sim, clock):
    sim = make_sim()
    markers = {
        "mt": ("[[sim:max_tokens]]", "succeeded"),
        "inv": ("[[sim:invalid]]", "invalid_request_error"),
        "ctx": ("[[sim:context]]", "invalid_request_error"),
        "api": ("[[sim:api_error]]", "api_error"),
        "ovl": ("[[sim:overloaded]]", "overloaded_error"),
        "exp": ("[[sim:expired]]", "expired"),
        "can": ("[[sim:canceled]]", "canceled"),
    }
    reqs = [{"custom_id": k, "params": params(f"q {m}")} for k, (m, _) in markers.items()]
    batch = submit(sim, reqs)
    clock.advance(2)
    by_id = {r.custom_id: r.result for r in results(sim, batch.id)}
    for cid, (_, expected) in markers.items():
        got = by_id[cid]
        actual = got.error.error.type if got.type == "errored" else got.type
        assert expected == actual, cid
    assert by_id["mt"].message.stop_reason == "max_tokens"
    assert "prompt is too long" in by_id["ctx"].error.error.message


def test_transient_marker_hits_first_attempt_only_and_starred_every_attempt(make_sim, clock):
    sim = make_sim()
    reqs = [
        {"custom_id": "once", "params": params("a [[sim:api_error]]")},
        {"custom_id": "always", "params": params("b [[sim:api_error*]]")},
        {"custom_id": "perm", "params": params("c [[sim:invalid]]")},
    ]
    outcomes = []
    for _ in range(2):
        batch = submit(sim, reqs)
        clock.advance(2)
        outcomes.append({r.custom_id: r.result.type for r in results(sim, batch.id)})
    assert outcomes[0] == {"once": "errored", "always": "errored", "perm": "errored"}
    assert outcomes[1] == {"once": "succeeded", "always": "errored", "perm": "errored"}
    assert sum((b.attempts for b in sim.batches), ()) == (1, 1, 1, 2, 2, 2)


def test_batch_mix_applies_to_first_attempt_and_retry_mix_after(make_sim, clock):
    sim = make_sim(batch_mix={"succeeded": 0.5, "api_error": 0.25, "expired": 0.25}, seed=7)
    first = submit(sim, batch_requests(400))
    clock.advance(2)
    counts = sim.batch(first.id).request_counts
    assert 150 < counts["succeeded"] < 250
    assert 50 < counts["expired"] < 150
    retry = submit(sim, batch_requests(400))
    clock.advance(2)
    assert sim.batch(retry.id).request_counts["succeeded"] == 400


def test_persist_then_500_leaves_an_orphan_visible_in_list(make_sim):
    sim = make_sim(create_faults={1: "persist_then_500"})
    client = sim_client(sim, async_=False, max_retries=0)
    with pytest.raises(anthropic.InternalServerError):
        client.messages.batches.create(requests=batch_requests(2))
    listed = list(client.messages.batches.list())
    assert len(listed) == 1
    assert sim.batches[0].custom_ids == ("r0", "r1")
    assert sim.requests("POST", "/v1/messages/batches")[0].batch_id == listed[0].id


def test_sdk_retry_after_persist_then_drop_makes_a_duplicate(make_sim):
    sim = make_sim(create_faults=["persist_then_drop"])
    batch = submit(sim, batch_requests(2), max_retries=1)
    assert len(sim.batches) == 2
    assert sim.submitted_custom_ids() == ("r0", "r1", "r0", "r1")
    assert batch.id == sim.batches[1].id


def test_plain_500_create_fault_persists_nothing(make_sim):
    sim = make_sim(create_faults={1: "500", 2: "429"}, error_retry_after_ms=1)
    batch = submit(sim, batch_requests(2), max_retries=2)
    assert (batch.id,) == tuple(b.id for b in sim.batches)
    assert [e.status for e in sim.requests("POST", "/v1/messages/batches")] == [500, 429, 200]


def test_results_cut_mid_stream_once_then_whole(make_sim, clock):
    sim = make_sim(results_drop_after_lines=3, results_chunk_lines=1)
    batch = submit(sim, batch_requests(10))
    clock.advance(2)
    seen = []
    with pytest.raises(httpx2.RemoteProtocolError):
        for r in sim_client(sim, async_=False).messages.batches.results(batch.id):
            seen.append(r.custom_id)
    # the SDK re-chunks to 64 bytes and holds back a partial tail, so it may see fewer lines
    assert 1 <= len(seen) <= 3
    assert sim.requests("GET")[-1].fault == "results_cut"
    assert len(results(sim, batch.id)) == 10


def test_batch_cache_reads_what_the_first_request_wrote(make_sim, clock):
    sim = make_sim()
    reqs = [
        {"custom_id": f"c{i}", "params": params(f"item {i}", system=cached_system("1h"))} for i in range(5)
    ]
    batch = submit(sim, reqs)
    clock.advance(2)
    usages = [r.result.message.usage for r in results(sim, batch.id)]
    assert sum(u.cache_creation.ephemeral_1h_input_tokens > 0 for u in usages) == 1
    assert sum(u.cache_read_input_tokens > 0 for u in usages) == 4


def test_same_seed_same_batch_results(clock):
    from adapters.simulator.scenario import Scenario

    def run() -> list[tuple[str, str]]:
        sim = Simulator(Scenario(seed=11, batch_mix={"succeeded": 0.7, "api_error": 0.3}), clock=clock)
        batch = submit(sim, batch_requests(20))
        clock.advance(2)
        return [
            (r.custom_id, r.result.message.content[0].text if r.result.type == "succeeded" else "err")
            for r in results(sim, batch.id)
        ]

    assert run() == run()
