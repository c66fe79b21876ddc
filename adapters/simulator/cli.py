"""Command-line knobs for `judgecore simulator`: `add_arguments` declares them on a parser,
`scenario_from_args` turns the parsed namespace into a `Scenario`."""

from __future__ import annotations

import argparse
import math

from adapters.argtypes import finite_number, probability, seconds

from .latency import LATENCY_KINDS
from .openai_cli import add_openai_arguments, openai_from_args, self_preference_from_args
from .scenario import ACCOUNT_STATE_WHERE, ACCOUNT_STATES, REFUSAL_CATEGORIES, Scenario


def _shape(text: str) -> float:
    """An argparse type: a finite number > 0."""
    value = _number(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _number(text: str) -> float:
    return finite_number(text)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the simulator's options (port, host, seed, timing, limits, fault rates) on `parser`."""
    d = Scenario()
    g = parser.add_argument_group("simulator")
    g.add_argument("--host", default="127.0.0.1", help="address to listen on (default: %(default)s)")
    g.add_argument("--port", type=int, default=8765, help="port, 0 = any free (default: %(default)s)")
    g.add_argument("--seed", type=int, default=d.seed, help="seed for every draw (default: %(default)s)")
    g.add_argument(
        "--batch-seconds",
        type=seconds,
        default=d.batch_seconds,
        help="seconds from batch create to ended (default: %(default)s)",
    )
    g.add_argument(
        "--batch-latency",
        choices=LATENCY_KINDS,
        default=d.batch_latency,
        help="how each batch's latency is drawn, seeded by --seed and the batch id: fixed (every batch "
        "takes --batch-seconds), or lognormal / pareto with --batch-seconds as the median, a tail to "
        "--expires-after and beyond (those batches expire) (default: %(default)s)",
    )
    g.add_argument(
        "--batch-latency-shape",
        type=_shape,
        default=None,
        metavar="S",
        help="the spread of a drawn latency: lognormal sigma (default 1.2) or pareto alpha (default 1.1)",
    )
    g.add_argument(
        "--expires-after",
        type=seconds,
        default=d.expires_after,
        help="seconds from batch create to expires_at (default: %(default)s)",
    )
    g.add_argument(
        "--never-end", action="store_true", help="batches stay in_progress forever (unless canceled)"
    )
    g.add_argument("--rpm", type=int, default=None, help="requests per minute limit (default: none)")
    g.add_argument("--itpm", type=int, default=None, help="input tokens per minute limit")
    g.add_argument("--otpm", type=int, default=None, help="output tokens per minute limit")
    g.add_argument(
        "--advertised-otpm",
        type=int,
        default=d.advertised_otpm,
        help="output-tokens-limit header served when --otpm is not set (default: %(default)s)",
    )
    for name in ("429", "529", "500", "drop"):
        g.add_argument(
            f"--sync-{name}-rate",
            type=probability,
            default=0.0,
            metavar="P",
            help=f"probability that a POST /v1/messages gets a {name} fault",
        )
    g.add_argument(
        "--batch-error-rate",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of first-attempt batch requests that come back errored with api_error",
    )
    g.add_argument(
        "--batch-expired-rate",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of first-attempt batch requests that come back expired",
    )
    g.add_argument(
        "--score-weights",
        default="",
        metavar="V=W,...",
        help="weights of the scores the judge draws, e.g. 1=1,2=1,3=2,4=4,5=2 (default: uniform)",
    )
    g.add_argument(
        "--unparseable-rate",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of answers with no verdict in them (seeded per request)",
    )
    g.add_argument(
        "--out-of-range-rate",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of a structured answer's numbers that fall outside the bounds the schema's "
        "description states (seeded per request and field; the API cannot enforce them)",
    )
    g.add_argument(
        "--position-bias",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of pairwise answers that name the first position whatever the content; a pairwise "
        "prompt marks its answers as MT-Bench does, [The Start of Assistant A's Answer] ... (see "
        "docs/designs.md); the judge answers Winner: A, B or tie",
    )
    g.add_argument(
        "--sample-spread",
        type=probability,
        default=0.0,
        metavar="P",
        help="share of answers whose verdict is drawn afresh (seeded per request), so an item's "
        "--samples disagree",
    )
    g.add_argument(
        "--refusal-rate",
        type=probability,
        default=0.0,
        metavar="P",
        help='share of answers that are refusals (stop_reason "refusal", seeded per request)',
    )
    g.add_argument(
        "--refusal-category",
        choices=(*REFUSAL_CATEGORIES, "none"),
        default=d.refusal_category,
        help="the category a refusal's stop_details names (default: %(default)s)",
    )
    g.add_argument(
        "--refusal-partial",
        action="store_true",
        help="a refusal carries the first part of its answer (default: no content at all)",
    )
    g.add_argument(
        "--account-state",
        choices=tuple(ACCOUNT_STATES),
        default=None,
        help="refuse the account with this state (its error_code in error.details); default: none",
    )
    g.add_argument(
        "--account-state-where",
        default=",".join(sorted(ACCOUNT_STATE_WHERE)),
        metavar="WHERE,...",
        help="where --account-state answers: messages, creates, lines (default: %(default)s)",
    )
    g.add_argument(
        "--body-timeout-above",
        type=int,
        default=None,
        metavar="BYTES",
        help="a batch create with a larger body is a 400 request_body_timeout (default: never)",
    )
    g.add_argument(
        "--results-line-delay",
        type=seconds,
        default=d.results_line_delay,
        metavar="SECONDS",
        help=f"pause after every {d.results_chunk_lines} result lines",
    )
    g.add_argument(
        "--lazy-batches",
        action="store_true",
        help="keep batch requests on disk and make result lines as they are read: memory flat in a "
        "job of millions (answers drawn per request shape; for benches)",
    )
    add_openai_arguments(parser)


def scenario_from_args(ns: argparse.Namespace) -> Scenario:
    """The `Scenario` described by options declared with `add_arguments`."""
    sync_mix = {
        name: rate
        for name in ("429", "529", "500", "drop")
        if (rate := getattr(ns, f"sync_{name}_rate", 0.0))
    }
    if sum(sync_mix.values()) > 1:
        raise ValueError("the --sync-*-rate options must add up to at most 1")
    err, exp = ns.batch_error_rate, ns.batch_expired_rate
    if err + exp > 1:
        raise ValueError("--batch-error-rate plus --batch-expired-rate must be at most 1")
    batch_mix = {"succeeded": 1.0 - err - exp, "api_error": err, "expired": exp}
    weights: dict[str, float] = {}
    for pair in filter(None, (p.strip() for p in getattr(ns, "score_weights", "").split(","))):
        value, sep, weight = pair.partition("=")
        try:
            weights[value.strip()] = float(weight)
        except ValueError:
            raise ValueError(f"--score-weights: expected VALUE=WEIGHT, got {pair!r}") from None
        if not sep:
            raise ValueError(f"--score-weights: expected VALUE=WEIGHT, got {pair!r}")
        if not (math.isfinite(weights[value.strip()]) and weights[value.strip()] >= 0):
            raise ValueError(f"--score-weights: a weight must be a finite number >= 0, got {pair!r}")
    if not 0.0 <= getattr(ns, "unparseable_rate", 0.0) <= 1.0:
        raise ValueError("--unparseable-rate must be in 0..1")
    if not 0.0 <= getattr(ns, "out_of_range_rate", 0.0) <= 1.0:
        raise ValueError("--out-of-range-rate must be in 0..1")
    where = frozenset(w.strip() for w in ns.account_state_where.split(",") if w.strip())
    if not where <= ACCOUNT_STATE_WHERE:
        raise ValueError(f"--account-state-where: expected some of {', '.join(sorted(ACCOUNT_STATE_WHERE))}")
    if ns.body_timeout_above is not None and ns.body_timeout_above < 0:
        raise ValueError("--body-timeout-above must be >= 0")
    return Scenario(
        seed=ns.seed,
        batch_seconds=ns.batch_seconds,
        batch_latency=getattr(ns, "batch_latency", "fixed"),
        batch_latency_shape=getattr(ns, "batch_latency_shape", None),
        expires_after=ns.expires_after,
        never_end=ns.never_end,
        rpm_limit=ns.rpm,
        itpm_limit=ns.itpm,
        otpm_limit=ns.otpm,
        advertised_otpm=ns.advertised_otpm,
        sync_fault_mix=sync_mix,
        batch_mix={k: v for k, v in batch_mix.items() if v > 0} or {"succeeded": 1.0},
        results_line_delay=ns.results_line_delay,
        lazy_batches=getattr(ns, "lazy_batches", False),
        score_weights=weights,
        unparseable_rate=getattr(ns, "unparseable_rate", 0.0),
        out_of_range_rate=getattr(ns, "out_of_range_rate", 0.0),
        position_bias=getattr(ns, "position_bias", 0.0),
        sample_spread=getattr(ns, "sample_spread", 0.0),
        refusal_rate=getattr(ns, "refusal_rate", 0.0),
        refusal_category=None if ns.refusal_category == "none" else ns.refusal_category,
        refusal_partial=ns.refusal_partial,
        account_state=ns.account_state,
        account_state_where=where,
        body_timeout_above=ns.body_timeout_above,
        create_stall_seconds=getattr(ns, "create_stall_seconds", 30.0),
        self_preference=self_preference_from_args(ns),
        openai=openai_from_args(ns),
    )
