"""The batch path against a recording fake API and a fake clock: what is sent, polled, harvested, resent."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import attrs
import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import BatchApiError, CreateBody, body_of
from adapters.providers.port import BatchMeta, Upload
from adapters.run.batch import (
    BatchRunResult,
    BatchSettings,
    BatchShell,
    create_body,
    run_batch,
)
from adapters.run.batch_cancel import cancel_job
from adapters.run.clock import FakeClock
from adapters.run.events import BatchCreated, BatchStuck, Event, Notice, RoundStarted
from judgecore.decide.polling import BatchSnapshot, PollPolicy, RequestCounts
from judgecore.decide.prices import DEFAULT_PRICES
from judgecore.decide.spend import Budget, request_bound
from judgecore.job.ids import custom_id_for
from judgecore.results.outcomes import RawResult, Usage
from judgecore.run import batch as br
from judgecore.wire.encoding import CHUNK_BYTES
from judgecore.wire.requests import Request, RequestTemplate

from .fakes import RESULTS, TEMPLATE, Crash, FakeBatchApi, bind, by_kind, make_requests, messages_of, ok


def go(
    store: Store,
    requests: Sequence[Request],
    api: FakeBatchApi,
    clock: FakeClock,
    settings: BatchSettings | None = None,
    events: list[Event] | None = None,
) -> BatchRunResult:
    sink: list[Event] = [] if events is None else events
    return asyncio.run(
        run_batch(
            store=store,
            requests=requests,
            template=TEMPLATE,
            api=api,
            clock=clock,
            settings=settings or BatchSettings(),
            emit=sink.append,
            rng=random.Random(0),
        )
    )


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "state")
    yield s
    s.close()


def statuses(store: Store) -> dict[str, str]:
    return {cid: (o.status.value if o else "pending") for cid, o, *_ in store.latest()}


def notices(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


# -- submission ------------------------------------------------------------------------------------


def test_90k_job_goes_out_in_sub_batches_of_at_most_8000_each_id_once(store: Store) -> None:
    """90,000 items: 12 creates of <= 8,000 exact-byte bodies, each id sent once, all final."""
    requests = make_requests(90_000)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    sizes = [len(b.custom_ids) for b in api.batches.values()]
    assert 12 == len(sizes)
    assert max(sizes) <= 8000
    assert sorted(r.custom_id for r in requests) == sorted(api.sent_ids())
    assert {"succeeded": 90_000, "miss": 0, "quarantined": 0, "pending": 0} == dict(result.counts)
    assert (None, (), 1) == (result.fatal, result.stuck, result.rounds)
    first = orjson.loads(api.bodies[0])["requests"][0]
    assert {"type": "ephemeral", "ttl": "1h"} == first["params"]["system"][0]["cache_control"]
    assert first["custom_id"] == custom_id_for(first["custom_id"].rsplit("-", 1)[0]) or first["custom_id"]
    assert [RoundStarted(round=1, n=90_000, sub_batches=12)] == [
        e for e in events if isinstance(e, RoundStarted)
    ]


def test_create_body_is_exactly_the_sized_bytes(store: Store) -> None:
    """The bytes POSTed are the bytes chunk() sized: the sub-batch row records the body's length."""
    requests = make_requests(50)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    go(store, requests, api, clock, BatchSettings(max_batch_requests=20))
    assert [len(b) for b in api.bodies] == [r.bytes for r in store.sub_batches()]
    assert [20, 20, 10] == [r.n for r in store.sub_batches()]


def test_creates_run_concurrently_but_bounded(store: Store) -> None:
    requests = make_requests(100)
    bind(store, requests)
    clock = FakeClock()
    in_flight = peak = 0

    class Slow(FakeBatchApi):
        async def create(self, body: CreateBody, meta=None):  # type: ignore[no-untyped-def]
            nonlocal in_flight, peak
            in_flight += 1
            peak = max(peak, in_flight)
            await self.clock.sleep(1.0)
            in_flight -= 1
            return await super().create(body, meta)

    api = Slow(clock)
    go(store, requests, api, clock, BatchSettings(max_batch_requests=5, concurrency=3))
    assert 20 == len(api.batches)
    assert 3 == peak


# -- polling: every wait has a deadline -------------------------------------------------------------


