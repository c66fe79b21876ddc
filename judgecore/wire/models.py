"""Models: what judgecore knows of each model before anything is sent (one table, one home).

For every model id the installed SDK lists (`anthropic.types.Model`; a test fails when it lists one
this table lacks) the table holds: the output limit (`max_tokens` above it is a 400 the API would
charge a routing probe, or a whole sub-batch, to say), the prices (standard rates per million tokens;
the batch half price and the cache-write multipliers are applied in `judgecore.decide.planning`), how the
model thinks (whether it thinks when the request omits `thinking`, and which `thinking.type` values
it takes), and its lifecycle (current; deprecated with a retirement date; retired, with the model to
move to). Older ids judgecore knew are kept, as retired entries.

Decisions, all pure (the date is an argument: the core never reads the clock):
- `max_tokens_problem(model, max_tokens)`: a value above the model's limit, or absurd for any model.
- `unknown_model_problem(model)`: an id the table does not know, with the nearest one it does.
- `standing(model, today)`: `Deprecated` (a warning naming the retirement date) or `Retired` (exit 2
  naming the replacement) or None. A deprecated id whose retirement date has come is retired.
- `thinking_problem(model, thinking, max_tokens)`: a `thinking` value the model does not take, or a
  budget outside `1,024 <= N < max_tokens` (the SDK's `ThinkingConfigEnabledParam`), as one line.
- `default_max_tokens(model, thinking)`: 1,024, or `THINKING_MAX_TOKENS` where the model thinks (by
  default or because it was asked): thinking tokens are output tokens and come out of `max_tokens`.
- `thinking_room_problem(...)`: a warning where thinking will happen and `max_tokens` leaves little room.

A dated snapshot id (`claude-haiku-4-5-20251001`) has the entry of its alias (`claude-haiku-4-5`).
A model not in the table is refused before anything is sent (`unknown_model_problem`) unless the
user allows it (`--allow-unknown-model`): then it passes through, and the API is the judge of it.

Where each figure comes from (stored copies of platform.claude.com read on 2026-12-01, and the SDK):
- Ids, deprecations: anthropic 2.14 `types/model.py` (`Model`), `_data/deprecated_models.py`
  (Mythos Preview retired 2026-06-30, Sonnet 4.5 retired 2026-11-30, Opus 4.5 retiring 2027-01-22).
- Limits and prices: each model's page `/docs/en/models/<model>/overview` and the comparison table of
  `/docs/en/about-claude/models/overview` (Fable 5.1 $10/$50, Opus 5.5 $4/$20, Sonnet 5.5 $2/$10,
  Haiku 5.5 from $0.10/$0.50, 128K output each; Opus 5 $5/$25; Fable 5 $10/$50, Mythos 5 "shares
  Fable 5's specifications and pricing"; Opus 4.8 $5/$25, 128K; Opus 4.5 $5/$25, 64K; Haiku 4.5
  $1/$5, 64K). Cache reads: 0.1x input by default; 0.025x on Fable 5.1 / Mythos 5.1
  (`/docs/en/build-with-claude/prompt-caching`); Opus 5.5 $0.20 (0.05x, its model page); Sonnet 5.5
  $0.10 (0.05x, `/docs/en/models/sonnet-5-5/migration-guide`: half Sonnet 5's rate).
- Haiku 5.5 is priced by prompt length (its model page): $0.10/$0.50 for a prompt (input + cache reads
  and writes) up to 100,000 tokens, $0.50/$2.50 above. `ModelPrice.long_prompt` carries the upper
  tier: a request's cost bound uses it whenever the request may be that long; spend is computed from
  usage summed per route, so it is priced at the lower tier (an under-count for prompts over 100k).
- Thinking: `/docs/en/build-with-claude/thinking-troubleshooting` ("enabled" with `budget_tokens` is
  deprecated on the 4.6 models and rejected by Claude 4.7 and later; the only mode on Opus 4.5, Sonnet
  4.5 and Haiku 4.5), `/docs/en/models/opus-5-5/whats-new-opus-5-5` (Opus 5.5 and Fable 5.1: thinking
  always on, "disabled" and "enabled" are 400s), the Fable 5 migration guide (Fable 5 / Mythos 5:
  "disabled" and "enabled" are 400s), `/docs/en/models/sonnet-5-5/whats-new-sonnet-5-5` (adaptive on
  by default; "between_tools" instead of "disabled"), the Sonnet 5 and Opus 5 pages (adaptive on by
  default, "disabled" accepted), the Haiku 5.5 page (adaptive on by default, "disabled" accepted at
  effort high or lower; judgecore never sets effort, whose default there is medium), the
  adaptive-thinking page (Mythos Preview: adaptive by default, "disabled" refused, "enabled" still
  accepted). Opus 4.6-4.8 and Sonnet 4.6 think only when asked (the thinking page: "where it is off by
  default, set thinking to turn it on"; only the 5.x models are named as thinking by default).
  Uncertain: whether Opus 4.7 / 4.8 take "disabled" on the Claude API (a third-party guide says they
  do; the Amazon Bedrock page says Opus 4.7 refuses it there); the table says they take it.
- Replacements: the release notes (Opus 4 and Sonnet 4 retired 2026-06-15, upgrade to Opus 4.8 and
  Sonnet 4.6); Mythos 5 is "the access-gated successor to Claude Mythos Preview" (Fable 5 migration
  guide). Where no page named one (Opus 4.1, Opus 4.5, Sonnet 4.5, the 3.x models) the replacement is
  judgecore's pick: the family's current model on the models overview (`# pick` below).
- NOT FOUND in any stored page: Fable 5.2 and Mythos 5.2 (listed by the SDK only). Their entries are
  ESTIMATES by family (Fable 5.1's limit, prices, cache-read rate and thinking), marked `estimated=True`
  and shown as such in the plan.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from enum import Enum
from types import MappingProxyType
from typing import Literal

from judgecore.job.near import closest
from judgecore.values import frozen
from judgecore.wire.providers import openai_model, openai_price

ABSURD_MAX_TOKENS = 1_000_000
#: The default `max_tokens` of a model that does not think.
BASE_MAX_TOKENS = 1024
#: The default `max_tokens` where the model thinks: room for thinking and the answer (a figure of the
#: docs' own thinking examples; below the SDK's non-streaming ceiling at judgecore's request timeout).
THINKING_MAX_TOKENS = 16_000
#: Below this, `max_tokens` leaves a thinking model little room for its answer: the plan warns.
MIN_THINKING_ROOM = 4096
#: The smallest `budget_tokens` of `{"type": "enabled"}` (SDK `ThinkingConfigEnabledParam`).
MIN_THINKING_BUDGET = 1024

ThinkingType = Literal["adaptive", "enabled", "disabled", "between_tools"]


@frozen
class ModelPrice:
    """US dollars per million tokens, standard (non-batch) rates; `cache_read` is the multiplier of the
    input price a cache read costs; `long_prompt` is `(over, input, output)`: the rates of a request
    whose prompt is over `over` tokens (Haiku 5.5), None where the price does not depend on it."""

    input_per_mtok: float
    output_per_mtok: float
    cache_read: float = 0.1
    long_prompt: tuple[int, float, float] | None = None


@frozen
class Thinking:
    """A job's `thinking` parameter: `adaptive`, `disabled`, or `enabled` with a `budget_tokens`."""

    type: Literal["adaptive", "enabled", "disabled"]
    budget_tokens: int | None = None

    @classmethod
    def parse(cls, value: Thinking | str | int) -> Thinking:
        """`adaptive`, `off` (disabled) or a budget N (enabled), as `--thinking` takes them; ValueError
        naming the accepted forms otherwise."""
        if isinstance(value, Thinking):
            return value
        if isinstance(value, bool):
            raise ValueError(f"--thinking must be adaptive, off or a token budget, got {value!r}")
        if isinstance(value, int):
            return cls("enabled", value)
        text = str(value).strip().lower()
        if text == "adaptive":
            return cls("adaptive")
        if text in ("off", "disabled"):
            return cls("disabled")
        if text.isdigit():
            return cls("enabled", int(text))
        raise ValueError(f"--thinking must be adaptive, off or a token budget N, got {value!r}")

    def param(self) -> dict[str, object]:
        """The SDK's `thinking` parameter (`ThinkingConfig*Param`)."""
        if self.type == "enabled":
            return {"type": "enabled", "budget_tokens": self.budget_tokens}
        return {"type": self.type}

    def __str__(self) -> str:
        return "off" if self.type == "disabled" else str(self.budget_tokens or self.type)


