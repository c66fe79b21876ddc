"""Judge designs at the command line and in the Python API: bad input is exit 2 naming FILE:LINE
before anything is sent, a rerun with another design is another job, the dry run counts requests,
and `judge()` takes the same designs."""

from __future__ import annotations

import csv
from pathlib import Path

import orjson
import pytest

from adapters.cli import main
from adapters.run.job import judge
from adapters.run.result import JudgeResult
from adapters.run.settings import JobSettings
from adapters.simulator.logic import Simulator
from adapters.simulator.scenario import Scenario
from adapters.simulator.transport import sim_client
from adapters.usage import UsageError
from judgecore.results.verdicts import spec_from_json

DEAD = "http://127.0.0.1:9"  # the discard port: nothing answers there


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", DEAD)


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    got = capsys.readouterr()
    return code, got.out, got.err


ROWS = [
    {"id": "r1", "question": "2+2?", "response": "4", "model": "gpt", "human_score": 5},
    {"id": "r2", "question": "3+3?", "response": "6", "model": "claude", "human_score": 4},
]


@pytest.fixture
def completions(tmp_path: Path) -> Path:
    path = tmp_path / "completions.jsonl"
    path.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in ROWS))
    return path


@pytest.fixture
def template(tmp_path: Path) -> Path:
    path = tmp_path / "grade.txt"
    path.write_text("Question: {question}\nResponse: {response}\nScore it 1-10: 'Score: N'.\n")
    return path