def test_a_batch_that_never_ends_is_stuck_at_its_deadline_and_the_run_ends(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    start = clock.now()
    api = FakeBatchApi(clock, batch_seconds=None, expires_after=3.0)
    events: list[Event] = []
    settings = BatchSettings(poll=PollPolicy(interval=60.0, grace=30.0))
    result = go(store, requests, api, clock, settings, events)
    (batch_id,) = api.batches
    assert (batch_id,) == result.stuck
    assert 10 == result.counts["pending"]
    assert start + 3.0 + 30.0 <= clock.now() <= start + 3.0 + 30.0 + 1.0
    assert 1 == sum(isinstance(e, BatchStuck) for e in events)  # one warning for one stuck batch
    assert not [m for m in notices(events) if "deadline" in m]
    # a rerun checks the stuck batch once more and never resends its ids while it may still end
    go(store, requests, api, clock, settings)
    assert 1 == len(api.batches)


def test_a_stuck_batch_that_ended_later_is_harvested_on_rerun(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=None, expires_after=3.0)
    settings = BatchSettings(poll=PollPolicy(interval=1.0, grace=1.0))
    go(store, requests, api, clock, settings)
    (b,) = api.batches.values()
    b.end_at = clock.now()
    result = go(store, requests, api, clock, settings)
    assert 10 == result.counts["succeeded"]
    assert 1 == len(api.batches)


def test_retrieve_that_always_fails_still_ends_at_the_deadline(store: Store) -> None:
    requests = make_requests(3)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=10.0, expires_after=100.0, retrieve_fails=True)
    result = go(store, requests, api, clock, BatchSettings(poll=PollPolicy(interval=5.0, grace=10.0)))
    assert 1 == len(result.stuck)
    assert api.count("retrieve") <= 110 / 5 + 3


def test_polls_wait_the_interval_and_counts_are_never_a_stall_signal(store: Store) -> None:
    requests = make_requests(4)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=600.0)
    result = go(store, requests, api, clock, BatchSettings(poll=PollPolicy(interval=60.0)))
    assert 4 == result.counts["succeeded"]
    assert 10 <= api.count("retrieve") <= 12
    assert all(s <= 60.0 for s in clock.sleeps)


# -- harvest -----------------------------------------------------------------------------------------


def test_shuffled_duplicate_and_unknown_lines_are_matched_by_custom_id(store: Store) -> None:
    """Lines come in any order; a duplicate is reported and not trusted; an unknown id is reported."""
    requests = make_requests(30)
    bind(store, requests)
    clock = FakeClock()
    stranger = ("not-ours-abc", RESULTS["succeeded"])
    other_job = (custom_id_for("zz9"), RESULTS["succeeded"])
    api = FakeBatchApi(clock, duplicate_every=7, extra_lines=[stranger, other_job])
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    assert 30 == result.counts["succeeded"]  # the contradicting duplicates were not trusted
    assert 30 == len(api.sent_ids())
    messages = notices(events)
    assert any("unknown custom_id 'not-ours-abc'" in m for m in messages)
    assert any("duplicate result line" in m for m in messages)


EXPECTED = {
    # result kind -> (status after round 1, resent?)
    "succeeded": ("succeeded", False),
    "max_tokens": ("miss", False),
    "context_overflow": ("miss", False),
    "invalid_request": ("quarantined", False),
    "api_error": ("retry", True),
    "overloaded_error": ("retry", True),
    "rate_limit_error": ("retry", True),
    "canceled": ("retry", True),
    "expired": ("retry", True),
}


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_result_kind_is_classified_and_only_retriable_ones_are_resent(store: Store, kind: str) -> None:
    requests = make_requests(25)
    bind(store, requests)
    target = requests[3].custom_id
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=by_kind({target: kind}))
    result = go(store, requests, api, clock)
    status, resent = EXPECTED[kind]
    assert (2 if resent else 1) == Counter(api.sent_ids())[target]
    assert (2 if resent else 1) == result.rounds
    final = "succeeded" if resent else status
    assert final == statuses(store)[target]
    assert 1 == max(c for k, c in Counter(api.sent_ids()).items() if k != target)


def test_retries_stop_after_max_attempts_rounds_and_a_rerun_gets_a_fresh_budget(store: Store) -> None:
    """--max-attempts bounds the sends per id per run; a rerun of a pending job sends again (never a wedge)."""
    requests = make_requests(5)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=lambda c, a: RESULTS["overloaded_error"])
    result = go(store, requests, api, clock, BatchSettings(max_attempts=3))
    assert 3 == result.rounds
    assert {c: 3 for c in (r.custom_id for r in requests)} == dict(Counter(api.sent_ids()))
    assert (5, 3) == (result.counts["pending"], result.exit_status)
    rerun = go(store, requests, api, clock, BatchSettings(max_attempts=3))
    assert (3, 30) == (rerun.rounds, len(api.sent_ids()))


def test_a_cut_results_stream_resumes_the_same_batch_and_records_each_line_once(store: Store) -> None:
    requests = make_requests(40)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, cut_after_lines=17, cut_fetches=2)
    events: list[Event] = []
    result = go(store, requests, api, clock, BatchSettings(write_group=5), events)
    assert 40 == result.counts["succeeded"]
    assert 3 == api.count("results")
    assert 1 == api.count("create")
    assert any("results stream cut" in m for m in notices(events))
    rows = store._conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]
    assert 40 == rows


def test_a_stream_cut_every_time_leaves_the_batch_ended_for_a_rerun(store: Store) -> None:
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, cut_after_lines=5, cut_fetches=99)
    result = go(store, requests, api, clock, BatchSettings(harvest_attempts=2, write_group=1))
    assert 15 == result.counts["pending"]
    assert ["ended"] == [r.state for r in store.sub_batches()]
    api.cut_after_lines = None
    result = go(store, requests, api, clock)
    assert 20 == result.counts["succeeded"]
    assert 1 == api.count("create")


