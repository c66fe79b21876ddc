"""What `--model` / `--judge` names an OpenAI judge by, checked before anything is sent."""

from __future__ import annotations

import datetime

import pytest

from adapters.providers.openai import INSTALL_HINT
from adapters.run import settings as settings_module
from adapters.run.settings import JobSettings, judge_problem

TODAY = datetime.date(2026, 12, 3)


def test_a_bare_name_stays_anthropics_and_an_openai_name_is_accepted() -> None:
    assert judge_problem("claude-sonnet-4-6", TODAY) is None
    assert judge_problem("openai:gpt-5-mini", TODAY) is None


def test_an_unknown_provider_names_the_providers() -> None:
    assert "the providers are anthropic:, openai:" in (judge_problem("gemini:pro", TODAY) or "")


def test_a_shut_down_openai_model_is_refused_on_its_date() -> None:
    assert "shut down on 2026-12-11" in (
        judge_problem("openai:gpt-5-mini", datetime.date(2026, 12, 11)) or ""
    )


def test_a_plain_install_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(settings_module, "missing_extra", lambda: INSTALL_HINT)
    with pytest.raises(ValueError, match=r"judgecore\[openai\]"):
        JobSettings(model="openai:gpt-5-mini", today=TODAY)


def test_a_panel_across_providers_is_taken_and_routed_by_size() -> None:
    """Anthropic's judge has a batch route, so the panel routes by size (its other judges go sync,
    `adapters.run.panels`); a panel of OpenAI's judges alone stays sync only."""
    mixed = JobSettings(judges=("claude-haiku-4-5", "openai:gpt-5-mini"), today=TODAY)
    assert mixed.route_policy.sync_only is None
    alone = JobSettings(judges=("openai:gpt-5-mini", "openai:gpt-5-nano"), today=TODAY)
    assert alone.route_policy.sync_only == "openai"


def test_the_manifest_keeps_the_name_as_given() -> None:
    assert JobSettings(model="openai:gpt-5-mini", today=TODAY).manifest(None)["model"] == "openai:gpt-5-mini"