def test_a_row_without_a_templated_field_is_exit_2_naming_the_file_and_line(
    tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.jsonl"
    path.write_bytes(orjson.dumps(ROWS[0]) + b"\n\n" + orjson.dumps({"id": "r2", "question": "?"}) + b"\n")
    code, _out, err = run(
        ["run", str(path), "--state", str(tmp_path / "s"), "--template", str(template)], capsys
    )
    assert 2 == code
    assert f"{path}:3: item 'r2': no field 'response', which the template names" in err
    assert not (tmp_path / "s").exists() or not any((tmp_path / "s").glob("*.db"))


def test_a_csv_completions_file_runs_under_a_template_without_a_prompt_column(
    tmp_path: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "in.csv"
    with path.open("w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(ROWS[0]))
        w.writeheader()
        w.writerows(ROWS)
    args = ["run", str(path), "--template", str(template), "--samples", "3", "--dry-run", "--json"]
    code, out, err = run(args, capsys)
    assert 0 == code, err
    plan = orjson.loads(out)
    assert (6, 2, 3) == (plan["n"], plan["items"], plan["requests_per_item"])


def test_the_dry_run_shows_requests_per_item_and_a_panels_cost_per_judge(
    completions: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = ["--judge", "claude-haiku-4-5", "--judge", "claude-opus-4-6"]
    base = ["run", str(completions), "--template", str(template), "--samples", "2", *judges, "--dry-run"]
    code, out, err = run([*base, "--json"], capsys)
    assert 0 == code, err
    plan = orjson.loads(out)
    assert (8, 2, 4) == (plan["n"], plan["items"], plan["requests_per_item"])
    by_judge = plan["estimated_cost_by_judge_usd"]
    assert by_judge["claude-opus-4-6"] > by_judge["claude-haiku-4-5"] > 0
    assert plan["estimated_cost_usd"] == pytest.approx(sum(by_judge.values()))
    for key in ("estimated_cost_usd", "all_sync_cost_usd"):  # dollars to 4 places, as a plain plan's
        assert round(plan[key], 4) == plan[key] and len(repr(plan[key])) <= 8, plan[key]
    code, out, _err = run(base, capsys)
    assert "items        2, 4 request(s) each: 2 samples x a panel of 2 judges" in out
    assert "requests     8" in out


def test_a_rerun_with_another_design_is_exit_2_naming_the_flag(
    tmp_path: Path, completions: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sim = Simulator(Scenario())
    state = tmp_path / "s"
    settings = JobSettings(template=template.read_text(), samples=2, force="sync")
    judge(ROWS, rubric=None, state_dir=state, settings=settings, client=sim_client(sim, max_retries=0))
    code, _out, err = run(
        ["run", str(completions), "--state", str(state), "--template", str(template), "--samples", "3"],
        capsys,
    )
    assert 2 == code
    assert "--samples" in err and "2" in err and "3" in err and "nothing was sent" in err


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--samples", "0"], "--samples must be a whole number >= 1 and at most 20"),
        (["--samples", "21"], "--samples must be a whole number at most 20"),
        (["--pairwise", "model_a,model_b"], "--pairwise needs --template"),
        (["--pairwise", "a"], "expected two field names"),
        (["--judge", "claude-sonnet-4-5"], "retired"),
        ([], "or give --template FILE to build the prompt from the row's fields"),
    ],
)
def test_a_design_that_cannot_run_is_exit_2_before_anything_is_sent(
    tmp_path: Path, completions: Path, flags: list[str], words: str, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.txt").write_text("{question} {response}")
    template = ["--template", str(tmp_path / "t.txt")] if flags[:1] == ["--judge"] else []
    code, _out, err = run(
        ["run", str(completions), "--state", str(tmp_path / "s"), *template, *flags], capsys
    )
    assert 2 == code
    assert words in err


def _pairwise_job(state: Path, sim: Simulator, n: int) -> JudgeResult:
    """`n` items judged in both orders (answers `x` and `y`, MT-Bench's markers) on the sync route."""
    rows = [{"id": f"p{i}", "q": f"{i}?", "x": f"yes {i}", "y": f"no {i}"} for i in range(n)]
    template = "{q}\n[The Start of Assistant A's Answer]\n{first}\n[The End of Assistant A's Answer]\n"
    template += "[The Start of Assistant B's Answer]\n{second}\n[The End of Assistant B's Answer]\n"
    settings = JobSettings(template=template, pairwise=("x", "y"), force="sync")
    result = judge(rows, rubric=None, state_dir=state, settings=settings, client=sim_client(sim))
    assert 0 == result.exit_code
    return result


def test_judge_takes_a_pairwise_design_and_returns_one_record_per_item(tmp_path: Path) -> None:
    sim = Simulator(Scenario(position_bias=1.0))  # always the first position: never consistent
    result = _pairwise_job(tmp_path / "s", sim, 6)
    assert [f"p{i}" for i in range(6)] == list(result.records)
    for record in result.records.values():
        assert {"winner": "tie", "consistent": False} == {
            k: record["verdict"][k] for k in ("winner", "consistent")
        }
        assert [{"first": "x", "choice": "x"}, {"first": "y", "choice": "y"}] == record["verdict"]["orders"]
    assert 12 == len(sim.billed)


def test_a_pairwise_jobs_report_quotes_the_judge_for_each_winner(tmp_path: Path) -> None:
    """The report's "judge's own words" reads a pairwise item's score as the summary does (its winner,
    a label): each winner the job gave has its quoted answers, the text the checkpoint kept."""
    from adapters.report import sections
    from adapters.report.job_report import job_report

    result = _pairwise_job(tmp_path / "s", Simulator(Scenario(seed=3, position_bias=0.3)), 12)
    winners = {r["verdict"]["winner"] for r in result.records.values()}
    assert len(winners) > 1, winners
    report = job_report(tmp_path / "s")
    assert winners == {g.key for g, _ in report.examples}
    texts = {r["text"] for r in result.records.values()}
    assert all(e.text and e.text in texts for _, shown in report.examples for e in shown)
    page = sections.examples(report)
    assert "No answer to quote yet" not in page
    assert "one of the item's 2 answers" in page  # a pairwise item folds its two orders


def test_a_panels_report_names_every_judge_and_says_a_quote_is_one_answer_of_several(tmp_path: Path) -> None:
    """Each record names the model of one of its requests; the report's "judged by" and provenance
    name the whole panel, and a quoted answer says it is one of the item's answers."""
    from adapters.report import sections
    from adapters.report.job_report import job_report
    from adapters.report.page import render_html

    judges = ("claude-haiku-4-5", "claude-sonnet-4-6", "claude-opus-4-6")
    sim = Simulator(Scenario(seed=4))
    rows = [{"id": f"r{i}", "question": f"{i}?", "response": f"yes {i}"} for i in range(6)]
    settings = JobSettings(
        template="Q: {question}\nA: {response}\nReply 'Score: N', 1-10.",
        judges=judges,
        samples=2,
        force="sync",
    )
    spec = tmp_path / "score.json"
    spec.write_text(orjson.dumps({"pattern": r"Score: (?P<score>\d+)"}).decode())
    result = judge(rows, rubric=None, state_dir=tmp_path / "s", settings=settings, client=sim_client(sim))
    assert 0 == result.exit_code
    assert 1 == len({r["model"] for r in result.records.values()}), "a record names one model"
    report = job_report(tmp_path / "s", verdict_path=spec)
    assert report.provenance is not None and judges == report.provenance.models
    page = render_html(report)
    assert f"judged by {', '.join(judges)}" in page
    assert "one of the item's 6 answers" in sections.examples(report)
    assert 0 == report.retried, "six answers an item, each sent once: no item was retried"


def test_judge_refuses_a_row_missing_a_templated_field_before_sending(tmp_path: Path) -> None:
    sim = Simulator(Scenario())
    settings = JobSettings(template="{question} {response}")
    with pytest.raises(UsageError, match="line 2: item 'b': no field 'response'"):
        judge(
            [{"id": "a", "question": "?", "response": "!"}, {"id": "b", "question": "?"}],
            rubric=None,
            state_dir=tmp_path / "s",
            settings=settings,
            client=sim_client(sim),
        )
    assert 0 == len(sim.billed)


def test_a_panels_budget_is_never_exceeded_at_each_judges_prices(tmp_path: Path) -> None:
    """The cap bounds every request at the dearest judge's rates; the spend is each answer at its own."""
    sim = Simulator(Scenario())
    rows = [{"id": f"r{i}", "question": f"{i}?", "response": "yes " * 200} for i in range(40)]
    settings = JobSettings(
        template="Q: {question}\nA: {response}\nScore: N, 1-10.",
        judges=("claude-haiku-4-5", "claude-opus-4-6"),
        force="sync",
        concurrency=4,
        budget=0.05,
    )
    result = judge(rows, rubric=None, state_dir=tmp_path / "s", settings=settings, client=sim_client(sim))
    assert 3 == result.exit_code  # stopped by the budget, the rest pending
    assert result.spend_usd is not None and 0 < result.spend_usd <= 0.05
    assert result.counts["pending"] > 0
    billed = {m for m, _, _ in sim.billed_by_model}
    assert billed <= {"claude-haiku-4-5", "claude-opus-4-6"}


@pytest.mark.parametrize(
    "knobs",
    [
        {},
        {"samples": 3},
        {"template": "Grade {answer}."},
        {"template": "{first} or {second}?", "pairwise": ("a", "b")},
        {"judges": ("claude-sonnet-4-6", "claude-opus-4-6")},
        {"judges": ("claude-sonnet-4-6",)},
    ],
)
def test_a_plain_job_is_the_design_of_one_request_per_item_its_own(knobs):
    """`JobSettings.plain` (what a dry run asks instead of importing `judgecore.job.designs`) is the
    design's own word: one request per item, with no template; and it changes no manifest."""
    s = JobSettings(**knobs)
    assert s.plain == (s.design.single and s.design.template is None)
    assert s.plain == (set(s.manifest("r")) == {"model", "max_tokens", "rubric_sha256"})


def test_samples_that_are_not_a_whole_number_are_refused_even_when_they_equal_one():
    with pytest.raises(ValueError, match="--samples must be a whole number"):
        JobSettings(samples=True)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="--samples must be a whole number"):
        JobSettings(samples=1.0)  # type: ignore[arg-type]


def test_a_panels_unknown_cost_names_only_the_judges_without_a_price(
    completions: Path, template: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    judges = ["--judge", "claude-haiku-4-5", "--judge", "my-fine-tune", "--allow-unknown-model"]
    code, out, err = run(["run", str(completions), "--template", str(template), *judges, "--dry-run"], capsys)
    assert 0 == code, err
    assert "  cost (est)   unknown: no price for my-fine-tune\n" in out
    assert "claude-haiku-4-5 (est $" in out


def test_a_panel_with_a_judge_that_thinks_by_default_leaves_it_room_to_think(tmp_path: Path) -> None:
    """One max_tokens goes to every judge: without --max-tokens it was the job model's 1,024, and a
    judge that thinks by default (Fable 5) ended most answers as max_tokens truncations, paid for."""
    panel = ("claude-sonnet-4-6", "claude-fable-5")
    assert 16_000 == JobSettings(judges=panel).max_tokens
    assert 1_024 == JobSettings(judges=("claude-sonnet-4-6", "claude-haiku-4-5")).max_tokens
    assert 2_000 == JobSettings(judges=panel, max_tokens=2_000).max_tokens  # as given, for all
    sim = Simulator(Scenario())
    rows = [{"id": f"r{i}", "question": f"{i}+1?", "response": str(i + 1)} for i in range(6)]
    settings = JobSettings(
        template="Q: {question}\nA: {response}\nReply 'Score: N' on a 1-10 scale.",
        judges=panel,
        verdict=spec_from_json({"pattern": r"Score: (?P<score>\d+)"}),
    )
    result = judge(rows, rubric=None, state_dir=tmp_path / "s", settings=settings, client=sim_client(sim))
    assert 0 == result.exit_code
    assert {"succeeded": 6} == {k: v for k, v in result.counts.items() if v}
    for line in result.records.values():  # each judge read: no answer cut at max_tokens
        assert all(v is not None for v in line["judges"].values()), line
    thought = [u["output_tokens"] for m, _, u in sim.billed_by_model if m == "claude-fable-5"]
    assert 6 == len(thought) and max(thought) > 1_024  # it did think past the old default


def test_a_pairwise_field_the_rows_lack_is_named_as_the_flags_not_the_templates(
    completions: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The template names {first} and {second}; the field a row lacks is one `--pairwise` named
    (a typo there said "which the template names", sending the user to a template without it)."""
    (tmp_path / "pair.txt").write_text("Q: {question}\n1: {first}\n2: {second}\n")
    args = ["run", str(completions), "--template", str(tmp_path / "pair.txt"), "--dry-run"]
    code, _out, err = run([*args, "--pairwise", "response,respons"], capsys)
    assert 2 == code
    assert f"{completions}:1: item 'r1': no field 'respons', which --pairwise names" in err


def test_a_panels_budget_bound_of_a_long_prompt_covers_its_dearest_judge() -> None:
    """Haiku 5.5 is dearer above 100,000 prompt tokens; Opus 4.6 costs $5/$25 at any length. The
    panel's bound of a long request took Haiku's long-prompt tier alone ($0.50/$2.50), below what
    Opus charges for it, so a panel over long transcripts could spend past its --budget."""
    from adapters.run.settings import price_of
    from judgecore.decide.spend import price_for, request_bound

    panel = price_of(JobSettings(judges=("claude-haiku-5-5", "claude-opus-4-6"), budget=100.0))
    assert panel is not None
    for size in (4_000, 1_000_000):  # a short prompt and one of some 250,000 tokens
        for judge_ in ("claude-haiku-5-5", "claude-opus-4-6"):
            own = price_for(judge_)
            assert own is not None
            args = {"request_bytes": size, "cached_bytes": 0, "max_tokens": 1024, "route": "sync"}
            assert request_bound(price=panel, **args) >= request_bound(price=own, **args), (size, judge_)


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        ("Winner: B\nRationale: B is the winner because it gives the condition.", "B"),
        ("Winner: A\nThe winner: clearly the first.", "A"),
        ("[[A]] is weaker.\nWinner: [[B]]", "B"),
        ("**Winner:** tie", "tie"),
        ("Winner: A\n...on reflection, Winner: B", "B"),  # the last verdict line counts
        ("Winner: Assistant A", "A"),
        ("Winner: tie\nThe winner: a tie, both are right.", "tie"),  # not "a", which is A
    ],
)
def test_a_pairwise_jobs_default_reading_takes_the_last_winner_line_not_the_word_after_winner(
    text: str, choice: str
) -> None:
    """Without --verdict a pairwise answer is read for its last `Winner: X`; it took the word after
    the last "winner" anywhere, so a rationale saying "B is the winner because" read `because`,
    which no label maps, and the item lost its verdict."""
    from judgecore.results.verdicts import Verdict, parse_verdict

    spec = JobSettings(template="{first} {second}", pairwise=("a", "b")).verdict
    assert spec is not None
    got = parse_verdict(text, spec)
    assert isinstance(got, Verdict) and choice == dict(got.fields)["score"], got


@pytest.mark.parametrize("flag", ["--template", "--rubric"])
def test_a_flag_file_that_is_not_utf8_is_named_with_its_flag(
    completions: Path, tmp_path: Path, flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "latin1.txt"
    bad.write_bytes("Question: {question} \u2014 r\u00e9ponse: {response}\n".encode("cp1252"))
    code, _out, err = run(["run", str(completions), flag, str(bad), "--dry-run"], capsys)
    assert 2 == code
    assert err.startswith(f"error: {bad}: not UTF-8 (") and err.rstrip().endswith(f"({flag})"), err


def test_the_reports_reproduce_command_spells_the_design_flags_as_run_takes_them(tmp_path: Path) -> None:
    """The report's provenance prints the command that starts the job again. It wrote a panel as
    `--judges M --judges N` (the flag's dest, not `--judge`) and a pairwise job as `--pairwise
    answer_a --pairwise answer_b`: `run` refused both commands."""
    import shlex

    from adapters.cli.parser import build_parser
    from adapters.report.gather import _reproduce

    flags = {
        "model": "claude-sonnet-4-6",
        "judges": ["claude-haiku-4-5", "claude-opus-4-6"],
        "pairwise": ["answer_a", "answer_b"],
        "samples": 2,
        "template": str(tmp_path / "pair.txt"),
        "force_batch": True,
        "thinking": None,
    }
    line = _reproduce({"input": str(tmp_path / "in.jsonl"), "flags": flags}, tmp_path / "s")
    assert line is not None
    ns = build_parser().parse_args(shlex.split(line)[1:])
    assert ["claude-haiku-4-5", "claude-opus-4-6"] == ns.judges
    assert ("answer_a", "answer_b") == ns.pairwise
    assert (2, True) == (ns.samples, ns.force_batch)
