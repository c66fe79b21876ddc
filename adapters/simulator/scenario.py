"""The `Scenario`: every knob of the simulator, as one frozen value.

A scenario says how the simulated API behaves (latency of batches, outcome mixes, faults, rate limits,
prompt-cache rules, accepted keys and models). Its defaults describe a healthy, fast API with no limits.
Mappings are normalised to sorted tuples of pairs so the value stays hashable; read them with `dict(...)`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from judgecore.values import frozen

from .latency import LATENCY_KINDS
from .openai_scenario import OpenAIScenario
from .schedule import schedule

#: Outcomes a batch request can be given by `batch_mix` / `batch_retry_mix` or by a marker.
BATCH_OUTCOMES: Final = (
    "succeeded",
    "max_tokens",
    "invalid_request",
    "context_overflow",
    "api_error",
    "overloaded_error",
    "rate_limit_error",
    "canceled",
    "expired",
    "refusal",
)

#: Faults a synchronous `POST /v1/messages` can be given by `sync_fault_mix` / `sync_faults`
#: ("ramp": a 429 `ramp_limit_exceeded`, with retry-after).
SYNC_FAULTS: Final = ("429", "529", "500", "drop", "ramp")

#: Account states the simulator can answer with (`account_state`): name -> (error type, error_code,
#: message). The error type sets the status (400, 429, 402); `spend_limit` is the 400 a spend limit you
#: set answers, which the API sends with no error_code, only its words.
ACCOUNT_STATES: Final = {
    "organization_on_hold": (
        "invalid_request_error",
        "organization_on_hold",
        "This organization has been disabled.",
    ),
    "spend_limit": (
        "invalid_request_error",
        None,
        "You have reached your specified API usage limits. You will regain access on 2027-01-01 at 00:00 UTC.",
    ),
    "enforced_spend_limit_reached": (
        "rate_limit_error",
        "enforced_spend_limit_reached",
        "Your organization has reached its monthly usage limit. Access resumes on 2027-01-01 at 00:00 UTC.",
    ),
    "contract_spend_limit_reached": (
        "rate_limit_error",
        "contract_spend_limit_reached",
        "Your organization has reached the spend limit of its contract.",
    ),
    "linked_organization_spend_limit_reached": (
        "billing_error",
        "linked_organization_spend_limit_reached",
        "The linked organization has reached its spend limit.",
    ),
    "linked_organization_billing_unavailable": (
        "billing_error",
        "linked_organization_billing_unavailable",
        "Billing is unavailable for the linked organization.",
    ),
}

#: Where an `account_state` answers: sync messages, batch creates, the lines of batches that end.
ACCOUNT_STATE_WHERE: Final = frozenset({"messages", "creates", "lines"})

#: Refusal categories the API names (`anthropic/types/refusal_stop_details.py`); None names none.
REFUSAL_CATEGORIES: Final = ("cyber", "bio", "frontier_llm", "reasoning_extraction", "general_harms")

#: Faults a `POST /v1/messages/batches` can be given by `create_faults`.
CREATE_FAULTS: Final = (
    "500",
    "429",
    "drop",
    "persist_then_500",
    "persist_then_drop",
    "persist_then_stall",
)

#: How each model the simulated API serves thinks, as the API docs say (thinking-troubleshooting page,
#: each model's "what's new"): whether it thinks when `thinking` is omitted, and the `thinking.type`
#: values it takes (any other is a 400). Written from the docs, apart from judgecore's own table.
MODEL_THINKING: Final[Mapping[str, tuple[bool, frozenset[str]]]] = {
    **dict.fromkeys(
        ("claude-fable-5-2", "claude-mythos-5-2", "claude-fable-5-1", "claude-mythos-5-1", "claude-fable-5",
         "claude-mythos-5", "claude-opus-5-5"),
        (True, frozenset({"adaptive"})),
    ),
    "claude-sonnet-5-5": (True, frozenset({"adaptive", "between_tools"})),
    **dict.fromkeys(
        ("claude-haiku-5-5", "claude-sonnet-5", "claude-opus-5"), (True, frozenset({"adaptive", "disabled"}))
    ),
    **dict.fromkeys(("claude-opus-4-8", "claude-opus-4-7"), (False, frozenset({"adaptive", "disabled"}))),
    **dict.fromkeys(
        ("claude-opus-4-6", "claude-sonnet-4-6"), (False, frozenset({"adaptive", "enabled", "disabled"}))
    ),
    **dict.fromkeys(
        ("claude-haiku-4-5", "claude-haiku-4-5-20251001", "claude-opus-4-5", "claude-opus-4-5-20251101"),
        (False, frozenset({"enabled", "disabled"})),
    ),
}  # fmt: skip

#: The models served: those the SDK (anthropic 2.14, `types/model.py`) lists that are not retired on
#: 2026-12-01 (Mythos Preview retired 2026-06-30, Sonnet 4.5 on 2026-11-30; the 4.0, 4.1 and 3.x ids
#: earlier). Any other id is a 404 `not_found_error`, as the API answers a retired or unknown model.
DEFAULT_MODELS: Final = frozenset(MODEL_THINKING)


def _weights(value: Mapping[str, float] | Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    pairs = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), float(v)) for k, v in pairs))


def _check_names(allowed: tuple[str, ...]) -> object:
    def check(_inst: object, attribute: attrs.Attribute, value: tuple[tuple[object, str], ...]) -> None:
        for pair in value:
            name = pair[1] if isinstance(pair[0], int) else pair[0]
            if name not in allowed:
                raise ValueError(f"{attribute.name}: unknown name {name!r}; expected one of {allowed}")

    return check


def _non_negative(_inst: object, attribute: attrs.Attribute, value: float | None) -> None:
    """A finite number >= 0 (`not value >= 0` also catches NaN, which compares false to everything)."""
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value}")


def _positive(_inst: object, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value}")


def _probability(_inst: object, attribute: attrs.Attribute, value: float) -> None:
    if not 0.0 <= value <= 1.0:  # false for NaN too
        raise ValueError(f"{attribute.name} must be in 0..1, got {value}")


def _non_negative_weights(
    _inst: object, attribute: attrs.Attribute, value: tuple[tuple[str, float], ...]
) -> None:
    for name, weight in value:
        if not (math.isfinite(weight) and weight >= 0):
            raise ValueError(
                f"{attribute.name}: weight of {name!r} must be a finite number >= 0, got {weight}"
            )


def _shares(value: tuple[tuple[str, float], ...]) -> None:
    for name, share in value:
        if not 0.0 <= share <= 1.0:
            raise ValueError(f"self_preference: the share of {name!r} must be in 0..1, got {share}")


@frozen(kw_only=True)
class Scenario:
    """How the simulated API behaves. Every field has a default; change one with `attrs.evolve`."""

    seed: int = 0

    # --- batches -------------------------------------------------------------------------------
    #: Seconds from create to `ended` (results are computed then); with a drawn `batch_latency`, the
    #: median of the draws.
    batch_seconds: float = attrs.field(default=2.0, validator=_non_negative)
    #: How each batch's latency is drawn (`latency.LATENCY_KINDS`: fixed, lognormal, pareto), seeded by
    #: the seed and the batch id; `batch_latency_shape` is the spread (None: the kind's default).
    batch_latency: str = attrs.field(default="fixed", validator=attrs.validators.in_(LATENCY_KINDS))
    batch_latency_shape: float | None = attrs.field(default=None, validator=_positive)
    #: Seconds from create to `expires_at` (the real API: 86400). Work not done by then is `expired`.
    expires_after: float = attrs.field(default=86_400.0, validator=_non_negative)
    #: Seconds from a cancel to `ended` (requests not processed at the cancel are `canceled`).
    cancel_seconds: float = attrs.field(default=0.2, validator=_non_negative)
    #: Batches never end on their own, not even past `expires_at` (a cancel still ends them).
    never_end: bool = False
    #: Outcome weights for a custom_id's first submission, and for its later submissions.
    batch_mix: tuple[tuple[str, float], ...] = attrs.field(
        default=(("succeeded", 1.0),),
        converter=_weights,
        validator=[_check_names(BATCH_OUTCOMES), _non_negative_weights],
    )
    batch_retry_mix: tuple[tuple[str, float], ...] = attrs.field(
        default=(("succeeded", 1.0),),
        converter=_weights,
        validator=[_check_names(BATCH_OUTCOMES), _non_negative_weights],
    )
    #: Each custom_id's first `batch_failures` submissions answer `api_error` (then the mixes apply).
    batch_failures: int = 0
    max_batch_bytes: int = 256_000_000
    max_batch_requests: int = 100_000
    #: Faults on `POST /v1/messages/batches`, keyed by the 1-based number of that call.
    create_faults: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_check_names(CREATE_FAULTS)
    )
    #: Seconds a `persist_then_stall` create holds its connection before dropping it (the batch exists
    #: from the start: a client killed meanwhile never learns its id)
    create_stall_seconds: float = attrs.field(default=30.0, validator=_non_negative)
    #: The first fetch of each batch's results is cut (connection dropped) after this many lines.
    results_drop_after_lines: int | None = None
    #: Result streaming pace: sleep `results_line_delay` seconds after every `results_chunk_lines`
    #: lines (the HTTP server sleeps; the in-process transport only chunks).
    results_chunk_lines: int = 200
    results_line_delay: float = attrs.field(default=0.0, validator=_non_negative)
    #: Keep each batch's requests on disk and make its result lines as they are read (lazy.py): memory
    #: flat in the batch and the job, for benches of large jobs. Its answers are drawn per request shape
    #: (custom_id and seed pick one of 64), its prompt cache is per fetch, and `billed` lists none of them.
    lazy_batches: bool = False

    # --- synchronous messages -------------------------------------------------------------------
    #: Probability of each fault per `POST /v1/messages` (seeded by the request number).
    sync_fault_mix: tuple[tuple[str, float], ...] = attrs.field(
        default=(), converter=_weights, validator=[_check_names(SYNC_FAULTS), _non_negative_weights]
    )
    #: Faults on `POST /v1/messages`, keyed by the 1-based number of that call (retries count).
    sync_faults: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_check_names(SYNC_FAULTS)
    )
    #: The `retry-after` hint on simulated 429s (seconds; served as an integer ceiling).
    retry_after: float = attrs.field(default=1.0, validator=_non_negative)
    #: Also send `retry-after-ms` (exact) so SDK retries stay fast; the real API sends only seconds.
    send_retry_after_ms: bool = True
    #: If set, simulated 500/529 answers carry `retry-after-ms` with this value, so SDK retries of
    #: server errors are fast in tests (the real API sends no hint there; the SDK then backs off 0.5-8 s).
    error_retry_after_ms: float | None = attrs.field(default=None, validator=_non_negative)
    #: Cap on `retry-after-ms` (so tests never wait long even when a bucket is far below zero).
    max_retry_after_ms: float | None = attrs.field(default=50.0, validator=_non_negative)

    # --- rate limits (per minute; None = not enforced) -----------------------------------------
    rpm_limit: int | None = None
    itpm_limit: int | None = None
    otpm_limit: int | None = None
    #: The tier advertised in `anthropic-ratelimit-output-tokens-limit` when `otpm_limit` is None.
    advertised_otpm: int = 400_000
    #: Send the `anthropic-ratelimit-*` headers (False: a proxy that strips them; no tier can be read).
    ratelimit_headers: bool = True

    # --- the judge's answers (see answers.answer) ----------------------------------------------
    #: Weights of the score values a judge draws (value as text -> weight), where they name any of the
    #: candidates (the rubric's scale or labels, or a schema property's range or enum); uniform otherwise.
    score_weights: tuple[tuple[str, float], ...] = attrs.field(
        default=(), converter=_weights, validator=_non_negative_weights
    )
    #: Share of requests (by content, seeded) answered with no verdict in the text at all.
    unparseable_rate: float = attrs.field(default=0.0, validator=_probability)
    #: Share of a structured answer's numbers (by content and field, seeded) that fall just outside
    #: the bounds the schema's description states: the API enforces only the subset it accepts, so a
    #: model may miss a bound the SDK's transform moved into a description.
    out_of_range_rate: float = attrs.field(default=0.0, validator=_probability)
    #: Judge designs (see designs.py): the share of pairwise answers that name the first position
    #: whatever the content, and the share of answers whose verdict is drawn afresh (samples disagree).
    position_bias: float = attrs.field(default=0.0, validator=_probability)
    sample_spread: float = attrs.field(default=0.0, validator=_probability)
    #: Self-preference (see selfpref.py): a model id or family (`claude`, `gpt`, `qwen`) -> the share
    #: of its answers on its own family's items (the prompt names the family) that give the best
    #: verdict. Both wires.
    self_preference: tuple[tuple[str, float], ...] = attrs.field(
        default=(), converter=_weights, validator=[_non_negative_weights, lambda _i, _a, v: _shares(v)]
    )

    # --- today's API: refusals, account states, slow bodies -----------------------------------
    #: Share of answers (by content, seeded) that are refusals: `stop_reason: "refusal"`, with
    #: `stop_details` naming `refusal_category`, on both routes (a `[[sim:refusal]]` marker forces one).
    refusal_rate: float = attrs.field(default=0.0, validator=_probability)
    refusal_category: str | None = attrs.field(
        default="cyber", validator=attrs.validators.optional(attrs.validators.in_(REFUSAL_CATEGORIES))
    )
    #: A refusal carries the first part of the answer it would have given (else no content at all).
    refusal_partial: bool = False
    #: The API refuses the account (a name of `ACCOUNT_STATES`) where `account_state_where` says, with
    #: its error_code in `error.details`. Change it at runtime (`Simulator.scenario = evolve(...)`) to
    #: fix the account between runs.
    account_state: str | None = attrs.field(
        default=None, validator=attrs.validators.optional(attrs.validators.in_(tuple(ACCOUNT_STATES)))
    )
    account_state_where: frozenset[str] = attrs.field(
        default=ACCOUNT_STATE_WHERE,
        converter=frozenset,
        validator=attrs.validators.deep_iterable(attrs.validators.in_(ACCOUNT_STATE_WHERE)),
    )
    #: A batch create whose body is larger than this many bytes is a 400 `request_body_timeout` (the body
    #: did not arrive in time); None: never.
    body_timeout_above: int | None = attrs.field(default=None, validator=_non_negative)

    # --- prompt cache ------------------------------------------------------------------------------
    min_cacheable_tokens: int = 1024

    # --- identity ------------------------------------------------------------------------------------
    models: frozenset[str] = attrs.field(default=DEFAULT_MODELS, converter=frozenset)
    #: Accepted keys; None accepts any non-empty key. "sk-bad" is always rejected.
    valid_keys: frozenset[str] | None = attrs.field(
        default=None, converter=attrs.converters.optional(frozenset)
    )
    reject_all_keys: bool = False

    # --- the OpenAI wire (Chat Completions, Files, Batches) and served (vLLM) mode -----------------
    openai: OpenAIScenario = attrs.field(factory=OpenAIScenario)
