"""Models' output limits: max_tokens above a known model's limit is refused up front, naming the limit."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from judgecore.models import ABSURD_MAX_TOKENS, OUTPUT_LIMITS, max_tokens_problem, output_limit


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
