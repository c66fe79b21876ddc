"""Today's models, through the real SDK over real HTTP against the simulator: thinking models finish
without truncation at the default max_tokens, `--thinking` reaches the wire as the SDK's parameter,
`--budget` and the plan's cost work for current models, retired ids are refused, and `text` never
holds thinking."""

from __future__ import annotations

import datetime
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import anthropic
import pytest

from adapters.cli import main
from adapters.run.dryrun import judge_dry_run
from adapters.run.job import judge
from adapters.run.settings import JobSettings
from adapters.simulator.scenario import DEFAULT_MODELS, Scenario
from adapters.usage import UsageError
from judgecore.wire.models import MODELS, Retired, standing
from tests.integration.conftest import Served, read_output, write_items

pytestmark = pytest.mark.integration

TODAY = datetime.date(2026, 12, 1)
THOUGHT = "Weighing the answer"  # the simulator's thinking block starts so
RUBRIC = "Grade the answer on a 1-10 scale. Reply with 'Score: N' on the first line."


def _items(n: int) -> list[dict]:
    return [{"id": f"q{i}", "prompt": f"Question {i}: is {i} prime? Answer: maybe."} for i in range(n)]


def _client(served: Served) -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(base_url=served.base_url, api_key="sk-test", max_retries=0)


def _sdk_models() -> list[str]:
    (literal, _str) = get_args(anthropic.types.Model)
    return list(get_args(literal))


def test_a_model_that_thinks_by_default_finishes_untruncated_at_the_default_max_tokens(
    served: Callable[[Scenario], Served], tmp_path: Path
):
    """Opus 5.5 thinks on every request; the default max_tokens leaves room, so no answer is cut."""
    api = served(Scenario(seed=3))
    settings = JobSettings(model="claude-opus-5-5", force="sync", today=TODAY)
    result = judge(
        _items(20), rubric=RUBRIC, state_dir=tmp_path / "s", settings=settings, client=_client(api)
    )
    assert 0 == result.exit_code
    assert 20 == result.counts["succeeded"]
    for record in result.records.values():
        assert record["text"].startswith("Score: "), record
        assert THOUGHT not in record["text"]
        assert record["usage"]["output_tokens"] > 600  # thinking tokens are output tokens


def test_the_old_default_max_tokens_truncates_a_thinking_model(
    served: Callable[[Scenario], Served], tmp_path: Path
):
    """The same job at max_tokens 1,024 (what judgecore sent before) ends answers as truncations."""
    api = served(Scenario(seed=3))
    settings = JobSettings(model="claude-opus-5-5", max_tokens=1024, force="sync", today=TODAY)
    result = judge(
        _items(20), rubric=RUBRIC, state_dir=tmp_path / "s", settings=settings, client=_client(api)
    )
    truncated = [r for r in result.records.values() if r["error"] and r["error"]["type"] == "max_tokens"]
    assert truncated, result.counts
    assert all(THOUGHT not in (r["text"] or "") for r in result.records.values())