def test_a_batch_missing_result_lines_resends_the_missing_ids(store: Store) -> None:
    requests = make_requests(6)
    bind(store, requests)
    clock = FakeClock()
    missing = requests[2].custom_id

    class Lossy(FakeBatchApi):
        async def results(self, batch_id: str):  # type: ignore[no-untyped-def]
            async for lines in super().results(batch_id):
                if kept := [(c, o) for c, o in lines if not (c == missing and batch_id == "msgbatch_0001")]:
                    yield kept

    api = Lossy(clock)
    result = go(store, requests, api, clock)
    assert 6 == result.counts["succeeded"]
    assert 2 == Counter(api.sent_ids())[missing]


# -- creates: retries, 413, orphans --------------------------------------------------------------------


def test_create_that_failed_without_persisting_is_reconciled_then_resent(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={1: "500", 2: "drop", 3: "429"})
    result = go(store, requests, api, clock)
    assert 10 == result.counts["succeeded"]
    assert ["create", "list", "create", "list", "create", "list", "create"] == [
        c for c, _ in api.calls if c in ("create", "list")
    ]
    assert 10 == len(api.sent_ids())


@pytest.mark.parametrize("fault", ["persist_then_500", "persist_then_drop"])
def test_create_that_persisted_then_failed_is_adopted_not_resent(store: Store, fault: str) -> None:
    requests = make_requests(12)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={1: fault})
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    assert 12 == result.counts["succeeded"]
    assert 1 == len(api.batches)
    assert 12 == len(api.sent_ids())
    assert [True] == [e.adopted for e in events if isinstance(e, BatchCreated)]
    assert tuple(api.batches) == result.adopted


def test_concurrent_equal_sized_creates_never_adopt_a_siblings_batch(store: Store) -> None:
    """While one sub-batch reconciles, no other create is in flight: each adopts only its own batch."""
    requests = make_requests(40)
    bind(store, requests)
    clock = FakeClock()

    class Slow(FakeBatchApi):
        async def create(self, body: CreateBody, meta=None):  # type: ignore[no-untyped-def]
            await self.clock.sleep(1.0 if self._creates % 2 else 3.0)
            return await super().create(body, meta)

    api = Slow(clock, create_faults={1: "persist_then_500", 3: "persist_then_drop"})
    result = go(store, requests, api, clock, BatchSettings(max_batch_requests=10, concurrency=4))
    assert 40 == result.counts["succeeded"]
    assert sorted(r.custom_id for r in requests) == sorted(api.sent_ids())
    for row in store.sub_batches(("harvested",)):
        assert sorted(store.sub_batch_ids(row.sub_id)) == sorted(api.batches[row.batch_id].custom_ids)


def test_413_splits_the_sub_batch_in_halves_and_says_the_estimate_was_wrong(store: Store) -> None:
    requests = make_requests(16)
    bind(store, requests)
    clock = FakeClock()
    one = len(requests[0].body(TEMPLATE, messages_of(requests[:1])[0]))
    api = FakeBatchApi(clock, max_body_bytes=one * 5)
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    assert 16 == result.counts["succeeded"]
    assert [4, 4, 4, 4] == sorted(len(b.custom_ids) for b in api.batches.values())
    assert sorted(r.custom_id for r in requests) == sorted(api.sent_ids())
    assert any("size estimate was wrong" in m for m in notices(events))


def test_a_request_that_alone_is_over_the_server_limit_is_quarantined(store: Store) -> None:
    requests = make_requests(2)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, max_body_bytes=10)
    result = go(store, requests, api, clock)
    assert 2 == result.counts["quarantined"]
    assert 0 == len(api.batches)


def test_fatal_create_error_stops_the_run_and_sends_nothing_else(store: Store) -> None:
    requests = make_requests(30)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={1: "401", 2: "401", 3: "401"})
    result = go(store, requests, api, clock, BatchSettings(max_batch_requests=10, concurrency=1))
    assert result.fatal is not None and "authentication" in result.fatal
    assert 1 == api.count("create")
    assert 30 == result.counts["pending"]


def test_create_refused_with_400_leaves_ids_pending_after_bounded_rounds(store: Store) -> None:
    requests = make_requests(3)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={1: "400", 2: "400", 3: "400"})
    result = go(store, requests, api, clock)
    assert 3 == result.rounds
    assert 3 == api.count("create")
    assert 3 == result.counts["pending"]


def test_create_exhausting_its_attempts_is_bounded(store: Store) -> None:
    requests = make_requests(3)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={i: "500" for i in range(1, 100)})
    result = go(store, requests, api, clock, BatchSettings(create_attempts=2, max_attempts=2))
    assert 4 == api.count("create")
    assert 3 == result.counts["pending"]
    assert 0 == len(api.batches)


