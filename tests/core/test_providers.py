"""Judge names (`PROVIDER:MODEL`) and OpenAI's model table, checked against the installed `openai` SDK."""

from __future__ import annotations

import string
from datetime import date
from typing import get_args

import pytest
from hypothesis import given
from hypothesis import strategies as st
from openai.types.shared.chat_model import ChatModel

from judgecore.wire.providers import (
    OPENAI_MODELS,
    PRICES_READ,
    PROVIDERS,
    SUGGESTED,
    Judge,
    JudgeNameError,
    OpenAIPrice,
    openai_model_problem,
    openai_price,
    parse_judge,
)

_model_ids = st.text(string.ascii_lowercase + string.digits + "-._/", min_size=1, max_size=30).filter(
    lambda s: s.strip() == s and s[0].isalnum()
)
_hosts = st.text(string.ascii_lowercase + string.digits + ".-", min_size=1, max_size=20).filter(
    lambda s: s[0].isalnum()
)


def test_a_bare_name_is_anthropics_as_before():
    assert Judge("anthropic", "claude-sonnet-4-6", "claude-sonnet-4-6") == parse_judge("claude-sonnet-4-6")


@given(_model_ids.filter(lambda s: ":" not in s))
def test_every_bare_name_is_anthropics_and_keeps_its_key(name):
    judge = parse_judge(name)
    assert ("anthropic", name, name) == (judge.provider, judge.model, judge.key)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@given(model=_model_ids)
def test_a_provider_prefix_names_the_provider_and_the_key_is_the_name_as_given(provider, model):
    judge = parse_judge(f"{provider}:{model}")
    assert (provider, model, f"{provider}:{model}") == (judge.provider, judge.model, judge.key)


@given(model=_model_ids, host=_hosts, port=st.integers(1, 65535), scheme=st.sampled_from(["http", "https"]))
def test_a_served_models_key_leaves_out_its_url(model, host, port, scheme):
    """Moving a server changes no key (hence no custom_id and no manifest)."""
    here = parse_judge(f"served:{model}@{scheme}://{host}:{port}/v1")
    there = parse_judge(f"served:{model}@http://elsewhere:8000/v1")
    assert ("served", model, f"{scheme}://{host}:{port}/v1") == (here.provider, here.model, here.url)
    assert f"served:{model}" == here.key == there.key
    assert here.self_hosted


def test_a_served_model_id_may_hold_a_slash():
    judge = parse_judge("served:Qwen/Qwen3-32B@http://gpu01:8000/v1")
    assert ("Qwen/Qwen3-32B", "http://gpu01:8000/v1") == (judge.model, judge.url)


@given(st.text(string.ascii_lowercase, min_size=1, max_size=10).filter(lambda p: p not in PROVIDERS))
def test_an_unknown_provider_is_an_error_naming_the_providers(provider):
    with pytest.raises(JudgeNameError) as caught:
        parse_judge(f"{provider}:gpt-5-mini")
    message = str(caught.value)
    assert f"unknown provider {provider!r}" in message
    assert all(f"{p}:" in message for p in PROVIDERS)
    assert "\n" not in message


@pytest.mark.parametrize(
    ("name", "says"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("openai:", "names no model"),
        ("served:Qwen3", "served:MODEL@URL"),
        ("served:@http://gpu01:8000/v1", "served:MODEL@URL"),
        ("served:Qwen3@gpu01:8000", "not an http:// or https:// URL"),
        ("openai:gpt-5:mini", "not a model id"),
        ("Claude Sonnet:4", "not a judge's name"),
    ],
)
def test_a_bad_name_is_one_line_saying_what_is_wrong(name, says):
    with pytest.raises(JudgeNameError) as caught:
        parse_judge(name)
    assert says in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_table_lists_every_model_the_installed_sdk_lists():
    assert set() == set(get_args(ChatModel)) - set(OPENAI_MODELS)


def test_the_prices_say_when_they_were_read():
    assert date(2026, 12, 3) == PRICES_READ


def test_an_id_openai_does_not_list_is_refused_naming_current_ones():
    problem = openai_model_problem("gpt-9-ultra", PRICES_READ)
    assert problem is not None
    assert problem.startswith("openai:gpt-9-ultra is not a model OpenAI lists")
    assert all(f"openai:{m}" in problem for m in SUGGESTED)


def test_a_model_past_its_shutdown_date_is_refused_and_one_before_it_is_not():
    assert None is openai_model_problem("gpt-5-mini", date(2026, 12, 10))
    problem = openai_model_problem("gpt-5-mini", date(2026, 12, 11))
    assert problem is not None and "shut down on 2026-12-11" in problem


def test_the_suggested_models_are_current_and_priced():
    for model in SUGGESTED:
        assert None is openai_model_problem(model, PRICES_READ)
        assert openai_price(model, batch=False) is not None


def test_the_batch_route_is_half_price_cached_input_included():
    sync = openai_price("gpt-5-mini", batch=False)
    batch = openai_price("gpt-5-mini", batch=True)
    assert OpenAIPrice(0.25, 0.025, 2.0) == sync
    assert OpenAIPrice(0.125, 0.0125, 1.0) == batch


def test_cached_input_is_billed_at_its_own_rate():
    price = OpenAIPrice(1.0, 0.1, 4.0)
    assert pytest.approx(1.0 + 0.1 + 4.0) == price.cost(1_000_000, 1_000_000, 1_000_000)
    assert pytest.approx(2.0) == OpenAIPrice(1.0, None, 4.0).cost(1_000_000, 1_000_000, 0)


def test_an_unpriced_model_has_no_price_rather_than_a_guess():
    assert None is openai_price("gpt-6-astra", batch=False)
    assert None is openai_price("not-a-model", batch=True)


@given(st.sampled_from(sorted(OPENAI_MODELS)))
def test_every_row_has_a_positive_output_limit_and_sane_prices(model):
    info = OPENAI_MODELS[model]
    assert info.output_limit > 0
    if info.price is not None:
        assert 0 < info.price.input_per_mtok <= info.price.output_per_mtok
        cached = info.price.cached_input_per_mtok
        assert cached is None or 0 < cached <= info.price.input_per_mtok
