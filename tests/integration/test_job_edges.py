"""A job's edges at the command line, through the real SDK against the simulator: a model id judgecore's
table does not know costs no request; a job that never received an answer may be started again with
another model on the same state dir; a verdict spec that reads nothing does not replace the job's."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from adapters.checkpoint.store import Store
from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

RUBRIC = "Grade the answer on a 1-10 scale; end with one line 'Score: N'.\n"


def _job(tmp_path: Path, n: int = 6) -> tuple[Path, Path]:
    rows = [{"id": f"i{k}", "prompt": f"answer #{k}"} for k in range(n)]
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC)
    return write_items(tmp_path / "items.jsonl", rows), rubric


def test_a_model_typo_is_exit_2_with_the_nearest_id_and_nothing_sent(served, tmp_path):
    srv = served(Scenario())
    items, rubric = _job(tmp_path)
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--rubric", str(rubric)]
    typo = srv.cli([*args, "--model", "claude-sonet-4-6"])
    assert 2 == typo.returncode
    assert (
        "error: --model: unknown model 'claude-sonet-4-6'; did you mean claude-sonnet-4-6? (nothing was "
        "sent; for a model newer than judgecore's table, add --allow-unknown-model)\n" == typo.stderr
    )
    other = srv.cli([*args, "--model", "gpt-4o"])
    assert 2 == other.returncode
    assert "judgecore judges with Anthropic's models" in other.stderr and 1 == len(other.stderr.splitlines())
    assert [] == list(srv.sim.requests())
    assert not (tmp_path / "s").exists()


def test_a_job_that_never_received_an_answer_may_change_its_model(served, tmp_path):
    """A model the API does not serve (let through by --allow-unknown-model) stops the run at its probe,
    exit 4, nothing answered; the corrected command on the same --state runs the job (it was refused
    as "another job")."""
    srv = served(Scenario(seed=3))
    items, rubric = _job(tmp_path)
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--rubric", str(rubric)]
    first = srv.cli([*args, "--model", "claude-sonnet-4-9", "--allow-unknown-model"])
    assert 4 == first.returncode, first.stderr
    assert 1 == len(srv.sim.message_requests())  # the probe, refused
    fixed = srv.cli([*args, "--model", "claude-sonnet-4-6"])
    assert 0 == fixed.returncode, fixed.stderr
    assert "never received an answer" in fixed.stderr
    assert {"succeeded"} == {r["status"] for r in read_output(state / "output.jsonl")}
    store = Store.open_readonly(state)
    try:
        assert "claude-sonnet-4-6" == store.get_meta("manifest")["model"]
    finally:
        store.close()
    # once answered, the job is the state dir's: another model is another job again
    again = srv.cli([*args, "--model", "claude-haiku-4-5"])
    assert 2 == again.returncode and "another job" in again.stderr


def _spec(tmp_path: Path, name: str, spec: dict) -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(spec))
    return path


def test_a_verdict_spec_that_reads_nothing_keeps_the_jobs_spec_unless_asked(served, tmp_path):
    srv = served(Scenario(seed=7))
    items, rubric = _job(tmp_path)
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--force-sync"]
    good = _spec(tmp_path, "good.json", {"pattern": r"Score: (?P<score>\d+)"})
    assert 0 == srv.cli([*args, "--verdict", str(good)]).returncode
    scored = {r["id"]: r["verdict"] for r in read_output(state / "output.jsonl")}
    assert all(v is not None for v in scored.values())

    wrong = _spec(tmp_path, "wrong.json", {"pattern": r"^Grade: (?P<score>\d+)"})
    kept = srv.cli([*args, "--verdict", str(wrong)])
    assert 0 == kept.returncode, kept.stderr
    assert (
        f"warning: --verdict {wrong} reads no verdict from any of the job's 6 answers: the job keeps the "
        f"verdict spec it had ({good.resolve()})" in kept.stderr
    )
    assert scored == {r["id"]: r["verdict"] for r in read_output(state / "output.jsonl")}
    store = Store.open_readonly(state)
    try:  # the job remembers the spec it keeps, for `run --state DIR` alone and `summary`
        assert str(good.resolve()) == store.get_meta("invocation")["flags"]["verdict"]
        assert r"Score: (?P<score>\d+)" == store.get_meta("verdict")["pattern"]
    finally:
        store.close()

    replaced = srv.cli([*args, "--verdict", str(wrong), "--replace-verdict"])
    assert 0 == replaced.returncode, replaced.stderr
    assert {"VERDICT_UNPARSED"} == {r["error"]["class"] for r in read_output(state / "output.jsonl")}


def test_model_with_a_panel_of_other_judges_is_exit_2_and_the_same_model_is_not(served, tmp_path):
    srv = served(Scenario())
    items, _ = _job(tmp_path)
    template = tmp_path / "t.txt"
    template.write_text("Grade: {prompt}")
    args = ["run", str(items), "--state", str(tmp_path / "s"), "--template", str(template), "--dry-run"]
    both = srv.cli([*args, "--judge", "claude-haiku-4-5", "--model", "claude-opus-4-6"])
    assert 2 == both.returncode
    assert "--model claude-opus-4-6 with --judge: a panel's models are its --judge flags" in both.stderr
    same = srv.cli([*args, "--judge", "claude-haiku-4-5", "--model", "claude-haiku-4-5"])
    assert 0 == same.returncode, same.stderr
    assert [] == list(srv.sim.requests())
