"""The deadline's switch on the batch path (`adapters.run.switch`, `judgecore.run.batch.switching`),
against a recording fake API and a fake clock: when it switches, what it records and says, what it
cancels, what it harvests, and how a rerun resumes it."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from adapters.checkpoint.store import Store
from adapters.providers.anthropic.batch_api import BatchApiError
from adapters.run.batch import BatchRunResult, BatchSettings, run_batch
from adapters.run.clock import FakeClock
from adapters.run.events import Event, Notice
from adapters.run.switch import Switcher
from judgecore.decide.deadline import SyncPace
from judgecore.decide.polling import PollPolicy
from judgecore.results.outcomes import RawResult
from judgecore.run.batch.switching import SwitchPlan

from .fakes import TEMPLATE, FakeBatchApi, bind, make_requests

N = 30
SETTINGS = BatchSettings(max_batch_requests=10, poll=PollPolicy(interval=60.0, grace=1_800.0))
PACE = SyncPace(otpm=400_000, otpm_source="flag", concurrency=16, latency=10.0)


@pytest.fixture
def store(tmp_path: Path) -> Store:
    s = Store.open(tmp_path / "state")
    yield s
    s.close()


def go(
    store: Store,
    api: FakeBatchApi,
    clock: FakeClock,
    plan: SwitchPlan | None,
    events: list[Event],
    *,
    resumed: bool = False,
    deadline: float | None = None,
    tokens: Callable[[], float] | None = None,
) -> BatchRunResult:
    requests = make_requests(N)
    bind(store, requests)
    switcher = Switcher(store=store, api=api, clock=clock, emit=events.append, plan=plan, tokens=tokens)
    return asyncio.run(
        run_batch(
            store=store,
            requests=requests,
            template=TEMPLATE,
            api=api,
            clock=clock,
            settings=BatchSettings(
                max_batch_requests=SETTINGS.max_batch_requests,
                poll=SETTINGS.poll,
                deadline=deadline if deadline is not None else (plan.deadline if plan else None),
            ),
            emit=events.append,
            rng=random.Random(0),
            switcher=switcher,
            resumed_switch=resumed,
        )
    )


def plan_at(deadline: float) -> SwitchPlan:
    return SwitchPlan(
        deadline=deadline, pace=PACE, tokens_each=float(TEMPLATE.max_tokens), sync_usd_each=0.01
    )


def lines(events: list[Event]) -> list[str]:
    return [e.message for e in events if isinstance(e, Notice)]


def statuses(store: Store) -> Counter[str]:
    return Counter(o.status.value if o else "pending" for _, o, *_ in store.latest())


def test_a_batch_that_stalls_is_canceled_no_later_than_the_latest_switch_time(store):
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=None)  # never ends on its own
    plan = plan_at(clock.now() + 3_600.0)
    events: list[Event] = []
    res = go(store, api, clock, plan, events)
    assert res.switched
    record = store.switch
    assert record["at"] <= record["latest_switch"] + 1e-6  # not a poll interval late: woken for it
    assert record["latest_switch"] < plan.deadline
    assert record["extra_usd"] == pytest.approx(N * 0.01 * 0.5)
    cancels = [b for c, b in api.calls if c == "cancel"]
    assert sorted(cancels) == sorted(api.batches) and 3 == len(cancels)  # each live batch once
    assert 3 == api.count("create")  # nothing created after the switch
    assert 3 == api.count("results")  # each canceled batch harvested once it ended
    said = [line for line in lines(events) if line.startswith("deadline: switching")]
    assert 1 == len(said) and "canceling 3 live batches" in said[0] and "$0.15" in said[0]
    assert {"retry": N} == {k: v for k, v in statuses(store).items() if v}  # canceled: not final, for sync
    assert set() == store.job_state().in_flight  # no batch live: the sync route may send them all


def test_without_a_deadline_nothing_switches(store):
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=600.0)
    events: list[Event] = []
    res = go(store, api, clock, None, events)
    assert not res.switched and store.switch is None
    assert 0 == api.count("cancel")
    assert N == statuses(store)["succeeded"]


def test_a_batch_that_ends_before_the_switch_time_is_not_canceled(store):
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=600.0)
    events: list[Event] = []
    res = go(store, api, clock, plan_at(clock.now() + 7_200.0), events)
    assert not res.switched and 0 == api.count("cancel")
    assert N == statuses(store)["succeeded"]


class EndsAtTheCancel(FakeBatchApi):
    """A batch that ended between the last poll and the cancel: the API refuses the cancel (400)."""

    async def cancel(self, batch_id: str):
        self.calls.append(("cancel", batch_id))
        self.batches[batch_id].end_at = self.clock.now()
        raise BatchApiError(RawResult(kind="http_error", status=400, message=f"{batch_id} has already ended"))


def test_a_batch_that_ended_before_its_cancel_is_harvested_as_it_is(store):
    clock = FakeClock()
    api = EndsAtTheCancel(clock, batch_seconds=None)
    events: list[Event] = []
    res = go(store, api, clock, plan_at(clock.now() + 3_600.0), events)
    assert res.switched
    assert N == statuses(store)["succeeded"]  # every answer kept: nothing left for the sync route
    assert any("had already ended" in line for line in lines(events))


class CancelFails(FakeBatchApi):
    async def cancel(self, batch_id: str):
        self.calls.append(("cancel", batch_id))
        raise BatchApiError(RawResult(kind="http_error", status=500, error_type="api_error", message="boom"))


def test_a_batch_whose_cancel_fails_stays_live_and_its_items_stay_off_the_sync_route(store):
    clock = FakeClock()
    api = CancelFails(clock, batch_seconds=None)
    events: list[Event] = []
    plan = plan_at(clock.now() + 3_600.0)
    res = go(store, api, clock, plan, events)
    assert res.switched
    assert 3 == api.count("cancel")  # asked once each, not hammered
    assert any("cancel failed" in line for line in lines(events))
    assert clock.now() <= plan.deadline + 1e-6  # waited to the deadline, no further
    assert N == len(store.job_state().in_flight)  # still in a live batch: never sent sync meanwhile


def test_a_rerun_after_a_recorded_switch_cancels_what_is_live_and_creates_nothing(store):
    """The first run stops at its deadline with its batches live (as a kill right after the switch's
    record would leave them); the switch is recorded; a rerun with no deadline resumes it."""
    clock = FakeClock()
    api = FakeBatchApi(clock, batch_seconds=None)
    events: list[Event] = []
    first = go(store, api, clock, None, events, deadline=clock.now() + 600.0)
    assert not first.switched and 0 == api.count("cancel")
    store.switch = {"at": clock.now(), "latest_switch": clock.now(), "reason": "test"}
    again: list[Event] = []
    res = go(store, api, clock, None, again, resumed=True)
    assert res.switched
    assert 3 == api.count("cancel") and 3 == api.count("create")
    assert any("resuming the switch" in line for line in lines(again))
    assert set() == store.job_state().in_flight


@pytest.mark.parametrize("learned", [False, True])
def test_the_expected_output_is_learned_again_while_waiting_so_the_switch_comes_no_earlier_than_needed(
    store, learned
):
    """Planned at a huge output per answer, the sync route looks too slow at once: without learning
    the run switches as soon as a batch runs; told 10 tokens an answer, it waits until the latest
    switch time that figure gives."""
    clock = FakeClock()
    start = clock.now()
    api = FakeBatchApi(clock, batch_seconds=None)
    plan = SwitchPlan(deadline=start + 3_600.0, pace=PACE, tokens_each=1e6)
    res = go(store, api, clock, plan, [], tokens=(lambda: 10.0) if learned else None)
    assert res.switched
    at = store.switch["at"]
    assert (at > start + 3_000.0) if learned else (at < start + 120.0)
