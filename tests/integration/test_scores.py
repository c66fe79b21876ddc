"""Verdicts, spend and the summary, end to end: the CLI and the real SDK over HTTP to the simulator."""

from __future__ import annotations

import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from adapters.simulator.answers import NO_VERDICT
from adapters.simulator.scenario import Scenario
from tests.integration.conftest import ROOT, read_output, write_items

pytestmark = pytest.mark.integration

FAST_POLL = ["--poll-interval", "0.1"]
SCHEMA = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 1, "maximum": 5},
        "rationale": {"type": "string"},
    },
    "required": ["score", "rationale"],
    "additionalProperties": False,
}
RUBRIC = "Grade the candidate on a 1-5 scale. Reason first; end with one line 'Score: N'.\n" * 40
ROUTES = [pytest.param("--force-sync", id="sync"), pytest.param("--force-batch", id="batch")]


def _job(tmp_path: Path, n: int = 40) -> tuple[Path, Path]:
    models = ["alpha", "beta"]
    rows = [
        {"id": f"i{k}", "prompt": f"answer #{k}", "metadata": {"model": models[k % 2], "gold": 1 + k % 5}}
        for k in range(n)
    ]
    rubric = tmp_path / "rubric.txt"
    rubric.write_text(RUBRIC)
    return write_items(tmp_path / "items.jsonl", rows), rubric


def _spec(tmp_path: Path, name: str, spec: dict) -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(spec))
    return path


def _summary(srv, state: Path, *extra: str) -> dict:
    res = srv.cli(["summary", "--state", str(state), "--json", *extra])
    assert 0 == res.returncode, res.stderr
    return orjson.loads(res.stdout)


@pytest.mark.parametrize("force", ROUTES)
def test_a_schema_job_has_a_verdict_on_every_succeeded_line(served, tmp_path, force):
    """Every request carries output_config (the simulator answers JSON only then); every line is read."""
    srv = served(Scenario(seed=5, batch_seconds=0.2))
    items, rubric = _job(tmp_path)
    verdict = _spec(tmp_path, "verdict.json", {"schema": SCHEMA})
    state = tmp_path / "s"
    res = srv.cli(
        [
            "run",
            str(items),
            "--state",
            str(state),
            "--rubric",
            str(rubric),
            "--verdict",
            str(verdict),
            force,
            *FAST_POLL,
        ]
    )
    assert 0 == res.returncode, res.stderr
    rows = read_output(state / "output.jsonl")
    assert {"succeeded"} == {r["status"] for r in rows}
    assert all(set(r["verdict"]) == {"score", "rationale"} and 1 <= r["verdict"]["score"] <= 5 for r in rows)
    assert "spend so far $" in res.stderr and "estimated $" in res.stderr
    summary = _summary(srv, state)
    assert (40, 40, 0, 0) == (summary["n"], summary["scored"], summary["unscored"], summary["missing"])
    assert statistics.fmean(r["verdict"]["score"] for r in rows) == pytest.approx(summary["score"]["mean"])


@pytest.mark.parametrize("force", ROUTES)
def test_unparseable_answers_become_verdict_misses_counted_apart_from_the_mean(served, tmp_path, force):
    srv = served(Scenario(seed=6, batch_seconds=0.2, unparseable_rate=0.25, score_weights={"5": 1, "2": 1}))
    items, rubric = _job(tmp_path, n=60)
    verdict = _spec(tmp_path, "verdict.json", {"pattern": r"^Score: (?P<score>\d+)"})
    state = tmp_path / "s"
    args = [
        "run",
        str(items),
        "--state",
        str(state),
        "--rubric",
        str(rubric),
        "--verdict",
        str(verdict),
        force,
        *FAST_POLL,
    ]
    res = srv.cli(args)
    assert 0 == res.returncode, res.stderr
    rows = read_output(state / "output.jsonl")
    unread = [r for r in rows if r["text"] == NO_VERDICT]
    assert 0 < len(unread) < len(rows)
    assert all(
        ("miss", "VERDICT_UNPARSED", None) == (r["status"], r["error"]["class"], r["verdict"]) for r in unread
    )
    read = [r for r in rows if r["text"] != NO_VERDICT]
    assert all(r["status"] == "succeeded" and r["verdict"]["score"] in (2, 5) for r in read)
    summary = _summary(srv, state, "--by", "model", "--reference", "gold")
    assert (len(read), len(unread), 0) == (summary["scored"], summary["unscored"], summary["missing"])
    assert {"VERDICT_UNPARSED": len(unread)} == summary["classes"]
    assert statistics.fmean(r["verdict"]["score"] for r in read) == pytest.approx(summary["score"]["mean"])
    assert ["alpha", "beta"] == [g["value"] for g in summary["groups"]]
    status = orjson.loads(srv.cli(["status", "--state", str(state), "--json"]).stdout)
    assert summary["counts"] == status["counts"]  # status reads verdicts the same way
    assert 0 < status["spend_usd"] == pytest.approx(summary["spend_usd"]) and status["estimate_usd"] > 0
    assert (
        len(read) == summary["reference"]["n"] == sum(map(sum, summary["reference"]["confusion"]["matrix"]))
    )
    sends = len(srv.sim.message_requests()) + sum(len(b.custom_ids) for b in srv.sim.batches)
    assert 0 == srv.cli(args).returncode  # a rerun resends nothing: the misses are final
    assert sends == len(srv.sim.message_requests()) + sum(len(b.custom_ids) for b in srv.sim.batches)