def test_thinking_budget_reaches_the_batch_create_as_the_sdk_parameter(
    served: Callable[[Scenario], Served], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    api = served(Scenario(seed=4, batch_seconds=0.1))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    items = write_items(tmp_path / "in.jsonl", _items(5))
    code = main(
        ["run", str(items), "--state", str(tmp_path / "s"), "--model", "claude-sonnet-4-6", "--thinking", "2048",
         "--force-batch", "--poll-interval", "0.05"]
    )  # fmt: skip
    assert 0 == code
    sent = [p for b in api.sim.batches for p in b.params]
    assert 5 == len(sent)
    assert all({"type": "enabled", "budget_tokens": 2048} == p["thinking"] for p in sent)
    assert all(p["max_tokens"] > 2048 for p in sent)  # the default leaves room above the budget
    out = read_output(tmp_path / "s" / "output.jsonl")
    assert all(r["status"] == "succeeded" and THOUGHT not in r["text"] for r in out)


def test_thinking_on_the_sync_route_is_sent_and_answered_with_a_thinking_block_kept_out_of_text(
    served: Callable[[Scenario], Served], tmp_path: Path
):
    """A model the table does not know (served by this scenario) thinks only when asked: it answers
    with a thinking block exactly when `--thinking` is given, so the parameter reached the wire."""
    api = served(Scenario(seed=5, models=DEFAULT_MODELS | {"claude-new-9"}))

    def run(thinking: str | None, where: str) -> dict:
        settings = JobSettings(
            model="claude-new-9", thinking=thinking, max_tokens=8000, force="sync", allow_unknown_model=True
        )
        return judge(
            _items(3), rubric=RUBRIC, state_dir=tmp_path / where, settings=settings, client=_client(api)
        )

    asked, plain = run("2048", "a"), run(None, "b")
    asked_out = [r["usage"]["output_tokens"] for r in asked.records.values()]
    plain_out = [r["usage"]["output_tokens"] for r in plain.records.values()]
    assert all(a > p + 500 for a, p in zip(asked_out, plain_out, strict=True)), (asked_out, plain_out)
    assert [r["text"] for r in asked.records.values()] == [r["text"] for r in plain.records.values()]


def test_a_thinking_type_the_model_does_not_take_is_refused_before_anything_is_sent(
    served: Callable[[Scenario], Served], tmp_path: Path
):
    api = served(Scenario(seed=6))
    for model, thinking in [
        ("claude-opus-5-5", "off"),
        ("claude-opus-4-8", "2048"),
        ("claude-haiku-4-5", "adaptive"),
    ]:
        settings_error = None
        try:
            JobSettings(model=model, thinking=thinking)
        except ValueError as exc:
            settings_error = str(exc)
        assert settings_error is not None and model in settings_error, (model, thinking)
    assert 0 == len(api.sim.log)


def test_the_simulator_refuses_what_the_api_refuses_about_thinking_and_models(
    served: Callable[[Scenario], Served],
):
    """Through the real SDK: a type the model does not take and a budget under 1,024 are 400s; a
    retired id is a 404 not_found_error."""
    api = served(Scenario(seed=7))
    client = anthropic.Anthropic(base_url=api.base_url, api_key="sk-test", max_retries=0)
    msgs = [{"role": "user", "content": "hi"}]
    with pytest.raises(anthropic.BadRequestError, match=r"thinking\.type\.disabled"):
        client.messages.create(
            model="claude-opus-5-5", max_tokens=4000, messages=msgs, thinking={"type": "disabled"}
        )
    with pytest.raises(anthropic.BadRequestError, match="greater than or equal to 1024"):
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=4000,
            messages=msgs,
            thinking={"type": "enabled", "budget_tokens": 512},
        )
    with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
        client.messages.create(
            model="claude-sonnet-4-6",
            max_tokens=2000,
            messages=msgs,
            thinking={"type": "enabled", "budget_tokens": 2000},
        )
    for retired in ("claude-sonnet-4-5", "claude-opus-4-1", "claude-mythos-preview"):
        with pytest.raises(anthropic.NotFoundError):
            client.messages.create(model=retired, max_tokens=100, messages=msgs)
    message = client.messages.create(model="claude-fable-5-1", max_tokens=8000, messages=msgs)
    assert ["thinking", "text"] == [b.type for b in message.content]


def test_budget_works_with_a_current_model(
    served: Callable[[Scenario], Served], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
):
    api = served(Scenario(seed=8))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    items = write_items(tmp_path / "in.jsonl", _items(4))
    code = main(
        ["run", str(items), "--state", str(tmp_path / "s"), "--model", "claude-sonnet-5-5", "--budget", "5"]
    )
    assert 0 == code, capsys.readouterr().err
    assert 4 == sum(r["status"] == "succeeded" for r in read_output(tmp_path / "s" / "output.jsonl"))


def test_the_plan_shows_a_cost_for_every_current_model_and_refuses_every_retired_one(tmp_path: Path):
    """Every id the installed SDK lists, and every id judgecore's table knows: a current one is
    planned with a cost; a retired one (on 2026-12-01) is exit 2 naming its replacement. (A newer SDK
    drops the ids it no longer serves from its list, anthropic 2.16 Sonnet 4.5's: the table keeps them
    as retired, so a state dir or a script that names one is still told what to move to.)"""
    current = retired = 0
    for model in dict.fromkeys([*_sdk_models(), *MODELS]):
        settings = JobSettings(model=model, today=TODAY)
        if isinstance(standing(model, TODAY), Retired):
            with pytest.raises(UsageError, match="use claude-"):
                judge_dry_run(_items(3), rubric=RUBRIC, state_dir=tmp_path / model, settings=settings)
            retired += 1
            continue
        plan = judge_dry_run(_items(3), rubric=RUBRIC, state_dir=tmp_path / model, settings=settings).plan
        assert plan is not None and plan.estimated_cost_usd is not None and plan.estimated_cost_usd > 0, model
        current += 1
    assert current >= 15 and retired >= 3