def test_crash_between_create_and_id_write_adopts_the_orphan_on_resume(store: Store) -> None:
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, create_faults={2: "crash"})
    with pytest.raises(Crash):
        go(store, requests, api, clock, BatchSettings(max_batch_requests=10, concurrency=1))
    assert ["live", "intent"] == [r.state for r in store.sub_batches()]
    events: list[Event] = []
    clock.advance(30.0)
    result = go(store, requests, api, clock, BatchSettings(max_batch_requests=10), events)
    assert 20 == result.counts["succeeded"]
    assert 2 == len(api.batches)
    assert sorted(r.custom_id for r in requests) == sorted(api.sent_ids())
    assert [True] == [e.adopted for e in events if isinstance(e, BatchCreated)]


def test_an_orphan_intent_with_no_batch_is_resent_once(store: Store) -> None:
    requests = make_requests(8)
    bind(store, requests)
    clock = FakeClock()
    store.record_intent(round=1, custom_ids=[r.custom_id for r in requests[:4]], n_bytes=1, at=clock.now())
    clock.advance(5.0)
    api = FakeBatchApi(clock)
    result = go(store, requests, api, clock)
    assert 8 == result.counts["succeeded"]
    assert sorted(r.custom_id for r in requests) == sorted(api.sent_ids())
    assert "orphan_resubmitted" == store.sub_batches()[0].state


def _foreign_batch(api: FakeBatchApi, clock: FakeClock, n: int, *, ended: bool) -> str:
    """Another job's batch of `n` requests in the same workspace listing, created just now."""
    from .fakes import FakeBatch

    now = clock.now()
    cids = tuple(f"other-job-{k}" for k in range(n))
    api.batches["msgbatch_foreign"] = FakeBatch(
        id="msgbatch_foreign",
        custom_ids=cids,
        attempts=(1,) * n,
        created_at=now,
        expires_at=now + 86_400.0,
        end_at=now if ended else now + 120.0,
    )
    return "msgbatch_foreign"


@pytest.mark.parametrize("ended", [True, False], ids=["ended", "running"])
def test_another_jobs_batch_that_fits_an_orphan_intent_is_never_recorded_as_ours(
    store: Store, ended: bool
) -> None:
    """An intent whose batch id was never recorded, and another job's batch of the same size from the
    same minute in the listing: an ended one is told apart by its first result line and not adopted; a
    running one, adopted, is disowned at its first result line. Nothing of it is recorded either way."""
    requests = make_requests(4)
    bind(store, requests)
    clock = FakeClock()
    store.record_intent(round=1, custom_ids=[r.custom_id for r in requests], n_bytes=1, at=clock.now())
    clock.advance(5.0)
    api = FakeBatchApi(clock)
    foreign = _foreign_batch(api, clock, 4, ended=ended)
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    assert 4 == result.counts["succeeded"]
    assert {r.custom_id for r in requests} == set(api.sent_ids()) - set(api.batches[foreign].custom_ids)
    assert all(batch_id != foreign for _, _, _, batch_id, _ in store.latest())
    said = notices(events)
    if ended:
        assert any(f"batch {foreign} holds another job's requests: not adopted" in m for m in said)
        assert [False] == [e.adopted for e in events if isinstance(e, BatchCreated)]
    else:
        assert any(f"batch {foreign} holds another job's requests (its first result line" in m for m in said)


# -- resume --------------------------------------------------------------------------------------------


def test_resume_after_a_partial_checkpoint_sends_exactly_the_unfinished_ids(store: Store) -> None:
    requests = make_requests(50)
    bind(store, requests)
    clock = FakeClock()
    flaky = {r.custom_id: "api_error" for r in requests[10:20]}
    api = FakeBatchApi(clock, outcome=by_kind(flaky))
    go(store, requests, api, clock, BatchSettings(max_attempts=1))
    assert 50 == len(api.sent_ids())
    more = requests + make_requests(5, prefix="new")
    bind(store, more)
    go(store, more, api, clock, BatchSettings(max_attempts=3))
    expected = sorted([r.custom_id for r in requests[10:20]] + [r.custom_id for r in more[50:]])
    assert expected == sorted(api.sent_ids()[50:])
    assert all(s == "succeeded" for s in statuses(store).values())


def test_resume_polls_a_live_batch_by_id_instead_of_resending(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, crash_after_lines=0)
    with pytest.raises(Crash):
        go(store, requests, api, clock)
    api.crash_after_lines = None
    result = go(store, requests, api, clock)
    assert 10 == result.counts["succeeded"]
    assert 1 == api.count("create")


def test_a_crash_mid_harvest_keeps_what_was_written_and_resends_nothing(store: Store) -> None:
    requests = make_requests(100)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, crash_after_lines=55)
    with pytest.raises(Crash):
        go(store, requests, api, clock, BatchSettings(write_group=10))
    assert 50 <= sum(1 for s in statuses(store).values() if s == "succeeded") <= 55
    api.crash_after_lines = None
    result = go(store, requests, api, clock)
    assert 100 == result.counts["succeeded"]
    assert 100 == len(api.sent_ids())