@frozen
class ThinkingSupport:
    """How a model thinks: whether it thinks when `thinking` is omitted, and the types it takes."""

    by_default: bool
    accepts: frozenset[str]


class Status(Enum):
    CURRENT = "current"
    DEPRECATED = "deprecated"
    RETIRED = "retired"


@frozen
class Lifecycle:
    status: Status = Status.CURRENT
    #: The first day requests fail (deprecated: scheduled; retired: when it happened, if known).
    retires: date | None = None
    replacement: str | None = None


@frozen(kw_only=True)
class ModelInfo:
    """One row of the table (see the module docstring for where each figure comes from)."""

    output_limit: int
    price: ModelPrice | None
    thinking: ThinkingSupport
    lifecycle: Lifecycle = Lifecycle()
    #: True where the figures are judgecore's estimate by family, not a documented figure.
    estimated: bool = False


# thinking support, by what the docs say of each generation
_ALWAYS = ThinkingSupport(True, frozenset({"adaptive"}))  # Fable 5.x, Mythos 5.x, Opus 5.5
_ON_OFF = ThinkingSupport(True, frozenset({"adaptive", "disabled"}))  # Opus 5, Sonnet 5, Haiku 5.5
_ON_BETWEEN = ThinkingSupport(True, frozenset({"adaptive", "between_tools"}))  # Sonnet 5.5
_ASK_ADAPTIVE = ThinkingSupport(False, frozenset({"adaptive", "disabled"}))  # Opus 4.7, 4.8
_ASK_BOTH = ThinkingSupport(False, frozenset({"adaptive", "enabled", "disabled"}))  # Opus 4.6, Sonnet 4.6
_PREVIEW = ThinkingSupport(True, frozenset({"adaptive", "enabled"}))  # Mythos Preview
_ASK_EXTENDED = ThinkingSupport(False, frozenset({"enabled", "disabled"}))  # 4.5s and earlier
_NONE = ThinkingSupport(False, frozenset({"disabled"}))  # Haiku 3.x: no thinking

