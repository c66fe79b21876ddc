"""Structured outputs end to end against the strict simulator: the CLI and the real SDK over HTTP.

The verdict schema example of docs/scores.md (bounds, no `additionalProperties`) is refused by the API as written;
judgecore sends the SDK's transform of it, so nothing is refused, and validates each answer against the
schema as the user wrote it, so a score the API let through outside 1..5 is `VERDICT_UNPARSED`."""

from __future__ import annotations

import re
from pathlib import Path

import anthropic
import orjson
import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import ROOT, read_output, write_items

pytestmark = pytest.mark.integration

ROUTES = [pytest.param("--force-sync", id="sync"), pytest.param("--force-batch", id="batch")]
RUBRIC = "Grade the candidate on a 1-5 scale; give a score and a short rationale.\n" * 40


def docs_schema_spec() -> dict:
    """The schema example of docs/scores.md, as that page prints it."""
    scores = (ROOT / "docs/scores.md").read_text(encoding="utf-8")
    block = re.search(r"The verdict file is JSON, one of:\n\n```\n(.*?)\n```", scores, re.S)
    assert block is not None, "the verdict file example of docs/scores.md moved"
    spec_text = block.group(1).split('\n{"pattern"')[0]
    spec = orjson.loads(spec_text)
    assert "minimum" in orjson.dumps(spec).decode()  # the example still has bounds the API refuses
    return spec


def as_sent(schema: dict) -> dict:
    """What the SDK's transform makes of `schema`, keys sorted first (as the job keeps the schema: its
    manifest digest is of that text)."""
    return anthropic.transform_schema(orjson.loads(orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)))


def _job(tmp_path: Path, n: int) -> tuple[Path, Path, Path]:
    items = write_items(
        tmp_path / "items.jsonl", [{"id": f"i{k}", "prompt": f"answer #{k}"} for k in range(n)]
    )
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC)
    verdict = tmp_path / "verdict.json"
    verdict.write_bytes(orjson.dumps(docs_schema_spec()))
    return items, rubric, verdict


@pytest.mark.parametrize("force", ROUTES)
def test_the_readme_schema_is_never_refused_and_a_score_outside_its_bounds_is_verdict_unparsed(
    served, tmp_path, force
):
    srv = served(Scenario(seed=11, batch_seconds=0.2, out_of_range_rate=0.3))
    items, rubric, verdict = _job(tmp_path, 40)
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--verdict", str(verdict)]
    res = srv.cli([*args, force, "--poll-interval", "0.1"])
    assert 0 == res.returncode, res.stderr

    sent = as_sent(docs_schema_spec()["schema"])
    refused = [e for e in srv.sim.message_requests() if e.status == 400]
    errored = [r for b in srv.sim.batches for r in b.results or () if r["result"]["type"] == "errored"]
    assert ([], []) == (refused, errored)
    assert 40 == len(srv.sim.billed)
    for b in srv.sim.batches:  # what a batch carried, request by request
        assert all(sent == p["output_config"]["format"]["schema"] for p in b.params)

    rows = read_output(state / "output.jsonl")
    outside = [r for r in rows if not 1 <= orjson.loads(r["text"])["score"] <= 5]
    inside = [r for r in rows if r not in outside]
    assert outside and inside
    for r in outside:
        assert ("miss", "VERDICT_UNPARSED", None) == (r["status"], r["error"]["class"], r["verdict"])
        assert "greater than the maximum of 5" in r["error"]["message"]
    assert all("succeeded" == r["status"] and 1 <= r["verdict"]["score"] <= 5 for r in inside)


def test_the_dry_run_shows_the_schema_as_sent(served, tmp_path):
    srv = served(Scenario())
    items, rubric, verdict = _job(tmp_path, 5)
    res = srv.cli(
        ["run", str(items), "--rubric", str(rubric), "--verdict", str(verdict), "--dry-run", "--json"]
    )
    assert 0 == res.returncode, res.stderr
    plan = orjson.loads(res.stdout)
    assert as_sent(docs_schema_spec()["schema"]) == plan["output_schema"]
    text = srv.cli(["run", str(items), "--rubric", str(rubric), "--verdict", str(verdict), "--dry-run"])
    assert "schema sent in the API's subset" in text.stdout
    assert () == srv.sim.log


def test_a_schema_no_request_can_carry_is_exit_2_naming_the_verdict_file_before_anything_is_sent(
    served, tmp_path
):
    """A recursive schema passes the SDK's transform, but the API refuses it on every request."""
    srv = served(Scenario())
    items, rubric, _ = _job(tmp_path, 5)
    verdict = tmp_path / "tree.json"
    node = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}
    schema = {
        "type": "object",
        "properties": {"score": {"type": "integer"}, "tree": {"$ref": "#/$defs/node"}},
        "$defs": {"node": node},
    }
    verdict.write_bytes(orjson.dumps({"schema": schema}))
    state = tmp_path / "s"
    res = srv.cli(
        ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--verdict", str(verdict)]
    )
    assert 2 == res.returncode
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"error: {verdict}: bad verdict spec") and "recursive schema" in line
    assert () == srv.sim.log
