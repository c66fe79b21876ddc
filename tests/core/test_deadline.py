"""A deadline: next_deadline_action is next_poll_action grown a deadline; deadline_start says whether a
batch is worth sending; the sync route's time and the dry run's figures."""

from __future__ import annotations

import importlib.util
import math
import sys
import types
from pathlib import Path

import attrs
import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st
from strategies import batch_snapshots, epoch_times, poll_policies

from judgecore.decide.deadline import (
    AllSync,
    DeadlinePolicy,
    End,
    Pile,
    Switch,
    SyncPace,
    Unfinished,
    UseBatches,
    Watch,
    deadline_figures,
    deadline_start,
    next_deadline_action,
)
from judgecore.decide.polling import BatchSnapshot, Harvest, Overdue, PollIn, PollPolicy, next_poll_action

piles = st.builds(
    Pile.of, st.integers(0, 200_000), st.floats(min_value=0.0, max_value=64_000.0, allow_nan=False)
)
unfinished = st.builds(
    Unfinished,
    in_batches=piles,
    unsent=piles,
    in_flight=piles,
    sync_usd_each=st.one_of(st.none(), st.floats(min_value=0.0, max_value=1.0)),
)
paces = st.builds(
    SyncPace,
    otpm=st.integers(1, 10_000_000),
    otpm_source=st.sampled_from(["read", "flag", "assumed"]),
    rpm=st.one_of(st.none(), st.integers(1, 100_000)),
    concurrency=st.integers(1, 512),
    latency=st.floats(min_value=0.0, max_value=600.0),
)
policies = st.builds(
    DeadlinePolicy,
    share=st.floats(min_value=0.0, max_value=1.0),
    fixed=st.floats(min_value=0.0, max_value=3_600.0),
    cancel=st.floats(min_value=0.0, max_value=3_600.0),
    min_batch_window=st.floats(min_value=0.0, max_value=7_200.0),
)
ROOT = Path(__file__).resolve().parents[2]
live = st.sampled_from(["in_progress", "canceling"])
#: a deadline from a day before the batch to a week after it
deadline_offsets = st.floats(min_value=-86_400.0, max_value=7 * 86_400.0)


@st.composite
def watches(draw: st.DrawFn, *, around: float) -> Watch:
    return Watch(
        deadline=around + draw(deadline_offsets),
        unfinished=draw(unfinished),
        pace=draw(paces),
        policy=draw(policies),
    )


@st.composite
def situations(draw: st.DrawFn, *, status: st.SearchStrategy[str] = live):
    """A batch, a moment, a poll policy and a watch whose deadline is near the batch's life."""
    batch = draw(batch_snapshots(status=status))
    now = batch.created_at + draw(st.floats(min_value=-3_600.0, max_value=3 * 86_400.0))
    return batch, now, draw(poll_policies), draw(watches(around=batch.created_at))


PACE = SyncPace(otpm=400_000, otpm_source="read", concurrency=256, latency=10.0)
RUNNING = BatchSnapshot(id="msgbatch_a", status="in_progress", created_at=0.0, expires_at=86_400.0)


def watch_of(deadline: float, *, in_batches: int = 20_000, unsent: int = 0, tokens: float = 100.0) -> Watch:
    u = Unfinished(in_batches=Pile.of(in_batches, tokens), unsent=Pile.of(unsent, tokens), sync_usd_each=0.01)
    return Watch(deadline=deadline, unfinished=u, pace=PACE)


# --- without a deadline, or with one beyond the batch's own: today's function --------------------


@given(batch_snapshots(), epoch_times, poll_policies)
def test_without_a_deadline_it_is_next_poll_action(batch, now, policy):
    assert next_poll_action(now, batch, policy) == next_deadline_action(now, batch, policy)


@given(situations(status=st.sampled_from(["in_progress", "canceling", "ended"])))
def test_a_deadline_whose_switch_falls_after_the_batchs_own_deadline_changes_nothing(case):
    """Once the latest switch time is past `expires_at + grace`, the deadline never cuts a wait."""
    batch, now, policy, watch = case
    far = attrs.evolve(watch, deadline=policy.deadline(batch) + watch.needed + abs(now) + 1.0)
    assert far.latest_switch > policy.deadline(batch)
    assert next_poll_action(now, batch, policy) == next_deadline_action(now, batch, policy, far)


# --- the laws with a deadline ----------------------------------------------------------------------


