"""Self-preference from a real panel's checkpoint (real SDK, real HTTP, the simulator): `summary --author`
in text and JSON, shown only for a panel whose items name their authors; a key no item has is exit 2."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from adapters.simulator.scenario import Scenario

from .conftest import Served, read_output, write_items

pytestmark = pytest.mark.integration

TEMPLATE = "Question: {question}\nResponse: {response}\nGrade the response: 'Score: N' on a 1-10 scale.\n"
WRITERS = ("claude-3-5-haiku", "gpt-4o-mini", "Qwen/Qwen2.5-7B-Instruct")
JUDGES = ("claude-haiku-4-5", "claude-opus-4-6")


def test_a_panel_whose_items_name_their_writers_gets_self_preference_per_judge(
    tmp_path: Path, served: Callable[[Scenario], Served]
) -> None:
    s = served(Scenario(seed=3))
    rows = [
        {"id": f"r{i}", "question": f"2+{i}?", "response": str(2 + i), "writer": WRITERS[i % 3]}
        for i in range(24)
    ]
    items = write_items(tmp_path / "graded.jsonl", rows)
    (tmp_path / "grade.txt").write_text(TEMPLATE)
    (tmp_path / "verdict.json").write_text(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}).decode())
    state = tmp_path / "state"
    panel = [w for j in JUDGES for w in ("--judge", j)]
    args = ["run", str(items), "--state", str(state), "--template", str(tmp_path / "grade.txt")]
    r = s.cli([*args, "--verdict", str(tmp_path / "verdict.json"), "--force-sync", *panel])
    assert 0 == r.returncode, r.stderr
    lines = read_output(state / "output.jsonl")
    both = [x for x in lines if all(isinstance((x["judges"] or {}).get(j), dict) for j in JUDGES)]

    out = s.cli(["summary", "--state", str(state), "--author", "writer", "--json"])
    assert 0 == out.returncode, out.stderr
    sp = orjson.loads(out.stdout)["self_preference"]
    assert "writer" == sp["author_key"]
    by_judge = {j["judge"]: j for j in sp["judges"]}
    assert set(JUDGES) == set(by_judge)
    own = sum(1 for x in both if x["metadata"]["writer"].startswith("claude"))
    for j in JUDGES:  # both judges are Anthropic's: the Claude-written answers are their own family's
        assert ("anthropic", own, len(both) - own) == (
            by_judge[j]["family"],
            by_judge[j]["n_own"],
            by_judge[j]["n_other"],
        )
    text = s.cli(["summary", "--state", str(state), "--author", "writer"])
    assert "self-preference (authors: metadata['writer']" in text.stdout

    plain = s.cli(["summary", "--state", str(state), "--json"])  # no item has metadata.model
    assert 0 == plain.returncode and "self_preference" not in orjson.loads(plain.stdout)
    typo = s.cli(["summary", "--state", str(state), "--author", "writter"])
    assert 2 == typo.returncode
    assert "--author writter: no item's metadata has the key 'writter'" in typo.stderr
    assert "writer" in typo.stderr  # the keys that exist are named
