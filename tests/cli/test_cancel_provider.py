"""`judgecore cancel` cancels each lane's batches through that lane's provider: a sub-batch names its
lane in the checkpoint; one an earlier version recorded (no lane) is its job's one batch lane's."""

from __future__ import annotations

import pytest

from adapters.checkpoint.store import Store
from adapters.cli.cancel import _judges_of_job, _provider_of_lane
from adapters.run.lanes import legacy_batch_lane


@pytest.mark.parametrize(
    ("manifest", "lane", "provider"),
    [
        ({"model": "openai:gpt-5-mini"}, "openai", "openai"),
        ({"model": "claude-sonnet-4-6"}, "anthropic", "anthropic"),
        ({"judges": ["openai:gpt-5-mini", "claude-sonnet-4-6"]}, "openai", "openai"),
        ({"judges": ["openai:gpt-5-mini", "claude-sonnet-4-6"]}, "anthropic", "anthropic"),
        ({}, "anthropic", "anthropic"),
    ],
)
def test_a_lanes_batches_are_canceled_through_its_own_provider(tmp_path, manifest, lane, provider):
    store = Store.open(tmp_path / "s")
    try:
        if manifest:
            store.manifest = manifest
    finally:
        store.close()
    assert provider == _provider_of_lane(_judges_of_job(tmp_path / "s"), lane).name


@pytest.mark.parametrize(
    ("judges", "lane"),
    [
        # the earlier version batched Claude's judges when the panel had any, whatever their place
        (["openai:gpt-5-mini", "claude-sonnet-4-6"], "anthropic"),
        (["served:Qwen/Qwen3-32B", "openai:gpt-5-mini"], "openai"),
        (["served:Qwen/Qwen3-32B"], None),
    ],
)
def test_an_older_dirs_sub_batches_are_its_one_batch_lanes(judges, lane):
    assert lane == legacy_batch_lane(judges)
