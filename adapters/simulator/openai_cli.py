"""`judgecore simulator` options for the OpenAI wire, served (vLLM-like) models and self-preference:
`add_openai_arguments` declares them, `openai_from_args` reads them back (see openai_scenario.py)."""

from __future__ import annotations

import argparse
import math

from adapters.argtypes import probability, seconds

from .openai_scenario import SERVED_MODELS, OpenAIScenario


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a whole number > 0, got {text!r}")
    return value


def add_openai_arguments(parser: argparse.ArgumentParser) -> None:
    d = OpenAIScenario()
    g = parser.add_argument_group(
        "OpenAI wire (POST /v1/chat/completions, /v1/files, /v1/batches on the same port; "
        "point OPENAI_BASE_URL at BASE/v1)"
    )
    for name, what in (
        ("429", "a 429 rate_limit_exceeded with x-ratelimit-* and retry-after-ms headers"),
        ("500", "a 500 server_error"),
        ("503", "a 503 (engine overloaded)"),
        ("drop", "a dropped connection"),
        ("insufficient-quota", "a 429 insufficient_quota (an account state: waiting does not help)"),
    ):
        g.add_argument(f"--openai-{name}-rate", type=probability, default=0.0, metavar="P",
                       help=f"probability that a chat completion gets {what}")  # fmt: skip
    g.add_argument("--openai-content-filter-rate", type=probability, default=0.0, metavar="P",
                   help='share of answers that finish with "content_filter" (content null; seeded per request)')  # fmt: skip
    g.add_argument(
        "--openai-rpm", type=_positive_int, default=None, help="requests-per-minute limit (default: none)"
    )
    g.add_argument("--openai-tpm", type=_positive_int, default=None,
                   help="tokens-per-minute limit; a request costs its prompt plus max_completion_tokens (default: none)")  # fmt: skip
    g.add_argument("--openai-enqueued-token-limit", type=_positive_int, default=None, metavar="TOKENS",
                   help="prompt tokens a model's live batches may hold; a batch past it is created, then fails "
                   "validation with token_limit_exceeded (default: none)")  # fmt: skip
    g.add_argument("--openai-validating-seconds", type=seconds, default=d.validating_seconds, metavar="S",
                   help="seconds a batch stays validating (default: %(default)s)")  # fmt: skip
    g.add_argument("--openai-finalizing-seconds", type=seconds, default=d.finalizing_seconds, metavar="S",
                   help="seconds a batch stays finalizing (default: %(default)s)")  # fmt: skip
    g.add_argument("--openai-max-file-lines", type=_positive_int, default=d.max_file_lines, metavar="N",
                   help="lines a batch input file may hold; more fail validation (default: %(default)s)")  # fmt: skip
    g.add_argument("--openai-max-file-bytes", type=_positive_int, default=d.max_file_bytes, metavar="BYTES",
                   help="bytes a batch input file may hold; more fail validation (default: %(default)s)")  # fmt: skip
    g.add_argument("--openai-hold-create", type=_positive_int, action="append", default=[], metavar="N",
                   help="the Nth POST /v1/batches creates its batch, then holds the connection "
                   "--create-stall-seconds and drops it (for crash tests); repeatable")  # fmt: skip
    g.add_argument("--openai-hold-upload", type=_positive_int, action="append", default=[], metavar="N",
                   help="the Nth POST /v1/files stores its file, then holds and drops the connection; repeatable")  # fmt: skip
    g.add_argument("--create-stall-seconds", type=seconds, default=30.0, metavar="S",
                   help="how long a held create or upload holds its connection (default: %(default)s)")  # fmt: skip
    s = parser.add_argument_group(
        "served models (answered as a vLLM server answers: no rate-limit headers, vLLM's error body with an "
        "integer code, its context-overflow wordings, its queue; chat completions only)"
    )
    s.add_argument("--served-model", action="append", default=None, metavar="NAME",
                   help=f"a model to serve vLLM-style; repeatable (default: {', '.join(sorted(SERVED_MODELS))})")  # fmt: skip
    s.add_argument("--served-context", type=_positive_int, default=d.served_context, metavar="TOKENS",
                   help="the served model's context window (default: %(default)s)")  # fmt: skip
    s.add_argument("--served-slots", type=_positive_int, default=d.served_slots, metavar="N",
                   help="requests served at the floor latency; past them latency climbs with the queue "
                   "(default: %(default)s)")  # fmt: skip
    s.add_argument("--served-latency", type=seconds, default=d.served_latency, metavar="S",
                   help="seconds an answer takes at the floor (default: %(default)s)")  # fmt: skip
    s.add_argument("--served-max-queued", type=int, default=None, metavar="N",
                   help="requests that may wait beyond the slots (vLLM's --max-num-queued-reqs); more are a "
                   "503 (default: unbounded, as vLLM's default)")  # fmt: skip
    s.add_argument("--served-api-key", default=None, metavar="KEY",
                   help="the key served models require (vLLM's --api-key; default: none)")  # fmt: skip
    parser.add_argument_group("judges").add_argument(
        "--self-preference", action="append", default=[], metavar="FAMILY=P",
        help="a judge whose model or family (claude, gpt, qwen, ...) is named favours its own family: on items "
        "whose prompt names that family (e.g. metadata 'Model: gpt-4o'), a share P of its answers give the "
        "best verdict (top of the scale, or the first label); repeatable, both wires",
    )  # fmt: skip


def openai_from_args(ns: argparse.Namespace) -> OpenAIScenario:
    mix = {
        name: rate
        for name in ("429", "500", "503", "drop", "insufficient_quota")
        if (rate := getattr(ns, f"openai_{name}probability", 0.0))
    }
    if sum(mix.values()) > 1:
        raise ValueError("the --openai-*-rate fault options must add up to at most 1")
    if ns.served_max_queued is not None and ns.served_max_queued < 0:
        raise ValueError("--served-max-queued must be >= 0")
    held = {n: "persist_then_stall" for n in ns.openai_hold_create}
    return OpenAIScenario(
        chat_fault_mix=mix,
        content_filter_rate=ns.openai_content_filter_rate,
        rpm_limit=ns.openai_rpm,
        tpm_limit=ns.openai_tpm,
        enqueued_token_limit=ns.openai_enqueued_token_limit,
        validating_seconds=ns.openai_validating_seconds,
        finalizing_seconds=ns.openai_finalizing_seconds,
        max_file_lines=ns.openai_max_file_lines,
        max_file_bytes=ns.openai_max_file_bytes,
        create_faults=held,
        upload_faults={n: "persist_then_stall" for n in ns.openai_hold_upload},
        served_models=frozenset(ns.served_model) if ns.served_model else SERVED_MODELS,
        served_context=ns.served_context,
        served_slots=ns.served_slots,
        served_latency=ns.served_latency,
        served_max_queued=ns.served_max_queued,
        served_api_key=ns.served_api_key,
    )


def self_preference_from_args(ns: argparse.Namespace) -> dict[str, float]:
    out: dict[str, float] = {}
    for pair in ns.self_preference:
        name, sep, share = pair.partition("=")
        try:
            value = float(share)
        except ValueError:
            value = math.nan
        if not sep or not name.strip() or not 0.0 <= value <= 1.0:
            raise ValueError(f"--self-preference: expected FAMILY=P with P in 0..1, got {pair!r}")
        out[name.strip()] = value
    return out