# -- stopping ------------------------------------------------------------------------------------------


def test_breaker_trips_when_the_first_20_results_are_all_invalid(store: Store) -> None:
    requests = make_requests(60)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=lambda c, a: RESULTS["invalid_request"])
    settings = BatchSettings(max_batch_requests=20, concurrency=1)
    result = go(store, requests, api, clock, settings)
    assert result.fatal is not None and result.fatal.startswith("FATAL_CONFIG")
    assert 3 == len(api.batches)  # nothing more was sent after the verdict (all 3 created in round 1)
    assert 1 == result.rounds


def test_breaker_does_not_trip_when_one_of_the_first_results_is_valid(store: Store) -> None:
    requests = make_requests(30)
    bind(store, requests)
    clock = FakeClock()
    good = requests[0].custom_id
    api = FakeBatchApi(
        clock,
        outcome=lambda c, a: RESULTS["succeeded"] if c == good else RESULTS["invalid_request"],
        shuffle=False,
    )
    result = go(store, requests, api, clock)
    assert result.fatal is None
    assert 29 == result.counts["quarantined"]


def test_a_fatal_result_line_stops_the_run_with_nothing_lost(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=by_kind({requests[0].custom_id: "auth"}))
    result = go(store, requests, api, clock)
    assert result.fatal is not None and "FATAL_CONFIG" in result.fatal
    assert 9 == result.counts["succeeded"]
    assert 1 == len(api.batches)


# -- cancel --------------------------------------------------------------------------------------------


def test_cancel_stops_live_batches_and_the_next_run_resends_what_was_not_processed(store: Store) -> None:
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=None, expires_after=100.0)
    go(store, requests, api, clock, BatchSettings(poll=PollPolicy(interval=10.0, grace=0.0)))
    (batch_id,) = api.batches
    events: list[Event] = []
    report = asyncio.run(cancel_job(store=store, api=api, clock=clock, emit=events.append))
    assert ((batch_id,), ()) == (report.canceled, report.failed)
    assert ["canceled"] == [r.state for r in store.sub_batches()]
    api.batch_seconds = 1.0
    result = go(store, requests, api, clock)
    assert 10 == result.counts["succeeded"]
    assert 2 == len(api.batches)
    assert 2 == Counter(api.sent_ids())[requests[0].custom_id]


def test_cancel_of_an_ended_batch_marks_it_for_harvest(store: Store) -> None:
    requests = make_requests(4)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, crash_after_lines=0)
    with pytest.raises(Crash):
        go(store, requests, api, clock)
    assert () == asyncio.run(cancel_job(store=store, api=api, clock=clock, emit=lambda e: None)).canceled
    assert ["ended"] == [r.state for r in store.sub_batches()]


def test_unused_raw_result_import_guard() -> None:
    assert RawResult(kind="expired").kind == "expired"


def test_two_orphans_of_equal_size_created_out_of_order_are_harvested_by_owner(store: Store) -> None:
    """Nothing tells two same-size orphans apart before their results: each line goes to its id's owner."""
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    a, b = requests[:10], requests[10:]
    sub_a = store.record_intent(round=1, custom_ids=[r.custom_id for r in a], n_bytes=1, at=clock.now())
    clock.advance(0.1)
    sub_b = store.record_intent(round=1, custom_ids=[r.custom_id for r in b], n_bytes=1, at=clock.now())
    clock.advance(1.0)
    api._persist(
        create_body(b, TEMPLATE, messages_of(b))
    )  # b's batch was made first: a's intent pairs with it
    api._persist(create_body(a, TEMPLATE, messages_of(a)))
    clock.advance(10.0)
    events: list[Event] = []
    result = go(store, requests, api, clock, events=events)
    assert 20 == result.counts["succeeded"]
    assert 0 == api.count("create")
    assert 2 == len(api.batches)
    owners = dict(store._conn.execute("SELECT custom_id, sub_id FROM outcomes").fetchall())
    assert {r.custom_id: sub_a for r in a} | {r.custom_id: sub_b for r in b} == owners
    assert not [m for m in notices(events) if "unknown custom_id" in m]


# -- one retry budget, one breaker, first contact -------------------------------------------------------


def test_a_spent_budget_is_fresh_on_rerun_so_rerunning_until_exit_0_ends(store: Store) -> None:
    """5 items whose first three sends fail, --max-attempts 2: run 1 exits 3, run 2 makes progress, exits 0."""
    requests = make_requests(5)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=lambda c, a: RESULTS["api_error"] if a <= 3 else RESULTS["succeeded"])
    settings = BatchSettings(max_attempts=2)
    first = go(store, requests, api, clock, settings)
    second = go(store, requests, api, clock, settings)
    assert [(3, 5), (0, 0)] == [(r.exit_status, r.pending) for r in (first, second)]
    assert {r.custom_id: 4 for r in requests} == dict(Counter(api.sent_ids()))


