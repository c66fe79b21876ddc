"""Providers: whose model a judge is, what that judge is called, and what OpenAI's models cost.

A judge is named `PROVIDER:MODEL` (`judgecore.wire.providers.parse_judge`):

- `anthropic:claude-sonnet-4-6`, or a bare `claude-sonnet-4-6`: Anthropic's (every name that worked before
  keeps its meaning);
- `openai:gpt-5-mini`: OpenAI's, over Chat Completions and the Batch API;
- `served:MODEL@URL` (`served:Qwen/Qwen3-32B@http://gpu01:8000/v1`): a self-hosted OpenAI-compatible server
  (vLLM, SGLang), sync only, $0.

A name with any other `PROVIDER:` is an error naming the providers. A judge's `key` is its name as given,
less a served model's `@URL`: moving a server changes no key, hence no custom_id and no manifest.

OpenAI's model table (`OPENAI_MODELS`): every id the installed `openai` SDK's `ChatModel` type lists (a test
fails when the SDK lists one the table lacks), with its output limit, its prices per million tokens
(input, cached input, output; `OpenAIPrice.batch()` is the Batch API's half price) and the shutdown date
the SDK announces, if any. `openai_model_problem(model, today)` refuses an id the table does not list, and
one whose shutdown date has come (the date is an argument: the core never reads the clock).

Where the figures come from (read on PRICES_READ, 2026-12-03):
- Ids and shutdown dates: `openai` 3.60 `types/shared/chat_model.py` (`ChatModel` and its "Deprecated
  values" docstring).
- Prices: OpenAI's public API pricing page as quoted, with its date, by third-party copies stored on
  2026-04 to 2026-06 (GPT-5.5, the GPT-5.4 family, GPT-5.2, GPT-5.1), and OpenAI's launch prices as known
  to the author for the older families (GPT-5, GPT-4.1, GPT-4o, o3, o4-mini, o3-mini, o1). None was read
  from OpenAI's own page on that date: treat them as the best known, not as confirmed.
- Output limits: the models' pages as known to the author (GPT-5.x 128,000; GPT-4.1 32,768; GPT-4o
  16,384; o-series 100,000). UNSURE for GPT-5.4 / 5.5 (assumed 128,000, like the rest of GPT-5.x).
- ASSUMED, no page seen: `gpt-5.1-mini` priced as gpt-5-mini; `gpt-5.1-codex` and the `*-chat-latest`
  ids priced as their family (gpt-5 / gpt-5.2), the chat-latest ids' limit 16,384; `codex-mini-latest`
  $1.50 / $0.375 / $6.00 from memory. Not modelled: the GPT-5.4 / 5.5 long-context rates (2x input,
  1.5x output above 270K prompt tokens, per the same copies), under-counting such prompts.
- NOT FOUND: the GPT-6 ids (`gpt-6-astra`, `gpt-6.1-sol`, ...), `gpt-5.6-*`, `gpt-5.3-chat-latest` and the
  audio / search previews: the SDK lists them, no stored page priced them. They are known ids with
  `price=None` (a budget cannot be kept for them, as for any unpriced model) and an assumed 128,000 limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from types import MappingProxyType
from typing import Final, Literal

from judgecore.values import frozen

Provider = Literal["anthropic", "openai", "served"]

#: The providers a judge's name may start with, in the order error messages list them.
PROVIDERS: Final[tuple[Provider, ...]] = ("anthropic", "openai", "served")

#: The date the prices below were read (see the module docstring for from where).
PRICES_READ: Final = date(2026, 12, 3)

#: What a served model's spend says instead of a figure.
SELF_HOSTED: Final = "self-hosted"


class JudgeNameError(ValueError):
    """A judge's name that names no provider, or names one badly (one line, naming the providers)."""


@frozen
class Judge:
    """A judge's name, parsed: its provider, its model id and, for a served model, its server's URL."""

    provider: Provider
    model: str
    #: the name as given (`claude-sonnet-4-6`, `openai:gpt-5-mini`, `served:M@http://host/v1`)
    given: str
    #: a served model's base URL; None for every other provider
    url: str | None = None

    @property
    def key(self) -> str:
        """The judge's identity: its name as given, less a served model's `@URL`."""
        return f"served:{self.model}" if self.provider == "served" else self.given

    @property
    def self_hosted(self) -> bool:
        """Its spend is $0: the model runs on the user's own server."""
        return self.provider == "served"


