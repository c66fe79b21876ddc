"""`judgecore run --state DIR` alone resumes the job exactly as it was started; a flag that would make
it another job is refused naming the flag, and a flag left out never means its default."""

from __future__ import annotations

import signal
from pathlib import Path

import attrs
import pytest

from adapters.simulator.scenario import Scenario
from tests.integration.conftest import read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]


@pytest.fixture
def job(tmp_path: Path):
    items = write_items(tmp_path / "in.jsonl", [{"id": f"r{i}", "prompt": f"grade {i}"} for i in range(12)])
    rubric = tmp_path / "rubric.txt"
    rubric.write_text("Grade the answer. End with 'Score: N', N from 1 to 5.\n")
    verdict = tmp_path / "verdict.json"
    verdict.write_text('{"pattern": "Score: (?P<score>\\\\d+)"}')
    state = tmp_path / "s"
    args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--verdict", str(verdict)]
    return state, [*args, "--max-tokens", "512", "--force-batch", *FAST_POLL]


def _billed(srv) -> int:
    return len(srv.sim.billed)


@pytest.mark.parametrize("ending", [0, 3, 4, 130])
def test_run_with_the_state_dir_alone_resumes_after_each_way_a_run_ends(served, job, ending):
    """After exit 0, 3 (a retry budget spent), 4 (an account on hold) or 130 (Ctrl-C), `run --state
    DIR` with nothing else finishes the job with the input, rubric, verdict, max_tokens and route it
    was started with, and pays for no item twice."""
    state, args = job
    scenario = {
        0: Scenario(seed=51, batch_seconds=0.1),
        3: Scenario(seed=51, batch_seconds=0.1, batch_failures=1),
        4: Scenario(seed=51, account_state="organization_on_hold"),
        130: Scenario(seed=51, never_end=True),
    }[ending]
    srv = served(scenario)
    if ending == 130:
        proc = srv.spawn(args)
        srv.wait_for(lambda: srv.polls() >= 1)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert 130 == proc.returncode, err
    else:
        first = srv.cli([*args, "--max-attempts", "1"] if ending == 3 else args)
        assert ending == first.returncode, first.stderr
    srv.sim.scenario = attrs.evolve(scenario, never_end=False, account_state=None, batch_failures=0)
    billed = _billed(srv)
    again = srv.cli(["run", "--state", str(state)])
    assert 0 == again.returncode, again.stderr
    out = read_output(state / "output.jsonl")
    assert 12 == len(out)
    assert {"batch"} == {r["route"] for r in out}  # the remembered --force-batch
    assert all(r["verdict"] is not None for r in out)  # the remembered --verdict, not "no verdict"
    sent = [p for b in srv.sim.batches for p in b.params]
    assert {512} == {p["max_tokens"] for p in sent}
    assert all("Score: N" in "".join(blk["text"] for blk in p["system"]) for p in sent)
    if ending == 0:
        assert billed == _billed(srv)  # nothing sent: everything was final
    assert 12 == len({cid for b in srv.sim.batches for cid in b.custom_ids})


DIFFERENT = {
    "--model": lambda tmp: "claude-opus-4-8",
    "--max-tokens": lambda tmp: "999",
    "--rubric": lambda tmp: _write(tmp / "other-rubric.txt", "Another rubric entirely.\n"),
    "--verdict": lambda tmp: _write(
        tmp / "schema.json",
        '{"schema": {"type": "object", "properties": {"score": {"type": "integer"}}, "required": ["score"]}}',
    ),
    "--samples": lambda tmp: "3",
    "--judge": lambda tmp: "claude-haiku-4-5",
    "--thinking": lambda tmp: "off",
}


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("flag", sorted(DIFFERENT))
def test_a_flag_that_makes_another_job_is_refused_naming_the_old_and_new_value(served, job, tmp_path, flag):
    state, args = job
    srv = served(Scenario(seed=52, batch_seconds=0.1))
    assert 0 == srv.cli(args).returncode
    log = len(srv.sim.log)
    value = DIFFERENT[flag](tmp_path)
    res = srv.cli(["run", "--state", str(state), flag, value])
    assert 2 == res.returncode, res.stderr
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith(f"error: {flag}: the job in {state} was started with ")
    assert value in line and f"Leave {flag} out to resume" in line and "new directory" in line
    # each value as the flag writes it, never Python's repr of a manifest field ("None", "['m']")
    assert "None" not in line and "[" not in line and "{" not in line, line
    assert log == len(srv.sim.log)  # nothing sent, not even a probe


def test_a_pattern_given_anew_rereads_the_answers_and_is_remembered(served, job, tmp_path):
    """A pattern verdict is not part of the job: given anew it re-reads every answer, sends nothing,
    and a later `run --state DIR` keeps the new one."""
    state, args = job
    srv = served(Scenario(seed=53, batch_seconds=0.1))
    assert 0 == srv.cli(args).returncode
    billed = _billed(srv)
    pattern = tmp_path / "words.json"
    pattern.write_text('{"pattern": "(?P<word>Score)", "score": "word"}')
    res = srv.cli(["run", "--state", str(state), "--verdict", str(pattern)])
    assert 0 == res.returncode, res.stderr
    assert {"Score"} == {r["verdict"]["word"] for r in read_output(state / "output.jsonl")}
    assert 0 == srv.cli(["run", "--state", str(state)]).returncode
    assert {"Score"} == {r["verdict"]["word"] for r in read_output(state / "output.jsonl")}
    assert billed == _billed(srv)


def test_status_prints_the_command_that_resumes(served, job):
    state, args = job
    srv = served(Scenario(seed=54, batch_seconds=0.1, batch_failures=1))
    assert 3 == srv.cli([*args, "--max-attempts", "1"]).returncode
    status = srv.cli(["status", "--state", str(state)])
    assert 3 == status.returncode
    assert "resume with: " in status.stdout and f"run --state {state}" in status.stdout


def test_without_a_remembered_job_input_is_required(served, tmp_path):
    srv = served(Scenario(seed=55))
    res = srv.cli(["run", "--state", str(tmp_path / "new")])
    assert 2 == res.returncode
    assert "INPUT is required" in res.stderr