@pytest.mark.parametrize("n", [1, 5, 25])
def test_a_job_whose_requests_are_all_invalid_trips_the_breaker_and_quarantines_none(
    store: Store, n: int
) -> None:
    """Whatever the job's size: exit 4, every item pending (a broken configuration is not the data's fault)."""
    requests = make_requests(n)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock, outcome=lambda c, a: RESULTS["invalid_request"])
    result = go(store, requests, api, clock)
    assert (4, n, 0) == (result.exit_status, result.counts["pending"], result.counts["quarantined"])
    assert result.fatal is not None and result.fatal.startswith("FATAL_CONFIG")
    assert 1 == len(api.batches)
    assert 0 == store._conn.execute("SELECT COUNT(*) FROM outcomes").fetchone()[0]  # nothing recorded
    rerun = go(store, requests, api, clock)  # nothing was quarantined: the same job trips the same way
    assert (4, n, 0) == (rerun.exit_status, rerun.counts["pending"], rerun.counts["quarantined"])


def test_quarantines_held_by_a_deciding_breaker_are_recorded_once_another_kind_arrives(store: Store) -> None:
    requests = make_requests(30)
    bind(store, requests)
    clock = FakeClock()
    good = requests[15].custom_id  # 15 invalid lines, over two batches, are held until it comes
    api = FakeBatchApi(
        clock,
        outcome=lambda c, a: RESULTS["succeeded"] if c == good else RESULTS["invalid_request"],
        shuffle=False,
    )
    result = go(store, requests, api, clock, BatchSettings(max_batch_requests=10, concurrency=1))
    assert (0, 29, 1) == (result.exit_status, result.counts["quarantined"], result.counts["succeeded"])


def test_held_quarantines_are_recorded_when_the_run_ends_still_deciding(store: Store) -> None:
    """3 invalid, 7 never answered: the breaker cannot decide in this run; the 3 are quarantined, 7 pending."""
    requests = make_requests(10)
    bind(store, requests)
    clock = FakeClock()
    bad = {r.custom_id for r in requests[:3]}
    api = FakeBatchApi(
        clock, outcome=lambda c, a: RESULTS["invalid_request" if c in bad else "overloaded_error"]
    )
    result = go(store, requests, api, clock, BatchSettings(max_attempts=1))
    assert (3, 3, 7) == (result.exit_status, result.counts["quarantined"], result.counts["pending"])


@pytest.mark.parametrize("answered_first", [False, True])
def test_connection_refused_is_fatal_only_before_the_first_answer(store: Store, answered_first: bool) -> None:
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    refused = RawResult(
        kind="connection_error", error_type="connect_failed", message="cannot connect to http://127.0.0.1:9"
    )

    class Unreachable(FakeBatchApi):
        async def create(self, body: CreateBody, meta=None):  # type: ignore[no-untyped-def]
            if answered_first and self._creates == 0:
                return await super().create(body, meta)
            self._creates += 1
            raise BatchApiError(refused)

    api = Unreachable(clock)
    result = go(store, requests, api, clock, BatchSettings(max_batch_requests=10, concurrency=1))
    if answered_first:
        assert result.fatal is None and 10 == result.counts["succeeded"]
        assert 3 == result.exit_status
    else:
        assert 4 == result.exit_status
        assert result.fatal is not None and "http://127.0.0.1:9" in result.fatal
        assert 1 == api._creates
        assert ["failed"] == [r.state for r in store.sub_batches()]


# -- budget ---------------------------------------------------------------------------------------------

PRICE = DEFAULT_PRICES[TEMPLATE.model]


def bound_of(r: Request) -> float:
    cached = len(TEMPLATE.system_json or b"")
    return request_bound(
        request_bytes=r.size, cached_bytes=cached, max_tokens=r.max_tokens, price=PRICE, route="batch"
    )


def go_budget(store: Store, requests, api, clock, cap: float, events: list[Event]) -> BatchRunResult:
    return asyncio.run(
        run_batch(
            store=store,
            requests=requests,
            template=TEMPLATE,
            api=api,
            clock=clock,
            settings=BatchSettings(max_batch_requests=10),
            emit=events.append,
            rng=random.Random(0),
            budget=Budget(cap=cap),
            price=PRICE,
        )
    )


def test_a_budget_cuts_the_sub_batch_that_does_not_fit_and_sends_the_rest_as_real_spend_frees_room(
    store: Store,
) -> None:
    """Room for 25 bounds: sub-batches of 10, 10, then 5 of the third; once they are harvested their
    real spend (far below the bounds) frees room, and the rest goes in the same run, each id once."""
    requests = make_requests(30)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    cap = sum(bound_of(r) for r in requests[:25]) * (1 + 1e-9)
    events: list[Event] = []
    result = go_budget(store, requests, api, clock, cap, events)
    sizes = [len(b.custom_ids) for b in api.batches.values()]
    assert [10, 10, 5] == sizes[:3] and 30 == sum(sizes)
    assert (0, 30) == (result.exit_status, result.counts["succeeded"])
    assert not [m for m in notices(events) if m.startswith("budget:")]
    assert store.spent_usd(PRICE) <= cap


