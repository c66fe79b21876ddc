"""Which lanes of a panel take their batch route: each lane by its own request count against its own
provider's threshold, as a job of that provider alone of that size would be routed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from adapters.run.lanes import batch_lanes, lane_of_unit, limits_read, route_lanes_of
from judgecore.decide.routing import Route, route_lanes

PANEL = ["claude-sonnet-4-6", "openai:gpt-5-mini", "served:Qwen/Qwen3-32B@http://gpu01:8000/v1"]
SERVED = "served@http://gpu01:8000/v1"


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({"anthropic": 2000, "openai": 2000, SERVED: 5000}, {"anthropic", "openai"}),
        ({"anthropic": 2000, "openai": 1999, SERVED: 5000}, {"anthropic"}),  # OpenAI's too small
        ({"anthropic": 1999, "openai": 2000, SERVED: 5000}, {"openai"}),
        ({"anthropic": 10, "openai": 10, SERVED: 5000}, set()),  # a served model never batches
    ],
)
def test_each_lane_is_routed_by_its_own_count(counts, expected):
    assert expected == batch_lanes(PANEL, counts, threshold=2000)


def test_a_lanes_limit_read_scales_its_own_threshold_only():
    # Anthropic's OTPM read at a tenth of its reference: its threshold is 200; OpenAI's stays 2,000
    limits = {"anthropic": 40_000}
    counts = {"anthropic": 300, "openai": 300}
    assert {"anthropic"} == batch_lanes(PANEL, counts, threshold=2000, limits=limits)


def test_force_batch_batches_every_lane_with_a_batch_route_and_force_sync_none():
    counts = {"anthropic": 1, "openai": 1, SERVED: 1}
    assert {"anthropic", "openai"} == batch_lanes(PANEL, counts, threshold=2000, force="batch")
    assert set() == batch_lanes(PANEL, {"anthropic": 10**6}, threshold=2000, force="sync")


def test_the_limit_known_is_the_first_judges_lanes_and_only_when_read_or_given():
    read = Route(path="batch", n=1, threshold=1, otpm=90_000, otpm_source="read", forced=False, reason="")
    assumed = Route(
        path="batch", n=1, threshold=1, otpm=400_000, otpm_source="assumed", forced=False, reason=""
    )
    assert {"openai": 90_000} == limits_read("openai:gpt-5-mini", read)
    assert {} == limits_read("claude-sonnet-4-6", assumed)
    assert {} == limits_read("claude-sonnet-4-6", None)


def test_a_sub_batch_named_by_a_judge_is_read_as_its_lane():
    judges = ["claude-sonnet-4-6", "openai:gpt-5-mini", "openai:gpt-5-nano"]
    assert "openai" == lane_of_unit("openai:gpt-5-nano", judges)
    assert "openai" == lane_of_unit("openai", judges)
    assert "anthropic" == lane_of_unit("anthropic", judges)


@given(
    st.integers(0, 5000),
    st.integers(0, 5000),
    st.integers(0, 5000),
    st.sampled_from([None, 40_000, 400_000, 4_000_000]),
    st.sampled_from([PANEL[0], PANEL[1]]),
)
def test_the_jobs_route_batches_exactly_when_some_lane_takes_its_batch_route(
    claude, openai, served, otpm, first
):
    """The job machine's decision (`route_lanes` of the lanes the shell gives it) and the batch part's
    (`batch_lanes`, the limit read back from the route) agree: the job batches when a lane will."""
    models = [first, *(m for m in PANEL if m != first)]
    counts = {"anthropic": claude, "openai": openai, SERVED: served}
    given_lanes = route_lanes_of(models, counts, first, threshold=2000)
    probed = "anthropic" if first == PANEL[0] else "openai"  # the first judge's lane reads the tier
    assert [probed] == [lane.name for lane in given_lanes if lane.probed]
    chosen = route_lanes(given_lanes, n=claude + openai + served, otpm=otpm)
    on_batch = batch_lanes(models, counts, threshold=2000, limits=limits_read(first, chosen))
    assert (chosen.path == "batch") == bool(on_batch)
    if on_batch:
        assert chosen.reason.startswith(
            f"{min(on_batch, key=[lane.name for lane in given_lanes].index)} lane: "
        )


def test_a_job_of_one_lane_gives_the_machine_no_lanes():
    assert () == route_lanes_of(
        ["claude-sonnet-4-6", "claude-haiku-4-5"], {"anthropic": 9}, "claude-sonnet-4-6", threshold=20
    )
