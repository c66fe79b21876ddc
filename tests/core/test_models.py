"""The model table: output limits, prices, thinking and lifecycle, checked against the installed SDK."""

from __future__ import annotations

import datetime
import re
from typing import get_args

import anthropic
import pytest
from anthropic._data import DEPRECATED_MODELS
from hypothesis import given
from hypothesis import strategies as st

from judgecore.wire.models import (
    ABSURD_MAX_TOKENS,
    BASE_MAX_TOKENS,
    MIN_THINKING_BUDGET,
    OUTPUT_LIMITS,
    THINKING_MAX_TOKENS,
    Deprecated,
    Retired,
    Status,
    Thinking,
    alias_of,
    default_max_tokens,
    max_tokens_problem,
    model_info,
    output_limit,
    price_for,
    standing,
    thinking_problem,
    thinking_room_problem,
)


def test_a_value_above_a_known_models_limit_names_the_limit():
    expected = "max_tokens 64,001 is above claude-haiku-4-5's output limit of 64,000 tokens"
    assert expected == max_tokens_problem("claude-haiku-4-5", 64_001)


def test_the_limit_itself_is_allowed():
    assert None is max_tokens_problem("claude-opus-4-1", 32_000)


def test_a_dated_snapshot_has_the_limit_of_its_alias():
    assert 64_000 == output_limit("claude-haiku-4-5-20251001")
    assert 32_000 == output_limit("claude-opus-4-1-20250805")


def test_an_unknown_model_passes_through_below_the_absurd_bound():
    assert None is output_limit("claude-fable-9")
    assert None is max_tokens_problem("claude-fable-9", 500_000)


def test_an_absurd_value_is_refused_for_any_model():
    assert "above 1,000,000" in (max_tokens_problem("claude-fable-9", 10_000_000) or "")
    assert "above 1,000,000" in (max_tokens_problem("claude-sonnet-4-6", 2**31) or "")


@given(
    model=st.sampled_from(sorted(OUTPUT_LIMITS)) | st.text(min_size=1, max_size=20),
    max_tokens=st.integers(min_value=-(2**40), max_value=2**40),
)
def test_a_value_is_allowed_exactly_when_within_every_bound(model, max_tokens):
    limit = output_limit(model)
    allowed = 1 <= max_tokens <= ABSURD_MAX_TOKENS and (limit is None or max_tokens <= limit)
    assert allowed == (max_tokens_problem(model, max_tokens) is None)


# -- the table against the installed SDK ----------------------------------------------------------

TODAY = datetime.date(2026, 12, 1)


def _sdk_models() -> tuple[str, ...]:
    literal, _str = get_args(anthropic.types.Model)
    return get_args(literal)


def _sdk_date(text: str) -> datetime.date:
    """`"January 22nd, 2027"` (the SDK's wording) as a date."""
    return datetime.datetime.strptime(re.sub(r"(\d+)(st|nd|rd|th)", r"\1", text), "%B %d, %Y").date()


@pytest.mark.parametrize("model", _sdk_models())
def test_every_model_the_sdk_lists_has_a_row_with_a_limit_and_a_thinking_mode(model):
    info = model_info(model)
    assert info is not None, f"the SDK lists {model} and judgecore.wire.models.MODELS lacks it"
    assert info.output_limit > 0
    assert info.thinking.accepts


@pytest.mark.parametrize("model", [m for m in _sdk_models() if m not in DEPRECATED_MODELS])
def test_every_current_model_the_sdk_lists_has_prices(model):
    price = price_for(model)
    assert price is not None and price.input_per_mtok > 0 and price.output_per_mtok > 0


@pytest.mark.parametrize("model", sorted(DEPRECATED_MODELS))
def test_every_model_the_sdk_deprecates_is_deprecated_or_retired_on_the_sdks_date(model):
    life = model_info(model).lifecycle
    assert life.status in (Status.DEPRECATED, Status.RETIRED)
    assert _sdk_date(DEPRECATED_MODELS[model]) == life.retires


def test_a_dated_snapshot_is_its_alias_and_an_unknown_id_is_itself():
    assert "claude-opus-4-5" == alias_of("claude-opus-4-5-20251101")
    assert "claude-fable-9-20300101" == alias_of("claude-fable-9-20300101")


# -- lifecycle --------------------------------------------------------------------------------------


def test_a_deprecated_model_warns_with_its_date_until_that_date_then_is_retired():
    before = standing("claude-opus-4-5-20251101", datetime.date(2027, 1, 21))
    assert Deprecated("claude-opus-4-5-20251101", datetime.date(2027, 1, 22), "claude-opus-5-5") == before
    assert "retires on 2027-01-22" in str(before)
    on_the_day = standing("claude-opus-4-5", datetime.date(2027, 1, 22))
    assert isinstance(on_the_day, Retired)
    assert "use claude-opus-5-5 instead" in str(on_the_day)


def test_sonnet_4_5_is_retired_today_and_names_its_replacement():
    assert Retired("claude-sonnet-4-5", datetime.date(2026, 11, 30), "claude-sonnet-5-5") == standing(
        "claude-sonnet-4-5", TODAY
    )
    assert isinstance(standing("claude-sonnet-4-5", datetime.date(2026, 11, 29)), Deprecated)