@given(situations())
def test_a_wait_never_reaches_past_the_deadline_nor_the_latest_switch_time(case):
    batch, now, policy, watch = case
    action = next_deadline_action(now, batch, policy, watch)
    if isinstance(action, PollIn):
        assert 0.0 < action.seconds <= policy.interval
        assert now + action.seconds <= watch.deadline
        if batch.status == "in_progress":
            assert now + action.seconds <= watch.latest_switch


@given(situations(status=st.just("in_progress")))
def test_a_running_batch_switches_at_the_latest_switch_time_and_never_waits_past_it(case):
    """Whatever it answers, the sync route still has its time and margin after the wait: from the
    latest switch time on, a running batch is the switch (until the deadline, then the end)."""
    batch, now, policy, watch = case
    action = next_deadline_action(now, batch, policy, watch)
    if now >= watch.deadline:
        assert isinstance(action, End)
    elif now >= watch.latest_switch:
        assert isinstance(action, Switch)
        assert (now, watch.latest_switch) == (action.at, action.latest_switch)
    elif isinstance(action, PollIn):
        assert now + action.seconds + watch.needed <= watch.deadline
    else:
        assert isinstance(action, Overdue)


@given(situations(status=st.just("in_progress")), st.floats(min_value=1.0, max_value=3_600.0))
def test_waiting_step_by_step_switches_no_later_than_the_last_moment_the_sync_route_could_finish(
    case, interval
):
    """A run that only ever waits as told reaches the switch at the latest switch time itself (or is
    overdue, or ends, first): never later."""
    batch, start, _, watch = case
    policy = PollPolicy(interval=interval, grace=1_800.0)
    now = start
    assume(min(watch.latest_switch, policy.deadline(batch)) - start < 2_000 * interval)
    while isinstance(action := next_deadline_action(now, batch, policy, watch), PollIn):
        now += action.seconds
    event(type(action).__name__)
    assert isinstance(action, Switch | Overdue | End)
    if isinstance(action, Switch) and start < watch.latest_switch:
        assert watch.latest_switch == now  # the waits land on it, never beyond


@given(situations())
def test_a_switch_never_sends_an_item_that_is_still_in_a_live_batch(case):
    """Only the items on no route go at once; those of the live batches wait for their batch to end. A
    batch already `canceling` never answers a switch (nor anything that sends): it waits for its end."""
    batch, now, policy, watch = case
    action = next_deadline_action(now, batch, policy, watch)
    if batch.status == "canceling":
        assert isinstance(action, PollIn | Overdue | End)
    if isinstance(action, Switch):
        assert watch.unfinished.unsent.requests == action.send_now
        assert watch.unfinished.in_batches.requests == action.after_cancel


@given(situations(), st.floats(min_value=0.0, max_value=86_400.0))
def test_a_deadline_come_or_past_is_the_end_for_a_live_batch(case, late):
    batch, _, policy, watch = case
    now = watch.deadline + late
    assert End(deadline=watch.deadline, reason=_end_reason(watch)) == next_deadline_action(
        now, batch, policy, watch
    )
    assert isinstance(deadline_start(now, watch), End)


def _end_reason(watch: Watch) -> str:
    return next_deadline_action(watch.deadline, RUNNING, PollPolicy(), watch).reason  # type: ignore[union-attr]


@given(situations(status=st.just("ended")))
def test_an_ended_batch_is_harvested_even_at_the_deadline(case):
    """Its answers exist and are paid for: recording them is no wait."""
    batch, now, policy, watch = case
    assert Harvest(batch.id) == next_deadline_action(max(now, watch.deadline), batch, policy, watch)


def test_a_canceling_batch_waits_until_the_deadline_not_the_switch_time():
    watch = watch_of(10_000.0)
    canceling = attrs.evolve(RUNNING, status="canceling")
    now = watch.latest_switch + 10.0
    assert PollIn(60.0) == next_deadline_action(now, canceling, PollPolicy(), watch)
    assert PollIn(5.0) == next_deadline_action(9_995.0, canceling, PollPolicy(), watch)


@given(unfinished, unfinished, paces, policies)
def test_more_left_to_do_never_moves_the_latest_switch_later(a, more, pace, policy):
    bigger = Unfinished(
        in_batches=a.in_batches + more.in_batches,
        unsent=a.unsent + more.unsent,
        in_flight=a.in_flight + more.in_flight,
    )
    small = Watch(deadline=1e6, unfinished=a, pace=pace, policy=policy)
    large = Watch(deadline=1e6, unfinished=bigger, pace=pace, policy=policy)
    if (a.in_batches.requests > 0) == (bigger.in_batches.requests > 0):
        assert large.latest_switch <= small.latest_switch