_FABLE = ModelPrice(10.0, 50.0)
_FABLE_51 = ModelPrice(10.0, 50.0, cache_read=0.025)
_OPUS = ModelPrice(5.0, 25.0)
_OPUS_OLD = ModelPrice(15.0, 75.0)
_SONNET_OLD = ModelPrice(3.0, 15.0)


def _retired(when: date | None, replacement: str) -> Lifecycle:
    return Lifecycle(Status.RETIRED, when, replacement)


MODELS: Mapping[str, ModelInfo] = MappingProxyType(
    {
        # -- current (the SDK's `Model` literal) ------------------------------------------------
        "claude-fable-5-2": ModelInfo(
            output_limit=128_000, price=_FABLE_51, thinking=_ALWAYS, estimated=True
        ),
        "claude-mythos-5-2": ModelInfo(
            output_limit=128_000, price=_FABLE_51, thinking=_ALWAYS, estimated=True
        ),
        "claude-fable-5-1": ModelInfo(output_limit=128_000, price=_FABLE_51, thinking=_ALWAYS),
        "claude-mythos-5-1": ModelInfo(output_limit=128_000, price=_FABLE_51, thinking=_ALWAYS),
        "claude-fable-5": ModelInfo(output_limit=128_000, price=_FABLE, thinking=_ALWAYS),
        "claude-mythos-5": ModelInfo(output_limit=128_000, price=_FABLE, thinking=_ALWAYS),
        "claude-opus-5-5": ModelInfo(
            output_limit=128_000, price=ModelPrice(4.0, 20.0, cache_read=0.05), thinking=_ALWAYS
        ),
        "claude-sonnet-5-5": ModelInfo(
            output_limit=128_000, price=ModelPrice(2.0, 10.0, cache_read=0.05), thinking=_ON_BETWEEN
        ),
        "claude-haiku-5-5": ModelInfo(
            output_limit=128_000,
            price=ModelPrice(0.10, 0.50, long_prompt=(100_000, 0.50, 2.50)),
            thinking=_ON_OFF,
        ),
        "claude-opus-5": ModelInfo(output_limit=128_000, price=_OPUS, thinking=_ON_OFF),
        "claude-sonnet-5": ModelInfo(output_limit=128_000, price=ModelPrice(2.0, 10.0), thinking=_ON_OFF),
        "claude-opus-4-8": ModelInfo(output_limit=128_000, price=_OPUS, thinking=_ASK_ADAPTIVE),
        "claude-opus-4-7": ModelInfo(output_limit=128_000, price=_OPUS, thinking=_ASK_ADAPTIVE),
        "claude-opus-4-6": ModelInfo(output_limit=128_000, price=_OPUS, thinking=_ASK_BOTH),
        "claude-sonnet-4-6": ModelInfo(output_limit=128_000, price=_SONNET_OLD, thinking=_ASK_BOTH),
        "claude-haiku-4-5": ModelInfo(
            output_limit=64_000, price=ModelPrice(1.0, 5.0), thinking=_ASK_EXTENDED
        ),
        "claude-opus-4-5": ModelInfo(
            output_limit=64_000,
            price=_OPUS,
            thinking=_ASK_EXTENDED,
            lifecycle=Lifecycle(Status.DEPRECATED, date(2027, 1, 22), "claude-opus-5-5"),  # pick
        ),
        "claude-sonnet-4-5": ModelInfo(
            output_limit=64_000,
            price=_SONNET_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=Lifecycle(Status.DEPRECATED, date(2026, 11, 30), "claude-sonnet-5-5"),  # pick
        ),
        "claude-mythos-preview": ModelInfo(
            output_limit=128_000,
            price=None,  # not found: retired before the stored pricing pages
            thinking=_PREVIEW,
            lifecycle=Lifecycle(Status.DEPRECATED, date(2026, 6, 30), "claude-mythos-5"),
        ),
        # -- retired ids judgecore knew ----------------------------------------------------------
        "claude-opus-4-1": ModelInfo(
            output_limit=32_000,
            price=_OPUS_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(None, "claude-opus-5-5"),
        ),
        "claude-opus-4-0": ModelInfo(
            output_limit=32_000,
            price=_OPUS_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(date(2026, 6, 15), "claude-opus-4-8"),
        ),
        "claude-opus-4": ModelInfo(
            output_limit=32_000,
            price=_OPUS_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(date(2026, 6, 15), "claude-opus-4-8"),
        ),
        "claude-sonnet-4-0": ModelInfo(
            output_limit=64_000,
            price=_SONNET_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(date(2026, 6, 15), "claude-sonnet-4-6"),
        ),
        "claude-sonnet-4": ModelInfo(
            output_limit=64_000,
            price=_SONNET_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(date(2026, 6, 15), "claude-sonnet-4-6"),
        ),
        "claude-3-7-sonnet": ModelInfo(
            output_limit=64_000,
            price=_SONNET_OLD,
            thinking=_ASK_EXTENDED,
            lifecycle=_retired(None, "claude-sonnet-5-5"),  # pick
        ),
        "claude-3-5-haiku": ModelInfo(
            output_limit=8_192,
            price=ModelPrice(0.8, 4.0),
            thinking=_NONE,
            lifecycle=_retired(None, "claude-haiku-5-5"),  # pick
        ),
        "claude-3-haiku": ModelInfo(
            output_limit=4_096,
            price=ModelPrice(0.25, 1.25),
            thinking=_NONE,
            lifecycle=_retired(None, "claude-haiku-5-5"),  # pick
        ),
    }
)

