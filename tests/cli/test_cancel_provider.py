"""`judgecore cancel` cancels through the provider whose batches the job has: a panel's batch lane as
the run chose it, not whichever judge its manifest lists first."""

from __future__ import annotations

import pytest

from adapters.checkpoint.store import Store
from adapters.cli.cancel import _provider_of_job


@pytest.mark.parametrize(
    ("manifest", "provider"),
    [
        ({"model": "openai:gpt-5-mini"}, "openai"),
        ({"model": "claude-sonnet-4-6"}, "anthropic"),
        # the run batches Claude's judges when the panel has any, whatever their place in the list
        ({"judges": ["openai:gpt-5-mini", "claude-sonnet-4-6"]}, "anthropic"),
        ({"judges": ["served:Qwen/Qwen3-32B", "openai:gpt-5-mini"]}, "openai"),
        ({}, "anthropic"),
    ],
)
def test_cancel_goes_to_the_provider_whose_batches_the_job_has(tmp_path, manifest, provider):
    store = Store.open(tmp_path / "s")
    try:
        if manifest:
            store.manifest = manifest
    finally:
        store.close()
    assert provider == _provider_of_job(tmp_path / "s").name
