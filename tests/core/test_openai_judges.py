"""An `openai:MODEL` judge in the core's tables: its price (from OpenAI's table), its output limit,
and the route of a provider without a batch route."""

from __future__ import annotations

import pytest

from judgecore.decide.prices import usage_cost
from judgecore.decide.routing import RoutePolicy, route
from judgecore.results.outcomes import Usage
from judgecore.wire.models import max_tokens_problem, price_for


def test_an_openai_answer_is_priced_from_openais_table() -> None:
    price = price_for("openai:gpt-5-mini")  # $0.25 in, $0.025 cached, $2.00 out per MTok
    assert price is not None
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_input_tokens=1_000_000)
    assert usage_cost(usage, price, "sync") == pytest.approx(0.25 + 0.025 + 2.0)
    assert usage_cost(usage, price, "batch") == pytest.approx((0.25 + 0.025 + 2.0) / 2)


def test_unpriced_and_unknown_openai_models_have_no_price() -> None:
    assert price_for("openai:gpt-6-astra") is None
    assert price_for("openai:gpt-9") is None


def test_max_tokens_above_an_openai_models_limit_is_refused() -> None:
    assert max_tokens_problem("openai:gpt-4o", 16_384) is None
    assert "16,384" in (max_tokens_problem("openai:gpt-4o", 20_000) or "")


def test_a_sync_only_provider_routes_sync_at_any_size() -> None:
    r = route(n=1_000_000, policy=RoutePolicy(sync_only="openai"))
    assert r.path == "sync" and "openai: judges have no batch route" in r.reason
    assert route(n=1_000_000, policy=RoutePolicy()).path == "batch"