#: The models' output limits (every row of `MODELS`), for callers that need only those.
OUTPUT_LIMITS: Mapping[str, int] = MappingProxyType({m: info.output_limit for m, info in MODELS.items()})

_SNAPSHOT = re.compile(r"(?P<alias>.+?)(?:-(?:latest|\d{8}))$")


def alias_of(model: str) -> str:
    """The table's id for `model`: itself, or the alias of a dated snapshot id known by its alias."""
    if model in MODELS:
        return model
    m = _SNAPSHOT.fullmatch(model)
    return m["alias"] if m and m["alias"] in MODELS else model


def model_info(model: str) -> ModelInfo | None:
    """The table's row for `model` (a dated snapshot has its alias's row), or None for an unknown id."""
    return MODELS.get(alias_of(model))


def output_limit(model: str) -> int | None:
    """The most output tokens `model` may be asked for, or None for a model not in the table (an
    `openai:MODEL` name: OpenAI's table, `judgecore.wire.providers`)."""
    if model.startswith("openai:"):
        row = openai_model(model.removeprefix("openai:"))
        return row.output_limit if row is not None else None
    info = model_info(model)
    return info.output_limit if info is not None else None


def price_for(model: str) -> ModelPrice | None:
    """The model's prices, or None where the table has none (a budget then cannot be kept). An
    `openai:MODEL` name is priced from OpenAI's table (`judgecore.wire.providers`): its cached input
    rate as the `cache_read` multiplier (OpenAI reports no cache writes; the batch half is the same).
    A `served:MODEL@URL` name is self-hosted: $0 for every token."""
    if model.startswith("served:"):
        return ModelPrice(0.0, 0.0, cache_read=0.0)
    if model.startswith("openai:"):
        rates = openai_price(model.removeprefix("openai:"), batch=False)
        if rates is None:
            return None
        cached = rates.cached_input_per_mtok
        ratio = 1.0 if cached is None or not rates.input_per_mtok else cached / rates.input_per_mtok
        return ModelPrice(rates.input_per_mtok, rates.output_per_mtok, cache_read=ratio)
    info = model_info(model)
    return info.price if info is not None else None