# --- examples: the figures a user sees --------------------------------------------------------------


def test_the_sync_route_time_is_the_slowest_of_tokens_slots_and_requests():
    # 20,000 requests x 100 tokens at 400,000 OTPM (95% paced): 316 s; 79 rounds of 256 x 10 s: 790 s
    assert 790.0 == PACE.seconds(Pile.of(20_000, 100))
    # a low tier: 2,000 x 100 tokens at 8,000 OTPM paced at 7,600: 1,578.9 s
    low = SyncPace(otpm=8_000, concurrency=64, latency=10.0)
    assert 200_000 / 7_600 * 60 == pytest.approx(low.seconds(Pile.of(2_000, 100)))
    # 50 RPM: 1,000 requests need 1,000 / 47.5 minutes
    rpm = SyncPace(otpm=400_000, rpm=50, concurrency=256, latency=1.0)
    assert 1_000 / 47.5 * 60 == pytest.approx(rpm.seconds(Pile.of(1_000, 10)))
    assert 0.0 == PACE.seconds(Pile())


def test_the_margin_is_a_quarter_plus_a_minute_plus_two_for_the_cancel():
    watch = watch_of(10_000.0)
    assert 790.0 * 1.25 + 60.0 + 120.0 == pytest.approx(watch.needed)
    assert 10_000.0 - (790.0 * 1.25 + 180.0) == pytest.approx(watch.latest_switch)
    unsent_only = watch_of(10_000.0, in_batches=0, unsent=20_000)
    assert 790.0 * 1.25 + 60.0 == pytest.approx(unsent_only.needed)


def test_the_switch_says_when_why_and_at_most_what_it_adds():
    watch = watch_of(1_764_781_200.0, in_batches=16_000, unsent=4_000)  # 2025-12-03 17:00 UTC
    now = watch.latest_switch
    action = next_deadline_action(now, RUNNING, PollPolicy(), watch)
    assert isinstance(action, Switch)
    assert (4_000, 16_000) == (action.send_now, action.after_cancel)
    assert 20_000 * 0.01 * 0.5 == pytest.approx(action.extra_usd)
    assert action.reason.startswith(
        "deadline 2025-12-03 17:00:00 UTC: the sync route needs about 13 min (+ margin 6 min)"
    )
    assert "20,000 requests not final at OTPM 400,000 (read)" in action.reason
    assert "the latest switch time is 2025-12-03 16:40:32 UTC" in action.reason
    late = next_deadline_action(now + 600, RUNNING, PollPolicy(), watch)
    assert isinstance(late, Switch)
    assert late.reason.endswith("(10 min late)")


def test_a_deadline_too_close_for_any_batch_is_all_sync_from_the_start():
    far = watch_of(10_000.0, in_batches=0, unsent=20_000)
    assert UseBatches(latest_switch=far.batched().latest_switch) == deadline_start(0.0, far)
    assert far.batched().latest_switch == pytest.approx(10_000.0 - 790.0 * 1.25 - 180.0)
    near = watch_of(1_300.0, in_batches=0, unsent=20_000)  # 1,300 - 1,167.5 = 132.5 s < 300 s
    start = deadline_start(0.0, near)
    assert isinstance(start, AllSync)
    assert start.reason.startswith("deadline 1970-01-01 00:21:40 UTC: the sync route needs about 13 min")
    assert start.reason.endswith(
        ": too close for any batch (it leaves 2 min before the latest switch time); everything goes sync"
    )
    assert 20_000 * 0.01 * 0.5 == pytest.approx(start.extra_usd)
    assert 0.0 == start.short_by
    hopeless = deadline_start(0.0, watch_of(600.0, in_batches=0, unsent=20_000))
    assert isinstance(hopeless, AllSync)
    assert "the sync route needs all the time left" in hopeless.reason
    assert 790.0 * 1.25 + 60.0 - 600.0 == pytest.approx(hopeless.short_by)
    assert hopeless.reason.endswith(
        "even so the sync route is 7 min short: some items will be pending at the deadline"
    )


@given(unfinished, paces, policies, st.floats(min_value=-86_400.0, max_value=86_400.0))
def test_batches_are_sent_only_with_the_minimum_window_before_the_switch(pending, pace, policy, offset):
    watch = Watch(deadline=offset, unfinished=pending, pace=pace, policy=policy)
    start = deadline_start(0.0, watch)
    if offset <= 0:
        assert isinstance(start, End)
    elif isinstance(start, UseBatches):
        assert start.latest_switch >= policy.min_batch_window
        assert start.latest_switch + watch.batched().needed == pytest.approx(watch.deadline)
    else:
        assert isinstance(start, AllSync)
        assert watch.batched().latest_switch < policy.min_batch_window