def test_a_budget_with_no_room_sends_nothing_and_says_what_the_rest_needs(store: Store) -> None:
    requests = make_requests(4)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    events: list[Event] = []
    result = go_budget(store, requests, api, clock, 0.0, events)
    assert (3, 4, 0) == (result.exit_status, result.pending, api.count("create"))
    lines = [m for m in notices(events) if m.startswith("budget:")]
    assert 1 == len(lines) and "4 requests left pending" in lines[0]
    rerun = float(lines[0].split("--budget ")[1].split()[0])
    assert rerun >= bound_of(requests[0]), "the rerun's figure leaves room for one request at its bound"


def test_the_spend_of_earlier_runs_counts_against_the_budget(store: Store) -> None:
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    api = FakeBatchApi(clock)
    go(store, requests[:10], api, clock)
    spent = store.spent_usd(PRICE)
    assert spent > 0
    cap = spent + sum(bound_of(r) for r in requests[10:]) * (1 - 1e-6)  # just short of the last request
    result = go_budget(store, requests, api, clock, cap, [])
    # the earlier spend counts: 9 fit at first; the 10th once their real spend is known
    assert [10, 9, 1] == [len(b.custom_ids) for b in api.batches.values()]
    assert (0, 20) == (result.exit_status, result.counts["succeeded"])
    assert store.spent_usd(PRICE) <= cap