@pytest.mark.parametrize(
    ("model", "replacement"),
    [
        ("claude-opus-4-0", "claude-opus-4-8"),
        ("claude-sonnet-4", "claude-sonnet-4-6"),
        ("claude-3-5-haiku", "claude-haiku-5-5"),
    ],
)
def test_an_old_id_is_retired_whatever_the_date_and_names_a_replacement(model, replacement):
    got = standing(model, datetime.date(2000, 1, 1))
    assert isinstance(got, Retired) and replacement == got.replacement


def test_current_and_unknown_models_have_no_standing():
    assert None is standing("claude-opus-5-5", TODAY)
    assert None is standing("claude-fable-9", TODAY)


# -- thinking ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [("adaptive", Thinking("adaptive")), ("off", Thinking("disabled")), ("2048", Thinking("enabled", 2048)),
     (4096, Thinking("enabled", 4096))],
)  # fmt: skip
def test_thinking_flag_values_parse(text, expected):
    assert expected == Thinking.parse(text)


@pytest.mark.parametrize("bad", ["lots", "", "-5", "1.5", True])
def test_a_thinking_value_of_another_form_is_refused(bad):
    with pytest.raises(ValueError, match="adaptive, off or a token budget"):
        Thinking.parse(bad)


def test_thinking_params_are_the_sdks():
    assert {"type": "adaptive"} == Thinking("adaptive").param()
    assert {"type": "disabled"} == Thinking("disabled").param()
    assert {"type": "enabled", "budget_tokens": 2048} == Thinking("enabled", 2048).param()


def test_a_budget_must_be_at_least_1024_and_below_max_tokens():
    assert "must be >= 1,024" in thinking_problem("claude-sonnet-4-6", Thinking("enabled", 1023), 16_000)
    assert "below max_tokens (2,048)" in thinking_problem(
        "claude-sonnet-4-6", Thinking("enabled", 2048), 2048
    )
    assert None is thinking_problem("claude-sonnet-4-6", Thinking("enabled", MIN_THINKING_BUDGET), 1025)


@pytest.mark.parametrize(
    ("model", "thinking", "ok"),
    [
        ("claude-opus-5-5", "adaptive", True), ("claude-opus-5-5", "off", False), ("claude-opus-5-5", "2048", False),
        ("claude-sonnet-5-5", "off", False), ("claude-haiku-5-5", "off", True), ("claude-opus-4-8", "2048", False),
        ("claude-opus-4-6", "2048", True), ("claude-haiku-4-5", "adaptive", False), ("claude-haiku-4-5", "2048", True),
        ("claude-fable-9", "adaptive", True), ("claude-fable-9", "2048", True),
    ],
)  # fmt: skip
def test_a_thinking_type_is_refused_exactly_where_the_model_does_not_take_it(model, thinking, ok):
    problem = thinking_problem(model, Thinking.parse(thinking), 16_000)
    assert ok == (problem is None), problem
    if not ok:
        assert model in problem and "it takes:" in problem


def test_the_default_max_tokens_leaves_room_where_the_model_thinks():
    assert BASE_MAX_TOKENS == default_max_tokens("claude-sonnet-4-6")
    assert THINKING_MAX_TOKENS == default_max_tokens("claude-opus-5-5")
    assert THINKING_MAX_TOKENS == default_max_tokens("claude-sonnet-4-6", Thinking("adaptive"))
    assert BASE_MAX_TOKENS == default_max_tokens("claude-opus-5", Thinking("disabled"))
    assert 30_000 + BASE_MAX_TOKENS == default_max_tokens("claude-sonnet-4-6", Thinking("enabled", 30_000))
    assert BASE_MAX_TOKENS == default_max_tokens("claude-fable-9")


def test_too_little_room_for_thinking_is_a_warning():
    assert "thinks by default" in thinking_room_problem("claude-fable-5-1", None, 1024)
    assert None is thinking_room_problem("claude-fable-5-1", None, 16_000)
    assert None is thinking_room_problem("claude-sonnet-4-6", None, 1024)
    assert "--thinking adaptive" in thinking_room_problem("claude-sonnet-4-6", Thinking("adaptive"), 1024)


def test_the_estimated_rows_are_the_ones_no_page_documents():
    estimated = {m for m in _sdk_models() if model_info(m).estimated}
    assert {"claude-fable-5-2", "claude-mythos-5-2"} == estimated


def test_fable_and_mythos_5_1_read_cache_at_a_fortieth():
    assert 0.025 == price_for("claude-fable-5-1").cache_read == price_for("claude-mythos-5-1").cache_read
    assert 0.1 == price_for("claude-fable-5").cache_read


def test_the_docs_model_table_is_the_tables():
    """Every row of the model table in docs/knobs.md names a model of `MODELS` with its output limit and
    prices, and every model of `MODELS` has a row."""
    from pathlib import Path

    from judgecore.wire.models import MODELS

    knobs = (Path(__file__).resolve().parents[2] / "docs/knobs.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(claude-[a-z0-9-]+)`[^|]* \| ([\d,]+) \| ([^|]+) \|", knobs, flags=re.M)
    assert set(MODELS) == {m for m, _, _ in rows}
    for model, limit, price in rows:
        info = MODELS[model]
        assert f"{info.output_limit:,}" == limit, model
        if info.price is not None:
            assert price.startswith(f"${info.price.input_per_mtok:g} / ${info.price.output_per_mtok:g}"), (
                model
            )
