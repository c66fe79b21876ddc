"""JobSettings and the CLI on today's models: thinking in the manifest only when set, a deprecated id a
warning on stderr naming its date, a retired id exit 2 naming its replacement, nothing sent."""

from __future__ import annotations

import datetime

import pytest

from adapters.cli import main
from adapters.run.dryrun import judge_dry_run
from adapters.run.settings import JobSettings
from adapters.usage import UsageError
from judgecore.wire.models import Thinking

ITEMS = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y"}]


def test_the_manifest_has_thinking_only_when_it_is_set():
    plain = JobSettings(model="claude-sonnet-4-6").manifest(None)
    assert {"model", "max_tokens", "rubric_sha256"} == set(plain)  # as checkpoints made before it
    asked = JobSettings(model="claude-sonnet-4-6", thinking="2048").manifest(None)
    assert {"type": "enabled", "budget_tokens": 2048} == asked["thinking"]
    assert asked != JobSettings(model="claude-sonnet-4-6", thinking="adaptive").manifest(None)


def test_thinking_is_taken_as_the_flag_text_an_int_or_a_value():
    expected = Thinking("enabled", 3000)
    assert expected == JobSettings(thinking="3000").thinking
    assert expected == JobSettings(thinking=3000).thinking
    assert expected == JobSettings(thinking=expected).thinking


def test_the_default_max_tokens_is_raised_for_a_thinking_model_and_an_explicit_one_kept():
    assert 1024 == JobSettings(model="claude-sonnet-4-6").max_tokens
    assert 16_000 == JobSettings(model="claude-opus-5-5").max_tokens
    assert 2000 == JobSettings(model="claude-opus-5-5", max_tokens=2000).max_tokens


def test_a_budget_not_below_max_tokens_is_a_usage_error():
    with pytest.raises(
        ValueError, match=r"--thinking: --thinking budget 4,000 must be below max_tokens \(4,000\)"
    ):
        JobSettings(model="claude-sonnet-4-6", thinking="4000", max_tokens=4000)


def test_an_items_max_tokens_below_the_budget_names_its_line(tmp_path):
    items = [{"id": "a", "prompt": "x"}, {"id": "b", "prompt": "y", "max_tokens": 1500}]
    settings = JobSettings(model="claude-sonnet-4-6", thinking="2048")
    with pytest.raises(
        UsageError, match="line 2: item 'b': --thinking budget 2,048 must be below max_tokens"
    ):
        judge_dry_run(items, rubric=None, state_dir=tmp_path / "s", settings=settings)


def test_a_budget_is_kept_for_a_current_model_and_a_snapshot_id():
    assert 5.0 == JobSettings(model="claude-fable-5-1", budget=5.0).budget
    assert 5.0 == JobSettings(model="claude-haiku-4-5-20251001", budget=5.0).budget


def test_a_deprecated_model_is_a_warning_on_stderr_naming_its_retirement_date(tmp_path, capsys):
    settings = JobSettings(model="claude-opus-4-5", today=datetime.date(2026, 12, 1))
    result = judge_dry_run(ITEMS, rubric=None, state_dir=tmp_path / "s", settings=settings)
    err = capsys.readouterr().err
    assert (
        "warning: claude-opus-4-5 is deprecated and retires on 2027-01-22; move to claude-opus-5-5\n" == err
    )
    assert result.plan is not None and result.plan.warnings == (err.removeprefix("warning: ").strip(),)


def test_the_same_model_after_its_date_is_refused_naming_the_replacement(tmp_path):
    settings = JobSettings(model="claude-opus-4-5", today=datetime.date(2027, 1, 22))
    with pytest.raises(
        UsageError, match=r"claude-opus-4-5 was retired on 2027-01-22.*use claude-opus-5-5 instead"
    ):
        judge_dry_run(ITEMS, rubric=None, state_dir=tmp_path / "s", settings=settings)


def test_the_cli_refuses_a_retired_model_with_exit_2_and_one_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nothing listens: nothing may be sent
    items = tmp_path / "in.jsonl"
    items.write_text('{"id": "a", "prompt": "x"}\n')
    code = main(["run", str(items), "--state", str(tmp_path / "s"), "--model", "claude-sonnet-4-0"])
    err = capsys.readouterr().err
    assert 2 == code
    assert (
        "error: --model: claude-sonnet-4-0 was retired on 2026-06-15 and is no longer served; use claude-sonnet-4-6 instead"
        in err
    )
    assert 1 == len(err.strip().splitlines())


def test_the_cli_takes_thinking_and_the_plan_shows_it(tmp_path, capsys):
    items = tmp_path / "in.jsonl"
    items.write_text('{"id": "a", "prompt": "x"}\n')
    assert 0 == main(["run", str(items), "--dry-run", "--model", "claude-opus-4-8", "--thinking", "adaptive"])
    out = capsys.readouterr().out
    assert "max_tokens 16,000" in out
    assert "thinking     on (--thinking adaptive)" in out


def test_the_cli_refuses_a_thinking_type_the_model_does_not_take(tmp_path, capsys):
    items = tmp_path / "in.jsonl"
    items.write_text('{"id": "a", "prompt": "x"}\n')
    assert 2 == main(["run", str(items), "--dry-run", "--model", "claude-fable-5", "--thinking", "off"])
    assert "claude-fable-5 does not take --thinking off" in capsys.readouterr().err


def test_the_help_default_for_thinking_models_is_the_cores():
    from adapters.usage import THINKING_MAX_TOKENS
    from judgecore.wire.models import THINKING_MAX_TOKENS as CORE

    assert CORE == THINKING_MAX_TOKENS


@pytest.mark.parametrize(
    "knobs", [{"model": "claude-mythos-preview"}, {"judges": ("claude-haiku-4-5", "claude-mythos-preview")}]
)
def test_a_retired_model_with_a_budget_is_refused_as_retired_not_as_unpriced(knobs):
    """Mythos Preview has no price in the table and is retired: with --budget it was refused for the
    price ("--budget needs the model's prices"), as if dropping --budget would let it run."""
    flag = "--judge" if "judges" in knobs else "--model"
    with pytest.raises(
        ValueError, match=rf"^{flag}: claude-mythos-preview was retired on 2026-06-30.*claude-mythos-5"
    ):
        JobSettings(**knobs, budget=1.0, today=datetime.date(2026, 12, 1))
    with pytest.raises(ValueError, match="judgecore has none for 'my-fine-tune'"):
        JobSettings(judges=("claude-haiku-4-5", "my-fine-tune"), budget=1.0, allow_unknown_model=True)