def test_a_budget_that_cannot_cover_the_job_is_spent_nearly_whole_and_never_over(store: Store) -> None:
    """Answers that cost most of their bound: rounds go on until the next request cannot fit at its
    bound, the cap is never exceeded, and the line says what the rest needs from the real costs."""
    requests = make_requests(40)
    bind(store, requests)
    clock = FakeClock()
    dear = attrs.evolve(
        ok("", 1), usage=Usage(input_tokens=10, output_tokens=requests[0].max_tokens * 3 // 4)
    )
    api = FakeBatchApi(clock, outcome=lambda _cid, _attempt: dear)
    cap = sum(bound_of(r) for r in requests[:20])
    events: list[Event] = []
    result = go_budget(store, requests, api, clock, cap, events)
    spent = store.spent_usd(PRICE)
    assert cap - bound_of(requests[0]) < spent <= cap
    assert 3 == result.exit_status and 0 < result.pending < 40
    lines = [m for m in notices(events) if m.startswith("budget:")]
    assert 1 == len(lines) and f"{result.pending} requests left pending" in lines[0]
    assert "from what" in lines[0]


# -- the checkpoint's schema ------------------------------------------------------------------------------


def test_a_schema_1_state_dir_is_migrated_its_orphan_groups_read_from_the_old_notes(tmp_path: Path) -> None:
    """Schema 1 kept an ambiguous orphan's group in a free-text note; schema 2 keeps it in a column."""
    import sqlite3

    from adapters.checkpoint.store import DB_NAME, SCHEMA_VERSION

    state = tmp_path / "old"
    state.mkdir()
    with sqlite3.connect(state / DB_NAME) as conn:
        conn.executescript(
            """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            INSERT INTO meta VALUES ('schema', '1');
            CREATE TABLE sub_batches (sub_id INTEGER PRIMARY KEY, round INTEGER NOT NULL, n INTEGER NOT NULL,
                bytes INTEGER NOT NULL, intent_at REAL NOT NULL, batch_id TEXT UNIQUE, created_at REAL,
                expires_at REAL, state TEXT NOT NULL, note TEXT);
            INSERT INTO sub_batches VALUES (4, 1, 10, 1, 0.0, 'b1', 1.0, 2.0, 'live', 'adopted orphan; group=4');
            INSERT INTO sub_batches VALUES (5, 1, 10, 1, 0.0, 'b2', 1.0, 2.0, 'group_harvested', 'adopted orphan; group=4');
            INSERT INTO sub_batches VALUES (6, 1, 10, 1, 0.0, 'b3', 1.0, 2.0, 'live', 'adopted orphan');
            """
        )
    store = Store.open(state)
    try:
        assert [(4, 4), (5, 4), (6, None)] == [(r.sub_id, r.group) for r in store.sub_batches()]
        assert SCHEMA_VERSION == int(store.get_meta("schema"))
        assert [4, 4, None] == [v.group for v in store.checkpoint().subs]
    finally:
        store.close()
    Store.open(state).close()  # a second open finds nothing to migrate


class _Pieces(FakeBatchApi):
    """Records the pieces each create body arrives in, as the SDK reads them."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__(clock)
        self.pieces: list[list[int]] = []

    async def create(self, body: CreateBody | Upload, meta: BatchMeta | None = None) -> BatchSnapshot:
        self.pieces.append([len(chunk) async for chunk in body_of(body)])
        return await super().create(body, meta)  # a second pass: a body can be read again


def test_a_create_body_is_streamed_in_pieces_that_join_to_the_exact_sized_bytes(store: Store) -> None:
    """Sub-batches of 1.5 MB go out in pieces of about CHUNK_BYTES (one request past it at most), never
    as one whole body; joined, each is the reference body, as long as the size the intent recorded."""
    template = RequestTemplate.build(model="claude-opus-4-8", max_tokens=256, rubric="r" * 3000, path="batch")
    requests = make_requests(1000, template=template)
    bind(store, requests)
    clock = FakeClock()
    api = _Pieces(clock)
    shell = BatchShell(store, template, api, clock, BatchSettings(), [].append, random.Random(0))
    subs = (requests[:500], requests[500:])
    for n, part in enumerate(subs, start=1):
        asyncio.run(shell.create(br.Create(sub_id=n, round=1, requests=part, at=0.0)))
    assert [create_body(part, template, messages_of(part)) for part in subs] == api.bodies
    assert [len(b) for b in api.bodies] == [r.bytes for r in store.sub_batches()]
    assert [[len(b)] for b in api.bodies] != api.pieces  # not one piece
    longest = CHUNK_BYTES + 1 + max(r.size for r in requests)
    assert [] == [p for ps in api.pieces for p in ps if p > longest]
    assert [len(b) for b in api.bodies] == [sum(ps) for ps in api.pieces]


def test_a_run_stopped_by_an_error_waits_for_its_creates_in_flight_to_record_their_batches(
    store: Store,
) -> None:
    """A `progress` callback that raised on one `BatchCreated` ended the run while another create was
    in flight; that create, its batch made, then recorded it on the checkpoint its caller had closed
    (`Task exception was never retrieved ... Cannot operate on a closed database`), leaving the batch
    for a rerun to adopt. The run now waits for the operations it cancels before it ends."""
    requests = make_requests(20)
    bind(store, requests)
    clock = FakeClock()
    gate = asyncio.Event()

    class SecondCreateInFlight(FakeBatchApi):
        async def create(self, create: CreateBody, meta: BatchMeta | None = None) -> BatchSnapshot:
            if self._creates >= 1:  # the second: its answer comes in after the run's error
                try:
                    await gate.wait()
                except asyncio.CancelledError:  # the call ends with its answer all the same
                    await gate.wait()
            return await super().create(create, meta)

    api = SecondCreateInFlight(clock)

    def emit(event: Event) -> None:
        if isinstance(event, BatchCreated):
            gate.set()
            raise RuntimeError("the callback failed")

    async def main() -> None:
        with pytest.raises(RuntimeError, match="the callback failed"):
            await run_batch(
                store=store,
                requests=requests,
                template=TEMPLATE,
                api=api,
                clock=clock,
                settings=BatchSettings(max_batch_requests=10),
                emit=emit,
                rng=random.Random(0),
            )
        # what the caller sees once the run has ended: every batch made is recorded, nothing left running
        assert sorted(api.batches) == sorted(r.batch_id for r in store.sub_batches() if r.batch_id)
        assert [] == [t for t in asyncio.all_tasks() if t.get_coro().__qualname__ == "BatchShell.perform"]

    asyncio.run(main())
    assert 2 == len(api.batches)


class RefusedFirst(FakeBatchApi):
    """Batches over `fits` requests fail validation after their create (OpenAI's `failed`,
    `token_limit_exceeded`): the create succeeds, only a poll says so, and none of it ran."""

    fits = 10

    def _snap(self, b):  # type: ignore[no-untyped-def]
        snap = super()._snap(b)
        if len(b.custom_ids) > self.fits:
            return attrs.evolve(snap, status="ended", counts=RequestCounts(), refused="token_limit_exceeded")
        return snap

    async def results(self, batch_id: str):  # type: ignore[no-untyped-def]
        assert len(self.batches[batch_id].custom_ids) <= self.fits, "a refused batch is never harvested"
        async for lines in super().results(batch_id):
            yield lines


def test_a_batch_refused_after_its_create_is_sent_again_in_halves_in_the_same_round(store: Store) -> None:
    """40 requests, a limit of 10 a batch: 40 refused, 20 + 20 refused, four of 10 run. Each id runs once;
    the refusals are not sends (one round; `--max-attempts 1` is enough) and are told."""
    requests = make_requests(40)
    bind(store, requests)
    clock = FakeClock()
    api = RefusedFirst(clock)
    events: list[Event] = []
    result = go(store, requests, api, clock, BatchSettings(max_attempts=1), events)
    assert 40 == result.counts["succeeded"] and 1 == result.rounds
    sizes = [len(b.custom_ids) for b in api.batches.values()]
    assert [40, 20, 20, 10, 10, 10, 10] == sizes
    ran = Counter(c for b in api.batches.values() if len(b.custom_ids) <= 10 for c in b.custom_ids)
    assert 40 == len(ran) and {1} == set(ran.values())
    said = [e.message for e in events if isinstance(e, Notice)]
    assert 3 == sum("failed validation (token_limit_exceeded)" in m for m in said)
    assert [r.state for r in store.sub_batches()].count("split") == 3