def max_tokens_problem(model: str, max_tokens: int) -> str | None:
    """Why `max_tokens` cannot be asked of `model` (a one-line reason naming the limit), or None."""
    if max_tokens < 1:
        return f"max_tokens must be >= 1, got {max_tokens}"
    if max_tokens > ABSURD_MAX_TOKENS:
        return f"max_tokens {max_tokens:,} is above {ABSURD_MAX_TOKENS:,}, more than any model answers"
    limit = output_limit(model)
    if limit is not None and max_tokens > limit:
        return f"max_tokens {max_tokens:,} is above {model}'s output limit of {limit:,} tokens"
    return None


def unknown_model_problem(model: str) -> str | None:
    """Why `model` is not an id judgecore knows (one line, with the nearest id it does know), or None
    for an id of the table (a dated snapshot of one included). A typo would otherwise cost a request
    and an exit 4; a model newer than the table is sent only when the user says so."""
    if model_info(model) is not None:
        return None

    near = closest(model, tuple(MODELS), cutoff=0.75)
    if near:
        return f"unknown model {model!r}; did you mean {near}?"
    return (
        f"unknown model {model!r}: judgecore judges with Anthropic's models (claude-..., listed in "
        "docs/knobs.md); other providers' models are not supported"
    )


# -- lifecycle ---------------------------------------------------------------------------------