def test_a_pattern_changed_after_the_run_rescores_without_sending(served, tmp_path):
    srv = served(Scenario(seed=7))
    items, rubric = _job(tmp_path, n=10)
    state = tmp_path / "s"
    strict = _spec(tmp_path, "strict.json", {"pattern": r"^Grade: (?P<score>\d+)"})
    res = srv.cli(
        [
            "run",
            str(items),
            "--state",
            str(state),
            "--rubric",
            str(rubric),
            "--verdict",
            str(strict),
            "--force-sync",
        ]
    )
    assert 0 == res.returncode, res.stderr
    assert {"miss"} == {r["status"] for r in read_output(state / "output.jsonl")}
    sent = len(srv.sim.message_requests())
    loose = _spec(tmp_path, "loose.json", {"pattern": r"(?P<score>\d+)\s*$"})
    assert 10 == _summary(srv, state, "--verdict", str(loose))["scored"]
    res = srv.cli(
        [
            "run",
            str(items),
            "--state",
            str(state),
            "--rubric",
            str(rubric),
            "--verdict",
            str(loose),
            "--force-sync",
        ]
    )
    assert 0 == res.returncode, res.stderr
    assert {"succeeded"} == {r["status"] for r in read_output(state / "output.jsonl")}
    assert sent == len(srv.sim.message_requests())


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        (b"{nope", "not valid JSON"),
        (b'{"pattern": "(?P<score>\\\\d+"}', "does not compile"),
        (b'{"pattern": "\\\\d+"}', "no named group"),
        (b'{"schema": {"type": "object"}, "pattern": "(?P<score>x)"}', "exactly one"),
        (b'{"schema": {"type": "object", "properties": {"score": {"type": 7}}}}', "not a valid JSON Schema"),
    ],
)
def test_a_bad_verdict_spec_is_exit_2_naming_the_file_and_nothing_is_sent(served, tmp_path, spec, says):
    srv = served(Scenario())
    items, _ = _job(tmp_path, n=3)
    bad = tmp_path / "bad.json"
    bad.write_bytes(spec)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s"), "--verdict", str(bad)])
    assert 2 == res.returncode
    assert str(bad) in res.stderr and says in res.stderr and 1 == len(res.stderr.strip().splitlines())
    assert [] == list(srv.sim.requests())


def test_a_schema_change_is_another_job(served, tmp_path):
    srv = served(Scenario())
    items, _ = _job(tmp_path, n=3)
    state = tmp_path / "s"
    v1 = _spec(tmp_path, "v1.json", {"schema": SCHEMA})
    assert (
        0
        == srv.cli(
            ["run", str(items), "--state", str(state), "--verdict", str(v1), "--force-sync"]
        ).returncode
    )
    other = {**SCHEMA, "properties": {**SCHEMA["properties"], "score": {"type": "integer"}}}
    v2 = _spec(tmp_path, "v2.json", {"schema": other})
    res = srv.cli(["run", str(items), "--state", str(state), "--verdict", str(v2), "--force-sync"])
    assert 2 == res.returncode and "verdict_schema_sha256" in res.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--budget", "0"], "--budget"),
        (["--budget", "nan"], "--budget"),
        (["--budget", "5", "--model", "claude-unknown-9", "--allow-unknown-model"], "prices"),
    ],
)
def test_a_budget_that_cannot_be_kept_is_exit_2(served, tmp_path, args, says):
    srv = served(Scenario())
    items, _ = _job(tmp_path, n=3)
    res = srv.cli(["run", str(items), "--state", str(tmp_path / "s"), *args])
    assert 2 == res.returncode and says in res.stderr
    assert [] == list(srv.sim.requests())


