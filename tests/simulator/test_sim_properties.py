"""Laws of the simulator checked on its pure entry point, `Simulator.handle`, with hypothesis:
batches account for every request once, list pagination is a partition, same inputs same bytes."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from adapters.run.clock import FakeClock
from adapters.simulator.cli import add_arguments, scenario_from_args
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import BATCH_OUTCOMES, Scenario
from adapters.simulator.wire import SimRequest

from .support import params

AUTH = (("authorization", "Bearer sk-sim"),)


def call(sim: Simulator, method: str, path: str, body: object = None, **query: str):
    raw = b"" if body is None else orjson.dumps(body)
    response = sim.handle(
        SimRequest(method=method, path=path, query=tuple(query.items()), headers=AUTH, body=raw)
    )
    return response


mixes = st.dictionaries(st.sampled_from(BATCH_OUTCOMES), st.floats(0.01, 1.0), min_size=1)


@settings(deadline=None)
@given(
    n=st.integers(1, 40),
    mix=mixes,
    seed=st.integers(0, 2**32),
    cancel_at=st.one_of(st.none(), st.floats(0, 12)),
    expires_after=st.floats(1, 30),
)
# Offsets that differ by less than the clock's resolution: 1_796_000_000.0 + 0.9999999999999999
# rounds to exactly created_at + 1.0, the batch's expires_at, so the cancel arrives as it ends.
@example(n=1, mix={"succeeded": 1.0}, seed=0, cancel_at=0.9999999999999999, expires_after=1.0)
@example(n=3, mix={"succeeded": 1.0}, seed=0, cancel_at=10.0, expires_after=30.0)
def test_every_request_is_accounted_for_exactly_once(n, mix, seed, cancel_at, expires_after):
    clock = FakeClock()
    sim = Simulator(
        Scenario(seed=seed, batch_mix=mix, batch_seconds=10, expires_after=expires_after),
        clock=clock,
    )
    reqs = [{"custom_id": f"id-{i}", "params": params(f"q{i}")} for i in range(n)]
    created_at = clock.now()
    batch = call(sim, "POST", "/v1/messages/batches", {"requests": reqs}).json()
    if cancel_at is not None:
        # Decide on the absolute epoch times the simulator compares, not on the offsets: an offset
        # just under the end can round up to it once it is added to the clock.
        running = clock.advance(cancel_at) < created_at + min(10, expires_after)
        cancel = call(sim, "POST", f"/v1/messages/batches/{batch['id']}/cancel")
        expected = (200, "canceling") if running else (400, None)
        assert expected == (cancel.status, cancel.json().get("processing_status"))
    clock.advance(100)
    ended = call(sim, "GET", f"/v1/messages/batches/{batch['id']}").json()
    assert ended["processing_status"] == "ended"
    counts = ended["request_counts"]
    assert sum(counts.values()) == n
    body = call(sim, "GET", f"/v1/messages/batches/{batch['id']}/results").body
    lines = [orjson.loads(x) for x in body.split(b"\n")[:-1]]
    assert sorted(x["custom_id"] for x in lines) == sorted(r["custom_id"] for r in reqs)
    tally = Counter(x["result"]["type"] for x in lines)
    assert {k: v for k, v in counts.items() if v and k != "processing"} == dict(tally)


@settings(deadline=None)
@given(n=st.integers(0, 25), limit=st.integers(1, 30))
def test_list_pages_partition_batches_newest_first(n, limit):
    clock = FakeClock()
    sim = Simulator(Scenario(), clock=clock)
    created = []
    for i in range(n):
        reqs = [{"custom_id": f"c{i}", "params": params()}]
        created.append(call(sim, "POST", "/v1/messages/batches", {"requests": reqs}).json()["id"])
        clock.advance(0.5 * (i % 2))  # ties in created_at must still order newest first
    seen: list[str] = []
    query: dict[str, str] = {"limit": str(limit)}
    while True:
        page = call(sim, "GET", "/v1/messages/batches", **query).json()
        seen += [b["id"] for b in page["data"]]
        assert len(page["data"]) <= limit
        if not page["has_more"]:
            break
        query = {"limit": str(limit), "after_id": page["last_id"]}
    assert seen == created[::-1]


@settings(deadline=None)
@given(seed=st.integers(0, 1000), texts=st.lists(st.text(min_size=1, max_size=30), max_size=6))
def test_same_scenario_and_requests_give_the_same_bytes(seed, texts):
    def run() -> list[bytes]:
        sim = Simulator(
            Scenario(seed=seed, sync_fault_mix={"500": 0.2}, batch_mix={"succeeded": 0.5, "expired": 0.5}),
            clock=FakeClock(),
        )
        out = [call(sim, "POST", "/v1/messages", params(t)).body for t in texts]
        reqs = [{"custom_id": f"k{i}", "params": params(t)} for i, t in enumerate(texts)]
        if reqs:
            batch = call(sim, "POST", "/v1/messages/batches", {"requests": reqs}).json()
            sim.clock.advance(5)  # type: ignore[attr-defined]
            out.append(call(sim, "GET", f"/v1/messages/batches/{batch['id']}/results").body)
        return out

    assert run() == run()


@settings(deadline=None)
@given(max_tokens=st.integers(1, 300), text=st.text(min_size=1, max_size=200))
def test_output_never_exceeds_max_tokens(max_tokens, text):
    sim = Simulator(Scenario(), clock=FakeClock())
    message = call(sim, "POST", "/v1/messages", params(text, max_tokens=max_tokens)).json()
    assert 1 <= message["usage"]["output_tokens"] <= max_tokens
    if message["stop_reason"] == "max_tokens":
        assert message["usage"]["output_tokens"] == max_tokens
    else:
        assert message["stop_reason"] == "end_turn"


def test_every_response_has_a_request_id_and_json_errors(make_sim):
    sim = make_sim()
    for method, path in [("GET", "/v1/nope"), ("GET", "/v1/messages/batches/msgbatch_x")]:
        response = call(sim, method, path)
        body = response.json()
        assert body["type"] == "error"
        assert body["request_id"] == response.header("request-id")
    missing = sim.handle(SimRequest(method="POST", path="/v1/messages", body=b"{}"))
    assert missing.status == 401


def test_x_api_key_header_is_accepted(make_sim):
    sim = make_sim()
    response = sim.handle(
        SimRequest(
            method="POST",
            path="/v1/messages",
            headers=(("x-api-key", "sk-1"),),
            body=orjson.dumps(params()),
        )
    )
    assert response.status == 200


def test_cli_arguments_build_a_scenario():
    import argparse

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    ns = parser.parse_args(
        [
            "--port",
            "0",
            "--seed",
            "5",
            "--batch-seconds",
            "0.5",
            "--never-end",
            "--otpm",
            "9000",
            "--sync-429-rate",
            "0.1",
            "--batch-error-rate",
            "0.2",
        ]
    )
    scenario = scenario_from_args(ns)
    assert (scenario.seed, scenario.batch_seconds, scenario.never_end) == (5, 0.5, True)
    assert scenario.otpm_limit == 9000
    assert dict(scenario.sync_fault_mix) == {"429": 0.1}
    assert dict(scenario.batch_mix) == {"api_error": 0.2, "succeeded": 0.8}
    assert ns.port == 0


@pytest.mark.parametrize(
    "field",
    [
        {"batch_seconds": float("inf")},
        {"batch_seconds": float("nan")},
        {"expires_after": float("nan")},
        {"cancel_seconds": -1.0},
        {"results_line_delay": float("inf")},
        {"retry_after": float("nan")},
        {"max_retry_after_ms": float("inf")},
        {"unparseable_rate": 2.0},
        {"unparseable_rate": float("nan")},
        {"out_of_range_rate": 1.5},
        {"sync_fault_mix": {"429": float("nan")}},
        {"batch_mix": {"succeeded": -1.0}},
        {"score_weights": {"3": float("inf")}},
    ],
)
def test_scenario_refuses_non_finite_negative_and_out_of_range_values(field):
    name = next(iter(field))
    with pytest.raises(ValueError, match=name):
        Scenario(**field)