_PREFIX = re.compile(r"(?P<provider>[a-z][a-z0-9_-]*):(?P<rest>.*)", re.DOTALL)
_URL = re.compile(r"https?://[^\s/@]+(/\S*)?")


def _providers() -> str:
    return ", ".join(f"{p}:" for p in PROVIDERS)


def parse_judge(name: str) -> Judge:
    """The judge a `--model` or `--judge` name means; `JudgeNameError` (one line) for a bad one.

    A bare name is Anthropic's. A `PROVIDER:` that is not one of `PROVIDERS` is an error naming them (a
    model id of Anthropic's never holds a colon, so no bare name is read as a provider)."""
    text = name.strip()
    if not text:
        raise JudgeNameError(f"a judge's name is empty; write MODEL or PROVIDER:MODEL ({_providers()})")
    m = _PREFIX.fullmatch(text)
    if m is None:
        if ":" in text:
            raise JudgeNameError(
                f"{name!r} is not a judge's name: write MODEL or PROVIDER:MODEL ({_providers()})"
            )
        return Judge("anthropic", text, text)
    provider, rest = m["provider"], m["rest"].strip()
    if provider not in PROVIDERS:
        raise JudgeNameError(f"{name!r}: unknown provider {provider!r}; the providers are {_providers()}")
    if not rest:
        raise JudgeNameError(f"{name!r} names no model after {provider}:")
    if provider == "served":
        model, at, url = rest.rpartition("@")
        if not at or not model.strip():
            raise JudgeNameError(
                f"{name!r}: a served model is named served:MODEL@URL, e.g. served:Qwen/Qwen3-32B@http://gpu01:8000/v1"
            )
        if _URL.fullmatch(url.strip()) is None:
            raise JudgeNameError(f"{name!r}: {url!r} is not an http:// or https:// URL")
        return Judge("served", model.strip(), text, url.strip())
    if ":" in rest or any(c.isspace() for c in rest):
        raise JudgeNameError(f"{name!r}: {rest!r} is not a model id")
    return Judge(provider, rest, text)  # type: ignore[arg-type]  # checked against PROVIDERS above


# -- OpenAI's model table ------------------------------------------------------------------------