@frozen
class Deprecated:
    """Still answered, until `retires`: a warning before anything is sent."""

    model: str
    retires: date
    replacement: str | None

    def __str__(self) -> str:
        move = f"; move to {self.replacement}" if self.replacement else ""
        return f"{self.model} is deprecated and retires on {self.retires.isoformat()}{move}"


@frozen
class Retired:
    """No longer answered (the API says 404): exit 2 before anything is sent."""

    model: str
    retired: date | None
    replacement: str | None

    def __str__(self) -> str:
        when = f" on {self.retired.isoformat()}" if self.retired else ""
        move = f"; use {self.replacement} instead" if self.replacement else ""
        return f"{self.model} was retired{when} and is no longer served{move}"


def standing(model: str, today: date) -> Deprecated | Retired | None:
    """Whether `model` is deprecated or retired on `today` (None: current, or unknown to the table)."""
    info = model_info(model)
    if info is None:
        return None
    life = info.lifecycle
    if life.status is Status.RETIRED or (life.retires is not None and today >= life.retires):
        return Retired(model, life.retires, life.replacement)
    if life.status is Status.DEPRECATED and life.retires is not None:
        return Deprecated(model, life.retires, life.replacement)
    return None


# -- thinking ----------------------------------------------------------------------------------


def thinks(model: str, thinking: Thinking | None) -> bool:
    """Whether requests to `model` with this `thinking` (None: omitted) spend thinking tokens."""
    if thinking is not None:
        return thinking.type != "disabled"
    info = model_info(model)
    return info is not None and info.thinking.by_default


def default_max_tokens(model: str, thinking: Thinking | None = None) -> int:
    """`max_tokens` when the job sets none: room for thinking where the model thinks (for a budget N,
    at least N plus the base answer room)."""
    if not thinks(model, thinking):
        return BASE_MAX_TOKENS
    budget = thinking.budget_tokens if thinking is not None and thinking.budget_tokens else 0
    return max(THINKING_MAX_TOKENS, budget + BASE_MAX_TOKENS)


def thinking_problem(model: str, thinking: Thinking, max_tokens: int) -> str | None:
    """Why `thinking` cannot be sent to `model` with `max_tokens` (one line), or None."""
    if thinking.type == "enabled":
        n = thinking.budget_tokens or 0
        if n < MIN_THINKING_BUDGET:
            return f"--thinking budget must be >= {MIN_THINKING_BUDGET:,} tokens, got {n:,}"
        if n >= max_tokens:
            return f"--thinking budget {n:,} must be below max_tokens ({max_tokens:,})"
    info = model_info(model)
    if info is not None and thinking.type not in info.thinking.accepts:
        takes = ", ".join(_FLAG[t] for t in sorted(info.thinking.accepts) if t in _FLAG) or "none"
        return f"{model} does not take --thinking {thinking} (thinking.type {thinking.type!r}); it takes: {takes}"
    return None


_FLAG = {"adaptive": "adaptive", "disabled": "off", "enabled": "N (a budget)"}


def thinking_room_problem(model: str, thinking: Thinking | None, max_tokens: int) -> str | None:
    """A warning where requests will think and `max_tokens` leaves little room for the answer."""
    if not thinks(model, thinking) or max_tokens >= MIN_THINKING_ROOM:
        return None
    why = "thinks by default" if thinking is None else f"thinks (--thinking {thinking})"
    return (
        f"{model} {why} and thinking tokens come out of max_tokens ({max_tokens:,}): answers may end "
        f"as max_tokens truncations; {THINKING_MAX_TOKENS:,} leaves room"
    )
