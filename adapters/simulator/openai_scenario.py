"""The OpenAI side's knobs (`OpenAIScenario`, the `openai` field of `Scenario`) and its model tables.

The knobs that describe the simulated world as a whole live on `Scenario` and apply on both wires: the
seed, the judge's answers (`score_weights`, `unparseable_rate`, `refusal_rate`, `self_preference`),
batch timing (`batch_seconds`, `expires_after`, `cancel_seconds`, `never_end`), batch outcome mixes
(`batch_mix`, `batch_retry_mix`, `batch_failures`), result pacing and cuts (`results_*`), retry hints
(`retry_after`, `send_retry_after_ms`, `max_retry_after_ms`, `error_retry_after_ms`), the held
create's stall (`create_stall_seconds`), the prompt-cache minimum and the keys accepted. The knobs here
are the OpenAI wire's own: its models, its call-numbered fault schedules (counted per endpoint, apart
from the Anthropic side's), its rate limits, its batch validation limits, and the served (vLLM) mode.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Final

import attrs

from judgecore.values import frozen

from .schedule import schedule

#: Chat models the simulated OpenAI API serves: the text models the `openai` SDK (3.60,
#: `types/shared/chat_model.py`) lists whose announced shutdown is not before 2026-12-03 (the audio,
#: search and codex ids and the `*-chat-latest` aliases left out). Any other id is a 404
#: `model_not_found`.
OPENAI_MODELS: Final = frozenset(
    {
        "gpt-6-astra", "gpt-6.2-astra", "gpt-6.1-sol", "gpt-6.2-sol", "gpt-6.1-terra", "gpt-6-sol",
        "gpt-6-luna", "gpt-5.6-sol", "gpt-5.6-terra", "gpt-5.6-luna", "gpt-5.5", "gpt-5.5-2026-04-23",
        "gpt-5.4", "gpt-5.4-mini", "gpt-5.4-nano", "gpt-5.4-mini-2026-03-17", "gpt-5.4-nano-2026-03-17",
        "gpt-5.2", "gpt-5.2-2025-12-11", "gpt-5.2-pro", "gpt-5.2-pro-2025-12-11", "gpt-5.1",
        "gpt-5.1-2025-11-13", "gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-5-2025-08-07",
        "gpt-5-mini-2025-08-07", "gpt-5-nano-2025-08-07", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano",
        "gpt-4.1-2025-04-14", "gpt-4.1-mini-2025-04-14", "gpt-4.1-nano-2025-04-14", "o4-mini",
        "o4-mini-2025-04-16", "o3", "o3-2025-04-16", "o3-mini", "o3-mini-2025-01-31", "o1", "o1-2024-12-17",
        "gpt-4o", "gpt-4o-2024-11-20", "gpt-4o-2024-08-06", "gpt-4o-mini", "gpt-4o-mini-2024-07-18",
        "gpt-4-turbo", "gpt-4-turbo-2024-04-09", "gpt-3.5-turbo", "gpt-3.5-turbo-0125",
    }
)  # fmt: skip

#: Models a vLLM-like server serves in the default scenario (`served_models`).
SERVED_MODELS: Final = frozenset({"Qwen/Qwen3-32B", "meta-llama/Llama-3.3-70B-Instruct"})

_REASONING: Final = re.compile(r"^(gpt-5(?!-chat)|gpt-6|o\d)")


def is_reasoning_model(model: str) -> bool:
    """gpt-5, gpt-6 and the o-series: they refuse `max_tokens` and any `temperature` but 1."""
    return bool(_REASONING.match(model))


#: Context windows (tokens) of the simulated models: gpt-4.1 1,047,576; gpt-5 and later 400,000;
#: the o-series 200,000; gpt-4o and older 128,000 (16,385 for gpt-3.5-turbo).
def context_window(model: str) -> int:
    if model.startswith("gpt-4.1"):
        return 1_047_576
    if model.startswith(("gpt-5", "gpt-6")):
        return 400_000
    if re.match(r"^o\d", model):
        return 200_000
    if model.startswith("gpt-3.5"):
        return 16_385
    return 128_000


#: Faults a `POST /v1/chat/completions` can be given (`chat_faults`, `chat_fault_mix`):
#: 429 a rate limit (with reset headers), 500, 503, a dropped connection, 429 `insufficient_quota`.
CHAT_FAULTS: Final = ("429", "500", "503", "drop", "insufficient_quota")

#: Faults a `POST /v1/batches` or `POST /v1/files` can be given, keyed by call number (as the
#: Anthropic side's `create_faults`): `persist_then_*` keep the batch or file, then lose the answer;
#: `stall` holds the call `create_stall_seconds` and drops it with nothing made (a crash test kills
#: the client while it waits: before the upload or the create took effect).
CREATE_FAULTS: Final = (
    "500",
    "429",
    "drop",
    "stall",
    "persist_then_500",
    "persist_then_drop",
    "persist_then_stall",
)

#: What `batch_fail` makes a batch's validation fail with (an errors.data[] code), the enqueued-token
#: limit aside (`enqueued_token_limit`).
BATCH_FAIL_CODES: Final = ("token_limit_exceeded", "invalid_request")


def _weights(value: Mapping[str, float] | Iterable[tuple[str, float]]) -> tuple[tuple[str, float], ...]:
    pairs = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted((str(k), float(v)) for k, v in pairs))


def _names(allowed: tuple[str, ...]) -> object:
    def check(_inst: object, attribute: attrs.Attribute, value: tuple[tuple[object, object], ...]) -> None:
        for a, b in value:
            name = b if isinstance(a, int) else a
            if name not in allowed:
                raise ValueError(f"{attribute.name}: unknown name {name!r}; expected one of {allowed}")

    return check


def _optional_positive(_inst: object, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value > 0):
        raise ValueError(f"{attribute.name} must be a finite number > 0, got {value}")


def _non_negative(_inst: object, attribute: attrs.Attribute, value: float | None) -> None:
    if value is not None and not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{attribute.name} must be a finite number >= 0, got {value}")


@frozen(kw_only=True)
class OpenAIScenario:
    """How the simulated OpenAI API (and a vLLM-like server) behaves; defaults: healthy, fast, generous."""

    models: frozenset[str] = attrs.field(default=OPENAI_MODELS, converter=frozenset)

    # --- chat completions -------------------------------------------------------------------------
    #: Faults on `POST /v1/chat/completions`, keyed by the 1-based number of that call (retries count).
    chat_faults: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_names(CHAT_FAULTS)
    )
    #: Probability of each fault per chat call (seeded by the call number).
    chat_fault_mix: tuple[tuple[str, float], ...] = attrs.field(
        default=(), converter=_weights, validator=_names(CHAT_FAULTS)
    )
    #: Share of answers (seeded by content) that finish with `content_filter` (content null).
    content_filter_rate: float = attrs.field(default=0.0, validator=_non_negative)
    #: Per-minute limits (None: not enforced); the headers then advertise `advertised_rpm`/`_tpm`.
    rpm_limit: int | None = attrs.field(default=None, validator=_optional_positive)
    tpm_limit: int | None = attrs.field(default=None, validator=_optional_positive)
    advertised_rpm: int = 30_000
    advertised_tpm: int = 150_000_000

    # --- files and batches ------------------------------------------------------------------------
    #: Faults on `POST /v1/batches` and on `POST /v1/files`, keyed by the 1-based call number.
    create_faults: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_names(CREATE_FAULTS)
    )
    upload_faults: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_names(CREATE_FAULTS)
    )
    #: Seconds a batch stays `validating`, and `finalizing` after its work is done.
    validating_seconds: float = attrs.field(default=0.0, validator=_non_negative)
    finalizing_seconds: float = attrs.field(default=0.0, validator=_non_negative)
    max_file_lines: int = 50_000
    max_file_bytes: int = 200_000_000
    #: Prompt tokens a model's live batches may hold (validating, in_progress, finalizing); a batch
    #: that would exceed it fails validation with `token_limit_exceeded` after its create succeeded.
    enqueued_token_limit: int | None = attrs.field(default=None, validator=_optional_positive)
    #: Batches (1-based creation numbers) that fail validation whatever their file says, with this code.
    batch_fail: tuple[tuple[int, str], ...] = attrs.field(
        default=(), converter=schedule, validator=_names(BATCH_FAIL_CODES)
    )

    # --- served mode (vLLM) -----------------------------------------------------------------------
    #: Models answered as a vLLM server answers: no rate-limit headers, vLLM's error body (integer
    #: `code`), its context-overflow wordings, its queue; no Files or Batches for them.
    served_models: frozenset[str] = attrs.field(default=SERVED_MODELS, converter=frozenset)
    #: The served model's context window (tokens).
    served_context: int = 32_768
    #: Requests the server runs at its floor latency; above, each waits its turn (latency climbs).
    served_slots: int = 64
    #: Seconds a served answer takes at the floor (the HTTP server holds the answer that long).
    served_latency: float = attrs.field(default=0.0, validator=_non_negative)
    #: Requests that may wait beyond the slots (vLLM's `--max-num-queued-reqs`); more are a 503.
    #: None: unbounded, as vLLM's default (nothing refused, latency climbs).
    served_max_queued: int | None = None
    #: The key a served model requires (vLLM's `--api-key`); None: any key, or none.
    served_api_key: str | None = None


#: Model families, for `self_preference`: a model id's family is `claude` (claude-*), `gpt` (gpt-*,
#: chatgpt-*, the o-series), else the leading letters of its last path part (`Qwen/Qwen3-32B` -> qwen).
def family_of(model: str) -> str:
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith("claude"):
        return "claude"
    if name.startswith(("gpt", "chatgpt")) or re.match(r"^o\d", name):
        return "gpt"
    m = re.match(r"[a-z]+", name)
    return m.group(0) if m else name