@frozen
class OpenAIPrice:
    """US dollars per million tokens at standard (sync) rates: input, cached input, output."""

    input_per_mtok: float
    cached_input_per_mtok: float | None
    output_per_mtok: float

    def batch(self) -> OpenAIPrice:
        """The Batch API's rates: half of each."""
        cached = None if self.cached_input_per_mtok is None else self.cached_input_per_mtok / 2
        return OpenAIPrice(self.input_per_mtok / 2, cached, self.output_per_mtok / 2)

    def cost(self, input_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """Dollars for one answer's tokens; `input_tokens` excludes the cached ones (as `Usage` counts
        them); a model with no cached rate bills cached tokens as input."""
        cached_rate = self.cached_input_per_mtok
        if cached_rate is None:
            cached_rate = self.input_per_mtok
        return (
            input_tokens * self.input_per_mtok
            + cached_tokens * cached_rate
            + output_tokens * self.output_per_mtok
        ) / 1_000_000


@frozen(kw_only=True)
class OpenAIModel:
    """One row of OpenAI's table (see the module docstring for where each figure comes from)."""

    output_limit: int
    price: OpenAIPrice | None
    #: the SDK's announced shutdown date; requests fail from that day
    shutdown: date | None = None
    #: True for the reasoning families (gpt-5*, o*): no `temperature` but the default, thinking tokens
    #: counted in `completion_tokens`
    reasoning: bool = True


def _p(inp: float, cached: float | None, out: float) -> OpenAIPrice:
    return OpenAIPrice(inp, cached, out)


_GPT5 = _p(1.25, 0.125, 10.0)
_GPT5_MINI = _p(0.25, 0.025, 2.0)
_GPT5_NANO = _p(0.05, 0.005, 0.40)
_GPT52 = _p(1.75, 0.175, 14.0)
_GPT52_PRO = _p(21.0, None, 168.0)
_GPT54 = _p(2.50, 0.25, 15.0)
_GPT54_MINI = _p(0.75, 0.075, 4.50)
_GPT54_NANO = _p(0.20, 0.02, 1.25)
_GPT55 = _p(5.0, 0.50, 30.0)
_GPT41 = _p(2.0, 0.50, 8.0)
_GPT41_MINI = _p(0.40, 0.10, 1.60)
_GPT41_NANO = _p(0.10, 0.025, 0.40)
_GPT4O = _p(2.50, 1.25, 10.0)
_GPT4O_MINI = _p(0.15, 0.075, 0.60)
_O3 = _p(2.0, 0.50, 8.0)
_O4_MINI = _p(1.10, 0.275, 4.40)
_O3_MINI = _p(1.10, 0.55, 4.40)
_O1 = _p(15.0, 7.50, 60.0)
_GPT4_TURBO = _p(10.0, None, 30.0)
_GPT4 = _p(30.0, None, 60.0)
_GPT35 = _p(0.50, None, 1.50)

_D2026_12_11 = date(2026, 12, 11)
_D2027_01_14 = date(2027, 1, 14)
_D2026_10_23 = date(2026, 10, 23)
_D2027_04_01 = date(2027, 4, 1)


def _m(
    limit: int, price: OpenAIPrice | None, shutdown: date | None = None, reasoning: bool = True
) -> OpenAIModel:
    return OpenAIModel(output_limit=limit, price=price, shutdown=shutdown, reasoning=reasoning)


def _chat(limit: int, price: OpenAIPrice | None, shutdown: date | None = None) -> OpenAIModel:
    return _m(limit, price, shutdown, reasoning=False)


_UNPRICED = _m(128_000, None)

OPENAI_MODELS: Mapping[str, OpenAIModel] = MappingProxyType(
    {
        # -- not priced in any stored page (see the module docstring) -----------------------------
        "gpt-6-astra": _UNPRICED,
        "gpt-6.2-astra": _UNPRICED,
        "gpt-6.1-sol": _UNPRICED,
        "gpt-6.2-sol": _UNPRICED,
        "gpt-6.1-terra": _UNPRICED,
        "gpt-6-sol": _UNPRICED,
        "gpt-6-luna": _UNPRICED,
        "gpt-5.6-sol": _UNPRICED,
        "gpt-5.6-terra": _UNPRICED,
        "gpt-5.6-luna": _UNPRICED,
        # -- GPT-5.x -----------------------------------------------------------------------------
        "gpt-5.5": _m(128_000, _GPT55),
        "gpt-5.5-2026-04-23": _m(128_000, _GPT55),
        "gpt-5.4": _m(128_000, _GPT54),
        "gpt-5.4-mini": _m(128_000, _GPT54_MINI),
        "gpt-5.4-nano": _m(128_000, _GPT54_NANO, _D2027_04_01),
        "gpt-5.4-mini-2026-03-17": _m(128_000, _GPT54_MINI),
        "gpt-5.4-nano-2026-03-17": _m(128_000, _GPT54_NANO, _D2027_04_01),
        "gpt-5.3-chat-latest": _m(16_384, None, date(2026, 8, 10)),
        "gpt-5.2": _m(128_000, _GPT52),
        "gpt-5.2-2025-12-11": _m(128_000, _GPT52),
        "gpt-5.2-chat-latest": _m(16_384, _GPT52, date(2026, 8, 10)),
        "gpt-5.2-pro": _m(128_000, _GPT52_PRO),
        "gpt-5.2-pro-2025-12-11": _m(128_000, _GPT52_PRO),
        "gpt-5.1": _m(128_000, _GPT5, _D2027_04_01),
        "gpt-5.1-2025-11-13": _m(128_000, _GPT5, _D2027_04_01),
        "gpt-5.1-codex": _m(128_000, _GPT5, date(2026, 7, 23)),
        "gpt-5.1-mini": _m(
            128_000, _GPT5_MINI
        ),  # "not a supported model ID" (the SDK): kept, priced as gpt-5-mini
        "gpt-5.1-chat-latest": _m(16_384, _GPT5, date(2026, 7, 23)),
        "gpt-5": _m(128_000, _GPT5, _D2026_12_11),
        "gpt-5-mini": _m(128_000, _GPT5_MINI, _D2026_12_11),
        "gpt-5-nano": _m(128_000, _GPT5_NANO, _D2026_12_11),
        "gpt-5-2025-08-07": _m(128_000, _GPT5, _D2026_12_11),
        "gpt-5-mini-2025-08-07": _m(128_000, _GPT5_MINI, _D2026_12_11),
        "gpt-5-nano-2025-08-07": _m(128_000, _GPT5_NANO, _D2026_12_11),
        "gpt-5-chat-latest": _m(16_384, _GPT5, date(2026, 7, 23)),
        # -- GPT-4.1, o-series, GPT-4o -------------------------------------------------------------
        "gpt-4.1": _chat(32_768, _GPT41, _D2027_01_14),
        "gpt-4.1-mini": _chat(32_768, _GPT41_MINI, _D2027_01_14),
        "gpt-4.1-nano": _chat(32_768, _GPT41_NANO, _D2026_10_23),
        "gpt-4.1-2025-04-14": _chat(32_768, _GPT41, _D2027_01_14),
        "gpt-4.1-mini-2025-04-14": _chat(32_768, _GPT41_MINI, _D2027_01_14),
        "gpt-4.1-nano-2025-04-14": _chat(32_768, _GPT41_NANO, _D2026_10_23),
        "o4-mini": _m(100_000, _O4_MINI, _D2026_10_23),
        "o4-mini-2025-04-16": _m(100_000, _O4_MINI, _D2026_10_23),
        "o3": _m(100_000, _O3, _D2026_12_11),
        "o3-2025-04-16": _m(100_000, _O3, _D2026_12_11),
        "o3-mini": _m(100_000, _O3_MINI, _D2026_10_23),
        "o3-mini-2025-01-31": _m(100_000, _O3_MINI, _D2026_10_23),
        "o1": _m(100_000, _O1, _D2026_10_23),
        "o1-2024-12-17": _m(100_000, _O1, _D2026_10_23),
        "o1-preview": _m(32_768, _O1, date(2025, 7, 28)),
        "o1-preview-2024-09-12": _m(32_768, _O1, date(2025, 7, 28)),
        "o1-mini": _m(65_536, _O3_MINI, date(2025, 10, 27)),
        "o1-mini-2024-09-12": _m(65_536, _O3_MINI, date(2025, 10, 27)),
        "gpt-4o": _chat(16_384, _GPT4O, _D2027_01_14),
        "gpt-4o-2024-11-20": _chat(16_384, _GPT4O, _D2027_01_14),
        "gpt-4o-2024-08-06": _chat(16_384, _GPT4O, _D2027_01_14),
        "gpt-4o-2024-05-13": _chat(4_096, _p(5.0, None, 15.0), _D2026_10_23),
        "gpt-audio-mini": _chat(16_384, None, date(2027, 1, 20)),
        "gpt-audio-mini-2025-12-15": _chat(16_384, None, date(2027, 1, 20)),
        "gpt-4o-audio-preview": _chat(16_384, None, date(2026, 5, 7)),
        "gpt-4o-audio-preview-2024-10-01": _chat(16_384, None, date(2025, 10, 10)),
        "gpt-4o-audio-preview-2024-12-17": _chat(16_384, None, date(2026, 5, 7)),
        "gpt-4o-audio-preview-2025-06-03": _chat(16_384, None, date(2026, 5, 7)),
        "gpt-4o-mini-audio-preview": _chat(16_384, None, date(2026, 5, 7)),
        "gpt-4o-mini-audio-preview-2024-12-17": _chat(16_384, None, date(2026, 5, 7)),
        "gpt-4o-search-preview": _chat(16_384, None, date(2026, 7, 23)),
        "gpt-4o-mini-search-preview": _chat(16_384, None, date(2026, 7, 23)),
        "gpt-4o-search-preview-2025-03-11": _chat(16_384, None, date(2026, 7, 23)),
        "gpt-4o-mini-search-preview-2025-03-11": _chat(16_384, None, date(2026, 7, 23)),
        "chatgpt-4o-latest": _chat(16_384, _p(5.0, None, 15.0), date(2026, 2, 17)),
        "codex-mini-latest": _m(100_000, _p(1.50, 0.375, 6.0), date(2026, 2, 12)),
        "gpt-4o-mini": _chat(16_384, _GPT4O_MINI, _D2027_01_14),
        "gpt-4o-mini-2024-07-18": _chat(16_384, _GPT4O_MINI, _D2027_01_14),
        # -- older, shut down or shutting down -----------------------------------------------------
        "gpt-4-turbo": _chat(4_096, _GPT4_TURBO, _D2026_10_23),
        "gpt-4-turbo-2024-04-09": _chat(4_096, _GPT4_TURBO, _D2026_10_23),
        "gpt-4-0125-preview": _chat(4_096, _GPT4_TURBO, date(2026, 3, 26)),
        "gpt-4-turbo-preview": _chat(4_096, _GPT4_TURBO, date(2026, 3, 26)),
        "gpt-4-1106-preview": _chat(4_096, _GPT4_TURBO, _D2026_10_23),
        "gpt-4-vision-preview": _chat(4_096, _GPT4_TURBO, date(2024, 12, 6)),
        "gpt-4": _chat(8_192, _GPT4, _D2026_10_23),
        "gpt-4-0314": _chat(8_192, _GPT4, date(2026, 3, 26)),
        "gpt-4-0613": _chat(8_192, _GPT4, _D2026_10_23),
        "gpt-4-32k": _chat(8_192, _p(60.0, None, 120.0), date(2025, 6, 6)),
        "gpt-4-32k-0314": _chat(8_192, _p(60.0, None, 120.0), date(2025, 6, 6)),
        "gpt-4-32k-0613": _chat(8_192, _p(60.0, None, 120.0), date(2025, 6, 6)),
        "gpt-3.5-turbo": _chat(4_096, _GPT35, _D2026_10_23),
        "gpt-3.5-turbo-16k": _chat(4_096, _p(3.0, None, 4.0), date(2024, 9, 13)),
        "gpt-3.5-turbo-0301": _chat(4_096, _GPT35, date(2024, 9, 13)),
        "gpt-3.5-turbo-0613": _chat(4_096, _GPT35, date(2024, 9, 13)),
        "gpt-3.5-turbo-1106": _chat(4_096, _p(1.0, None, 2.0), date(2026, 9, 28)),
        "gpt-3.5-turbo-0125": _chat(4_096, _GPT35, _D2026_10_23),
        "gpt-3.5-turbo-16k-0613": _chat(4_096, _p(3.0, None, 4.0), date(2024, 9, 13)),
    }
)

#: Ids a new user is pointed at when theirs is unknown: current, priced, not announced for shutdown.
SUGGESTED: Final = ("gpt-5.5", "gpt-5.4", "gpt-5.4-mini", "gpt-5.2")


def openai_model(model: str) -> OpenAIModel | None:
    """The table's row for an OpenAI model id, or None for an id it does not list."""
    return OPENAI_MODELS.get(model)


def openai_model_problem(model: str, today: date) -> str | None:
    """Why `openai:MODEL` cannot be sent on `today` (one line), or None: an id the table (the SDK's
    `ChatModel`) does not list, or one whose announced shutdown date has come."""
    info = OPENAI_MODELS.get(model)
    if info is None:
        return f"openai:{model} is not a model OpenAI lists; current ones include " + ", ".join(
            f"openai:{m}" for m in SUGGESTED
        )
    if info.shutdown is not None and today >= info.shutdown:
        return (
            f"openai:{model} was shut down on {info.shutdown.isoformat()}; current ones include "
            + ", ".join(f"openai:{m}" for m in SUGGESTED)
        )
    return None


def openai_price(model: str, *, batch: bool) -> OpenAIPrice | None:
    """An OpenAI model's rates on a route (the batch route's are half), or None where unpriced."""
    info = OPENAI_MODELS.get(model)
    if info is None or info.price is None:
        return None
    return info.price.batch() if batch else info.price


#: A served model's rates: self-hosted, so nothing (`SELF_HOSTED` says so where a figure would be).
SERVED_PRICE: Final = OpenAIPrice(0.0, 0.0, 0.0)


__all__ = [
    "OPENAI_MODELS",
    "PRICES_READ",
    "PROVIDERS",
    "SELF_HOSTED",
    "SERVED_PRICE",
    "SUGGESTED",
    "Judge",
    "JudgeNameError",
    "OpenAIModel",
    "OpenAIPrice",
    "Provider",
    "openai_model",
    "openai_model_problem",
    "openai_price",
    "parse_judge",
]