def _billed_usd(sim: Any) -> float:
    """What the simulated API billed, from its own ledger of answers (not judgecore's records)."""
    from judgecore.decide.prices import DEFAULT_PRICES
    from judgecore.decide.spend import spend_of
    from judgecore.results.outcomes import Usage

    usages = [
        (route, Usage(**{k: int(usage.get(k) or 0) for k in Usage.__annotations__}))
        for route, usage in sim.billed
    ]
    return spend_of(usages, DEFAULT_PRICES["claude-sonnet-4-6"]).spent


@pytest.mark.parametrize("force", ROUTES)
def test_the_budget_is_never_exceeded_measured_from_billed_usage(served, tmp_path, force):
    """The spend the simulator billed stays under the cap; the rest stays pending with exit 3 and a
    line saying how much more it needs; a rerun with a larger budget resumes and finishes."""
    srv = served(Scenario(seed=8, batch_seconds=0.2))
    items, rubric = _job(tmp_path, n=60)
    state = tmp_path / "s"
    cap = 0.02  # at --max-tokens 100 a few bounds fit at once; all 60 answers cost $0.18 sync, $0.09 batch
    args = ["run", str(items), "--state", str(state), "--rubric", str(rubric), "--max-tokens", "100", force]
    res = srv.cli([*args, "--budget", str(cap), *FAST_POLL])
    billed = _billed_usd(srv.sim)
    assert 0 < billed <= cap
    assert 3 == res.returncode, res.stderr
    assert any("budget" in line and "$" in line for line in res.stderr.splitlines()), res.stderr
    assert any(r["status"] == "pending" for r in read_output(state / "output.jsonl"))

    bigger = 1.0
    again = srv.cli([*args, "--budget", str(bigger), *FAST_POLL])
    assert 0 == again.returncode, again.stderr
    assert _billed_usd(srv.sim) <= bigger
    assert all(r["status"] != "pending" for r in read_output(state / "output.jsonl"))


def test_summary_reads_the_checkpoint_alone_without_a_key_or_the_sdk(served, tmp_path):
    srv = served(Scenario(seed=9))
    items, rubric = _job(tmp_path, n=8)
    state = tmp_path / "s"
    verdict = _spec(tmp_path, "v.json", {"pattern": r"Score: (?P<score>\d+)"})
    assert (
        0
        == srv.cli(
            [
                "run",
                str(items),
                "--state",
                str(state),
                "--rubric",
                str(rubric),
                "--verdict",
                str(verdict),
                "--force-sync",
            ]
        ).returncode
    )
    before = {p.name: p.stat().st_mtime_ns for p in state.iterdir() if p.name.endswith("sqlite3")}
    code = (
        "import sys; from adapters.cli import main; "
        f"rc = main(['summary', '--state', {str(state)!r}, '--by', 'model']); "
        "assert 'anthropic' not in sys.modules, 'the SDK was imported'; sys.exit(rc)"
    )
    env = {k: v for k, v in srv.env().items() if not k.startswith("ANTHROPIC_")}
    res = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=False
    )
    assert 0 == res.returncode, res.stderr
    assert "scored 8, unscored 0, missing 0" in res.stdout and "by model:" in res.stdout
    assert before == {p.name: p.stat().st_mtime_ns for p in state.iterdir() if p.name.endswith("sqlite3")}
    assert 2 == srv.cli(["summary", "--state", str(tmp_path / "nowhere")]).returncode
    bad = tmp_path / "bad.json"
    bad.write_text('{"pattern": "no groups"}')
    res = srv.cli(["summary", "--state", str(state), "--verdict", str(bad)])
    assert 2 == res.returncode and f"error: {bad}: bad verdict spec" in res.stderr
