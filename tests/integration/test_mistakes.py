"""A researcher's mistakes are told in one line: a verdict spec that reads none of the answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import write_items

pytestmark = pytest.mark.integration


def test_a_run_whose_answers_have_no_readable_verdict_warns_at_its_end(served, tmp_path: Path):
    """200 of 200 answers unreadable used to exit 0 without a word; the run now ends with a warning
    (still exit 0: every item is final), and so does the top of `summary`."""
    srv = served(Scenario(seed=41, unparseable_rate=1.0))
    items = write_items(tmp_path / "in.jsonl", [{"id": f"u{i}", "prompt": f"grade {i}"} for i in range(20)])
    verdict = tmp_path / "verdict.json"
    verdict.write_text('{"pattern": "Score: (?P<score>\\\\d+)"}')
    state = tmp_path / "s"
    res = srv.cli(["run", str(items), "--state", str(state), "--verdict", str(verdict)], timeout=120)
    assert 0 == res.returncode, res.stderr
    assert "warning: 20 of 20 answers have no readable verdict (VERDICT_UNPARSED)" in res.stderr
    summary = srv.cli(["summary", "--state", str(state)], timeout=60)
    assert 0 == summary.returncode
    assert summary.stderr.startswith("warning: 20 of 20 answers have no readable verdict")