def test_the_dry_run_figures():
    watch = watch_of(7_200.0, in_batches=0, unsent=20_000)
    figures = deadline_figures(0.0, watch, all_batch_usd=100.0, all_sync_usd=190.0)
    assert 7_200.0 - (790.0 * 1.25 + 180.0) == pytest.approx(figures.latest_switch)
    assert (790.0, False, 100.0) == (figures.sync_seconds, figures.all_sync_from_start, figures.all_batch_usd)
    assert 90.0 == pytest.approx(figures.most_added_usd)
    near = deadline_figures(0.0, attrs.evolve(watch, deadline=900.0), all_batch_usd=None, all_sync_usd=190.0)
    assert (None, True, None) == (near.latest_switch, near.all_sync_from_start, near.most_added_usd)


def test_bad_figures_are_refused():
    with pytest.raises(ValueError, match="OTPM, RPM and concurrency"):
        SyncPace(otpm=0)
    with pytest.raises(ValueError, match="share"):
        DeadlinePolicy(share=math.nan)
    with pytest.raises(ValueError, match="pile"):
        Pile(requests=-1)


# --- whole runs: the decisions driven through a job (bench/deadline.py's simulated clock) -------------


def _bench() -> types.ModuleType:
    """`bench/deadline.py`, whose `run_job` asks these decisions of every live batch at every poll."""
    spec = importlib.util.spec_from_file_location("bench_deadline", ROOT / "bench" / "deadline.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (attrs looks the module of its classes up)
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return module


BENCH = _bench()


@given(
    n=st.integers(1, 60_000),
    hours=st.floats(min_value=0.1, max_value=12.0),
    latencies=st.lists(st.floats(min_value=1.0, max_value=2 * 86_400.0), min_size=8, max_size=8),
    progress=st.sampled_from(["linear", "none"]),
    cancel=st.floats(min_value=0.0, max_value=120.0),
)
def test_a_run_whose_sync_route_is_as_estimated_is_final_by_the_deadline_whatever_the_batches_do(
    n, hours, latencies, progress, cancel
):
    """When the sync route is as fast as estimated and a cancel takes at most its allowance, every
    job the sync route alone could finish in time is final by the deadline, however long its batches
    take; it never costs more than all-sync, nor less than every batch on time."""
    sizes = tuple(min(BENCH.SUB_BATCH, n - i) for i in range(0, n, BENCH.SUB_BATCH))
    job = BENCH.Job(
        sizes=sizes,
        latencies=tuple(latencies[: len(sizes)]),
        deadline=hours * 3_600.0,
        cancel_delay=cancel,
        true_pace=BENCH.PACE,
        true_tokens=BENCH.TOKENS,
        progress=progress,
    )
    result = BENCH.run_job(job, DeadlinePolicy())
    event("all sync" if result.all_sync else "switched" if result.switched else "batches only")
    if BENCH.PACE.seconds(Pile.of(n, BENCH.TOKENS)) * 1.25 + 60.0 <= job.deadline:
        assert result.final_by_deadline
    assert 0.5 * n <= result.cost <= n
    # every batch ended before the earliest latest switch time (all n unfinished, batches live, the
    # policy's whole margin: its share, fixed seconds and cancel allowance): nothing went sync
    earliest_switch = job.deadline - DeadlinePolicy().needed(
        BENCH.PACE.seconds(Pile.of(n, BENCH.TOKENS)), batches_live=True
    )
    if all(lat <= earliest_switch for lat in job.latencies) and not result.all_sync:
        assert 0.5 * n == result.cost


def test_a_switch_time_beyond_the_calendar_is_still_said():
    """A sync route needing centuries (OTPM 1) puts the latest switch time before year 1: said in epoch
    seconds, not a crash."""
    slow = Watch(deadline=0.0, unfinished=Unfinished(unsent=Pile.of(200_000, 64_000)), pace=SyncPace(otpm=1))
    start = deadline_start(-1.0, slow)
    assert isinstance(start, AllSync)
    assert "deadline 1970-01-01 00:00:00 UTC: the sync route needs about " in start.reason
    late = next_deadline_action(-1.0, RUNNING, PollPolicy(), slow)
    assert isinstance(late, Switch)
    assert "the latest switch time is epoch -" in late.reason
