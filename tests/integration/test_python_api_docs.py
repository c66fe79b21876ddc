"""Every example of docs/python-api.md runs as written, from a directory laid out like the clone's root
(its `examples/`), against the simulator pointed at as the page says (`ANTHROPIC_BASE_URL`)."""

from __future__ import annotations

import os
import re

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import ROOT

pytestmark = pytest.mark.integration

PAGE = ROOT / "docs" / "python-api.md"
EXAMPLES = re.findall(r"^```python\n(.*?)^```", PAGE.read_text(encoding="utf-8"), re.M | re.S)


def test_the_page_has_examples():
    assert 2 <= len(EXAMPLES)


@pytest.mark.parametrize("n", range(len(EXAMPLES)))
def test_each_example_runs_as_written_against_the_simulator(served, tmp_path, monkeypatch, n):
    """The designs example used `rows` without saying where they came from (a NameError), and the first
    read `rubric.txt`, which the clone does not have at its root."""
    srv = served(Scenario(seed=31))
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for key in [k for k in os.environ if k.startswith("ANTHROPIC_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", srv.base_url)  # as the page says to point it there
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-sim")
    scope: dict[str, object] = {}
    exec(compile(EXAMPLES[n], f"{PAGE}:example {n + 1}", "exec"), scope)
    result = scope["result"]
    assert 0 == result.exit_code  # type: ignore[attr-defined]
    assert srv.sim.message_requests()  # it went to the simulator
