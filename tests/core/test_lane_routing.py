"""A panel's route decided lane by lane: batch when any lane's own count reaches its own provider's
threshold (`route_lanes`), whatever the whole job's count says against one provider's threshold; the
job machine and its dry run decide it so, and a sync route is decided again once a lane grew past its
threshold."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judgecore.decide.routing import (
    DecideRoute,
    KeepRoute,
    Lane,
    RoutePolicy,
    keep_or_redecide,
    route,
    route_lanes,
)
from judgecore.job.idsets import Picked
from judgecore.results.status import Status
from judgecore.run.job._machine import History, JobPolicy, JobRun
from judgecore.run.job._vocab import Probe, Probed, RecordRoute, RunBatch, RunSync

CLAUDE = RoutePolicy(base_threshold=20)  # 20 requests at 400,000 OTPM
OPENAI = RoutePolicy(base_threshold=20, reference_otpm=4_000_000, assumed_otpm=4_000_000, limit_name="TPM")
SERVED = RoutePolicy(base_threshold=20, sync_only="served")


def _panel(claude: int, openai: int) -> tuple[Lane, ...]:
    return (
        Lane(name="anthropic", n=claude, policy=CLAUDE, probed=True),
        Lane(name="openai", n=openai, policy=OPENAI),
    )


def test_a_lane_over_its_own_threshold_batches_the_job_though_the_whole_count_would_not():
    # Claude read at 4,000,000 OTPM: its threshold is 200, which the whole job's 60 requests do not reach;
    # OpenAI's lane (30 at its reference TPM, threshold 20) does: the job goes to batches
    lanes = _panel(30, 30)
    assert "sync" == route(60, policy=CLAUDE, otpm=4_000_000).path  # what the whole count said
    chosen = route_lanes(lanes, n=60, otpm=4_000_000)
    assert "batch" == chosen.path
    assert chosen.reason.startswith("openai lane: 30 requests >= threshold 20 at TPM 4,000,000 (assumed)")
    # the tier recorded is the probed lane's (what the batch part reads back for it), the threshold the deciding lane's
    assert (60, 4_000_000, "read", 20, False) == (
        chosen.n,
        chosen.otpm,
        chosen.otpm_source,
        chosen.threshold,
        chosen.forced,
    )


def test_a_job_whose_whole_count_would_batch_but_no_lane_reaches_its_own_threshold_goes_sync():
    # 15 + 15 = 30 >= 20 at Claude's reference, yet each lane is under its own threshold
    lanes = (
        Lane(name="anthropic", n=15, policy=CLAUDE, probed=True),
        Lane(name="openai", n=15, policy=OPENAI),
    )
    assert "batch" == route(30, policy=CLAUDE).path
    chosen = route_lanes(lanes, n=30)
    assert "sync" == chosen.path
    assert "each lane under its own threshold" in chosen.reason
    assert "anthropic lane: 15 requests < threshold 20" in chosen.reason
    assert "openai lane: 15 requests < threshold 20" in chosen.reason


def test_a_served_lane_never_batches_a_panel_and_a_force_says_what_the_lanes_would_do():
    lanes = (*_panel(5, 5), Lane(name="served@http://h/v1", n=10**6, policy=SERVED))
    assert "sync" == route_lanes(lanes, n=10**6 + 10).path
    forced = route_lanes(lanes, n=10**6 + 10, force="batch", otpm_source="flag")
    assert ("batch", True) == (forced.path, forced.forced)
    assert "--force-batch; by its lanes' counts it would go sync" == forced.reason


@given(
    st.integers(0, 10**5),
    st.sampled_from([None, 1_000, 400_000, 4_000_000]),
    st.sampled_from([None, "sync", "batch"]),
)
def test_one_lane_routes_exactly_as_the_job_of_its_provider_alone(n, otpm, force):
    lane = (Lane(name="anthropic", n=n, policy=CLAUDE, probed=True),)
    assert route(n, policy=CLAUDE, otpm=otpm, force=force) == route_lanes(lane, n=n, otpm=otpm, force=force)


@given(st.integers(0, 400), st.integers(0, 400), st.sampled_from([None, 1_000, 400_000, 4_000_000]))
def test_a_panel_batches_exactly_when_some_lane_alone_would(claude, openai, otpm):
    alone = [route(claude, policy=CLAUDE, otpm=otpm).path, route(openai, policy=OPENAI).path]
    chosen = route_lanes(_panel(claude, openai), n=claude + openai, otpm=otpm)
    assert ("batch" if "batch" in alone else "sync") == chosen.path


def test_the_machine_and_its_dry_run_route_a_panel_by_its_lanes():
    ids = tuple(f"c{i}" for i in range(60))
    policy = JobPolicy(otpm=4_000_000, route_policy=CLAUDE, lanes=_panel(30, 30))
    run = JobRun.start(ids, History(), policy)
    assert "batch" == run.dry_run().route.path
    _, actions = run.advance()
    recorded = [a.route for a in actions if isinstance(a, RecordRoute)]
    assert ["batch"] == [r.path for r in recorded] and "openai lane" in recorded[0].reason
    assert [RunBatch(Picked(ids, range(60)))] == [a for a in actions if isinstance(a, RunBatch)]
    # the same job without its lanes is routed by its whole count: sync
    whole = JobRun.start(ids, History(), JobPolicy(otpm=4_000_000, route_policy=CLAUDE))
    assert "sync" == whole.dry_run().route.path


def test_the_probe_reads_the_probed_lanes_tier_and_the_lanes_decide():
    ids = tuple(f"c{i}" for i in range(60))
    run = JobRun.start(ids, History(), JobPolicy(route_policy=CLAUDE, lanes=_panel(30, 10)))
    run, actions = run.advance()
    assert Probe("c0") in actions
    # Claude's lane read at 4,000,000 OTPM: 30 < 200, OpenAI's 10 < 20: the job goes sync
    run = run.on(Probed(item_id="c0", status=Status.SUCCEEDED, otpm=4_000_000))
    run, actions = run.advance()
    (recorded,) = [a.route for a in actions if isinstance(a, RecordRoute)]
    assert ("sync", 4_000_000, "read") == (recorded.path, recorded.otpm, recorded.otpm_source)
    assert [RunSync] == [type(a) for a in actions if isinstance(a, RunSync | RunBatch)]


def test_a_panels_sync_route_is_decided_again_once_a_lane_grew_past_its_own_threshold():
    stored = route_lanes(_panel(30, 10), n=40, otpm=4_000_000)
    assert "sync" == stored.path
    kept = keep_or_redecide(stored, n=50, force=None, answered=True, lanes_batch=False)
    assert isinstance(kept, KeepRoute) and 50 == kept.route.n
    again = keep_or_redecide(stored, n=50, force=None, answered=True, lanes_batch=True)
    assert isinstance(again, DecideRoute) and "a lane's own count reached its threshold" in again.why
    # through the machine: OpenAI's lane grew from 10 to 20 requests (its threshold)
    ids = tuple(f"c{i}" for i in range(50))
    history = History(stored=stored, otpm_read=4_000_000, final=frozenset(ids[:40]))
    run = JobRun.start(ids, history, JobPolicy(route_policy=CLAUDE, lanes=_panel(30, 20)))
    assert "batch" == run.dry_run().route.path
    still = JobRun.start(ids[:40], history, JobPolicy(route_policy=CLAUDE, lanes=_panel(30, 10)))
    assert "sync" == still.dry_run().route.path
