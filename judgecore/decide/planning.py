"""The job's plan, and the dry-run plan: what a run would send, where, in how many sub-batches, at what cost.

`plan_job` builds, once per run, everything a job sends whatever its route: every request (custom_id,
serialized messages, exact size in a batch create body) and each route's template (they differ only in
the rubric's cache marker). A request too large for any sub-batch is found there, before anything is
sent. `plan` is the dry run's report of it: the route, the sub-batches of what is left to send, and
the estimated cost.

Token counts are estimated without any API call (UTF-8 bytes / 4, rounded up), answers at
`EXPECTED_OUTPUT_TOKENS` (never over `max_tokens`), and the cost from a small price table. The
estimate learns (`Learned`): once the checkpoint holds answers, their mean output tokens replace the
expected figure and their mean input tokens per request scale the bytes-based input estimate; before
any answer, one prompt's real token count (`count_tokens`, when the user asks for it) scales it.
The prices: batch requests at half price; rubric cache writes at 1.25x the input price for the
5-minute TTL (sync) or 2x for the 1-hour TTL (batch); cache reads at the model's multiplier (0.1x
for most; `judgecore.wire.models`, where each model's prices come from). On the sync path the first
request writes the cache and the rest read it; in a batch, each sub-batch is assumed to write it once
(hits in batches are best-effort, so this is a floor on the cost, not a promise).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from itertools import repeat
from operator import add, floordiv
from typing import Any

import attrs
import orjson

from judgecore.decide.prices import (
    BATCH_DISCOUNT,
    CACHE_WRITE,
    DEFAULT_MIN_CACHEABLE,
    DEFAULT_PRICES,
    MIN_CACHEABLE_TOKENS,
    TTL,
)
from judgecore.decide.resume import JobState
from judgecore.decide.routing import Route
from judgecore.decide.spend import request_bound
from judgecore.job.errors import RequestTooLargeError
from judgecore.job.items import Item, Items, RoutePath
from judgecore.results.status import Usage
from judgecore.values import frozen
from judgecore.wire.chunking import ENVELOPE_BYTES, SubBatch
from judgecore.wire.models import ModelPrice, Thinking, alias_of, model_info, price_for, thinks
from judgecore.wire.requests import Request, Requests, RequestTemplate, build_requests


@frozen(kw_only=True)
class JobPlan:
    """What a job sends, computed once: its items, one request per item (input order), and the
    template of each route. A request's `size` is its bytes in a batch create body; the sync path
    sends the same request through `sync_template` and never reads the size. The requests hold no
    messages, and a run's items none either (`without_messages`): the shell keeps them."""

    items: Items
    requests: Requests
    sync_template: RequestTemplate
    batch_template: RequestTemplate

    def template(self, path: RoutePath) -> RequestTemplate:
        return self.sync_template if path == "sync" else self.batch_template

    def without_messages(self) -> JobPlan:
        """The same job, its items not holding their messages (the requests never do): what a run
        keeps once the shell has them elsewhere (the input file, the checkpoint)."""
        items = self.items.without_messages()
        return self if items is self.items else attrs.evolve(self, items=items)

    def finished(self, state: JobState) -> bool:
        """Every item final and no batch of the job still live: a run has nothing to send or poll."""
        final = state.final
        return not state.in_flight and all(c in final for c in self.requests.custom_ids)


def request_templates(
    *,
    model: str,
    max_tokens: int,
    rubric: str | None,
    output_config: Mapping[str, Any] | None = None,
    thinking: Thinking | None = None,
) -> tuple[RequestTemplate, RequestTemplate]:
    """The templates of a job's requests on the sync and the batch route (`plan_job`'s)."""
    sync, batch = (
        RequestTemplate.build(
            model=model,
            max_tokens=max_tokens,
            rubric=rubric,
            path=path,
            output_config=output_config,
            thinking=thinking.param() if thinking is not None else None,
        )
        for path in ("sync", "batch")
    )
    return sync, batch


def plan_job(
    items: Sequence[Item],
    *,
    model: str,
    max_tokens: int,
    rubric: str | None,
    max_batch_bytes: int | None,
    output_config: Mapping[str, Any] | None = None,
    thinking: Thinking | None = None,
) -> JobPlan:
    """The job's plan. With `max_batch_bytes` (whenever the job may go to batches), a request too large
    for any sub-batch raises `RequestTooLargeError` naming its item and line, before anything is sent.
    `output_config` (a verdict schema's structured-output format) and `thinking` (the SDK's parameter)
    go on every request of both routes."""
    sync, batch = request_templates(
        model=model, max_tokens=max_tokens, rubric=rubric, output_config=output_config, thinking=thinking
    )
    cols = Items.of(items)
    requests = build_requests(cols, batch)
    if max_batch_bytes is not None and requests:
        sizes = requests.sizes
        largest = max(sizes)
        if largest + ENVELOPE_BYTES > max_batch_bytes:
            k = sizes.index(largest)
            size = sizes[k] + ENVELOPE_BYTES
            raise RequestTooLargeError(
                cols.ids[k], cols.custom_ids[k], size, max_batch_bytes, line=cols.lines[k]
            )
    return JobPlan(items=cols, requests=requests, sync_template=sync, batch_template=batch)


#: The expected length of one answer (tokens) before any answer is known: a judge's answer is a grade
#: and a rationale of a few sentences (about 75 English words), not `max_tokens` of text. Only the
#: estimate uses it; the budget's cap always counts the full `max_tokens`.
EXPECTED_OUTPUT_TOKENS = 100


@frozen(kw_only=True)
class Learned:
    """What the job's answers so far say about the rest: how many billed answers (`answers`) and their
    usage summed; and, from `count_tokens`, one prompt's real input tokens (`counted`) beside the
    plan's call-free estimate of the same prompt (`counted_estimate`)."""

    answers: int = 0
    usage: Usage = attrs.field(factory=Usage)
    counted: int | None = None
    counted_estimate: int | None = None

    @property
    def basis(self) -> str:
        """Where the estimate's figures come from, in a few words."""
        if self.answers:
            return f"learned from {self.answers:,} {'answer' if self.answers == 1 else 'answers'}"
        if self.counted is not None:
            return "input from count_tokens; answers assumed"
        return "assumed"

    def input_scale(self, estimated_per_request: float) -> float:
        """How much to scale the call-free input estimate (tokens per request) by: the answers' real
        input tokens per request, else the counted prompt's, over the estimate of the same."""
        if self.answers and estimated_per_request > 0:
            u = self.usage
            real = u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens
            return real / self.answers / estimated_per_request
        if self.counted is not None and self.counted_estimate:
            return self.counted / self.counted_estimate
        return 1.0

    def output_per_answer(self, default: int) -> int:
        return round(self.usage.output_tokens / self.answers) if self.answers else default


@frozen(kw_only=True)
class BudgetFit:
    """`--dry-run --budget`: whether the estimate fits the budget (`spent` so far counted), and how many
    of the requests to send it covers when it does not (the last one must still fit at its bound)."""

    budget: float
    spent: float
    fits: bool
    covers: int


def budget_fit(budget: float, *, spent: float, per_request: float, n: int, max_bound: float) -> BudgetFit:
    """How many of `n` requests expected at `per_request` each a budget covers: the run sends while
    the next request fits at its bound (`max_bound` at most), so the last request goes only when
    `max_bound` is left, and costs `per_request`."""
    room = budget - spent
    if n == 0:
        return BudgetFit(budget=budget, spent=spent, fits=room >= 0, covers=0)
    if room < max_bound:
        covers = 0
    elif per_request <= 0:
        covers = n
    else:
        covers = min(n, int((room - max_bound) / per_request) + 1)
    return BudgetFit(budget=budget, spent=spent, fits=covers == n, covers=covers)


def estimate_tokens(n_bytes: int) -> int:
    """A call-free token estimate: one token per four UTF-8 bytes, rounded up."""
    return -(-n_bytes // 4)


@frozen(kw_only=True)
class CachePlan:
    """Where the cache breakpoint sits, and whether the rubric is long enough to be cached at all."""

    breakpoint: str | None
    ttl: str | None
    rubric_tokens: int
    min_tokens: int
    cached: bool


@frozen(kw_only=True)
class Plan:
    """Everything a dry run reports, as a value. On a state dir with a history, `final` items are
    done and `live` ones sit in batches still live (polled, not resent); the rest are `to_send`,
    and the sub-batches and the cost are those of what is left to send."""

    n: int
    final: int
    live: int
    to_send: int
    route: Route
    model: str
    max_tokens: int
    sub_batches: tuple[tuple[int, int], ...]  # (requests, bytes) per sub-batch; empty on sync
    max_batch_requests: int
    max_batch_bytes: int
    cache: CachePlan
    input_tokens: int  # uncached input, every request
    output_tokens: int  # expected output, every request
    output_per_answer: int
    estimated_cost_usd: float | None
    all_sync_cost_usd: float | None
    #: `--thinking` as given (None: omitted, the model's default), and whether the model thinks.
    thinking: str | None = None
    thinks: bool = False
    #: The model's prices are judgecore's estimate by family (`judgecore.wire.models`), not documented.
    price_estimated: bool = False
    #: One line each: a deprecated model, too little room for thinking, ...
    warnings: tuple[str, ...] = ()
    #: the verdict schema as every request carries it (the API's subset of the user's), as JSON text
    output_schema_json: str | None = None
    #: where the estimate's figures come from (`Learned.basis`)
    basis: str = "assumed"
    #: `count_tokens` of one prompt: its real input tokens (None: not asked)
    counted_tokens: int | None = None
    #: `--budget` given: whether the estimate fits it
    budget: BudgetFit | None = None

    @property
    def per_request_usd(self) -> float | None:
        """The estimated cost of one request to send."""
        if self.estimated_cost_usd is None or not self.to_send:
            return None
        return self.estimated_cost_usd / self.to_send

    #: a judge design asking more than one request per item (`judgecore.job.designs`): the items, the
    #: requests each asks, the design in words, and a panel's estimated cost per judge (`n` and the
    #: rest of the plan count requests)
    items: int | None = None
    per_item: int = 1
    design: str | None = None
    cost_by_judge: tuple[tuple[str, float | None], ...] = ()
    #: a panel across providers: each judge's route in words (`batch`, `sync`, `sync (self-hosted)`);
    #: empty for a job of one provider, whose one route is `route`
    route_by_judge: tuple[tuple[str, str], ...] = ()
    #: a panel whose lanes batch: each lane's (provider's) sub-batches, in `sub_batches`' order, with
    #: its own limits: (provider, how many, at most requests, at most bytes)
    sub_batches_by_provider: tuple[tuple[str, int, int, int], ...] = ()

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return None if self.output_schema_json is None else orjson.loads(self.output_schema_json)


def _output_schema_json(template: RequestTemplate) -> str | None:
    """The structured-output schema the template's requests carry, as JSON text, or None."""
    if template.output_config_json is None:
        return None
    fmt = orjson.loads(template.output_config_json).get("format") or {}
    schema = fmt.get("schema")
    return orjson.dumps(schema).decode() if isinstance(schema, dict) else None


def _cost(
    path: RoutePath,
    price: ModelPrice,
    *,
    n: int,
    writes: int,
    rubric: int,
    cached: bool,
    input_tokens: int,
    output_tokens: int,
) -> float:
    if cached:
        rubric_cost = rubric * (writes * CACHE_WRITE[path] + max(0, n - writes) * price.cache_read)
    else:
        rubric_cost = float(rubric * n)
    in_usd = (input_tokens + rubric_cost) * price.input_per_mtok / 1e6
    out_usd = output_tokens * price.output_per_mtok / 1e6
    total = in_usd + out_usd
    return round(total * (BATCH_DISCOUNT if path == "batch" else 1.0), 4)


@frozen(kw_only=True)
class RequestTotals:
    """What a plan reads of the requests to send, summed: how many (`n`), their messages' estimated
    input tokens, their expected output tokens (`output_per_answer` each, capped by each request's
    max_tokens), the sub-batches they are chunked into (requests, bytes) on the batch route, and the
    largest size and max_tokens (what a budget's bound needs; 0 when nothing asked for them). Made
    of the requests' columns (`plan`) or a chunk of them at a time (`judgecore.decide.tally`)."""

    n: int
    input_tokens: int
    output_tokens: int
    output_per_answer: int
    sub_batches: tuple[tuple[int, int], ...] = ()
    max_size: int = 0
    max_tokens: int = 0


def output_tokens_of(max_tokens: Sequence[int], output_per_answer: int) -> int:
    """The expected output tokens of requests asking these `max_tokens`: `output_per_answer` each,
    capped by its max_tokens (one pass in C)."""
    if len(max_tokens) and min(max_tokens) >= output_per_answer:  # none caps its answer below the expected
        return output_per_answer * len(max_tokens)
    return sum(map(min, max_tokens, repeat(output_per_answer)))


def input_tokens_of(message_sizes: Iterable[int]) -> int:
    """The estimated input tokens of messages of these serialized sizes (`estimate_tokens` of each,
    summed in C)."""
    return sum(map(floordiv, map(add, message_sizes, repeat(3)), repeat(4)))


def plan(
    requests: Sequence[Request],
    *,
    route: Route,
    sub_batches: Sequence[SubBatch],
    template: RequestTemplate,
    rubric: str | None,
    max_batch_requests: int,
    max_batch_bytes: int,
    prices: Mapping[str, ModelPrice] = DEFAULT_PRICES,
    output_per_answer: int | None = None,
    final: int = 0,
    live: int = 0,
    thinking: Thinking | None = None,
    warnings: Sequence[str] = (),
    learned: Learned | None = None,
    budget: float | None = None,
    spent: float = 0.0,
) -> Plan:
    """The dry-run plan of `requests`, what is left to send of a job whose other `final` + `live`
    items need no send. `output_per_answer` is the expected answer length (tokens, capped by each
    request's `max_tokens`; default: what `learned` answers say, else `EXPECTED_OUTPUT_TOKENS`);
    `learned` scales the input estimate; `budget` (with the job's `spent` so far) is checked against
    the estimate."""
    learned = learned or Learned()
    if output_per_answer is None:
        output_per_answer = learned.output_per_answer(EXPECTED_OUTPUT_TOKENS)
    cols = Requests.of(requests)
    n = len(cols)
    bound = budget is not None and n > 0  # a budget's bound reads the largest size and max_tokens
    totals = RequestTotals(
        n=n,
        input_tokens=input_tokens_of(cols.message_sizes),
        output_tokens=output_tokens_of(cols.max_tokens, output_per_answer),
        output_per_answer=output_per_answer,
        sub_batches=tuple((len(sb.requests), sb.size) for sb in sub_batches),
        max_size=max(cols.sizes) if bound else 0,
        max_tokens=max(cols.max_tokens) if bound else 0,
    )
    return plan_of_totals(
        totals,
        route=route,
        template=template,
        rubric=rubric,
        max_batch_requests=max_batch_requests,
        max_batch_bytes=max_batch_bytes,
        prices=prices,
        final=final,
        live=live,
        thinking=thinking,
        warnings=warnings,
        learned=learned,
        budget=budget,
        spent=spent,
    )


def plan_of_totals(
    totals: RequestTotals,
    *,
    route: Route,
    template: RequestTemplate,
    rubric: str | None,
    max_batch_requests: int,
    max_batch_bytes: int,
    prices: Mapping[str, ModelPrice] = DEFAULT_PRICES,
    final: int = 0,
    live: int = 0,
    thinking: Thinking | None = None,
    warnings: Sequence[str] = (),
    learned: Learned | None = None,
    budget: float | None = None,
    spent: float = 0.0,
) -> Plan:
    """`plan` of requests told by their `totals` alone (the sub-batches are used on the batch route)."""
    learned = learned or Learned()
    n, input_tokens, output_tokens = totals.n, totals.input_tokens, totals.output_tokens
    rubric_tokens = estimate_tokens(len(rubric.encode())) if rubric else 0
    scale = learned.input_scale((input_tokens + rubric_tokens * n) / n if n else 0.0)
    if scale != 1.0:
        input_tokens, rubric_tokens = round(input_tokens * scale), round(rubric_tokens * scale)
    min_tokens = MIN_CACHEABLE_TOKENS.get(alias_of(template.model), DEFAULT_MIN_CACHEABLE)
    cached = rubric_tokens >= min_tokens
    cache = CachePlan(
        breakpoint="end of the rubric system block" if rubric else None,
        ttl=TTL[route.path] if rubric else None,
        rubric_tokens=rubric_tokens,
        min_tokens=min_tokens,
        cached=cached,
    )
    sub_batches = totals.sub_batches
    price = prices.get(template.model) or (price_for(template.model) if prices is DEFAULT_PRICES else None)
    est = all_sync = None
    if price is not None:
        common = {
            "price": price,
            "n": n,
            "rubric": rubric_tokens,
            "cached": cached,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
        }
        all_sync = _cost("sync", writes=min(1, n), **common)  # type: ignore[arg-type]
        writes = len(sub_batches) if route.path == "batch" else min(1, n)
        est = _cost(route.path, writes=writes, **common)  # type: ignore[arg-type]
    fit = None
    if budget is not None and est is not None and price is not None:
        fit = budget_fit(
            budget,
            spent=spent,
            per_request=est / n if n else 0.0,
            n=n,
            max_bound=_max_bound(totals, template, price, route.path),
        )
    return Plan(
        n=n + final + live,
        final=final,
        live=live,
        to_send=n,
        route=route,
        model=template.model,
        max_tokens=template.max_tokens,
        sub_batches=sub_batches,
        max_batch_requests=max_batch_requests,
        max_batch_bytes=max_batch_bytes,
        cache=cache,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        output_per_answer=totals.output_per_answer,
        estimated_cost_usd=est,
        all_sync_cost_usd=all_sync,
        thinking=str(thinking) if thinking is not None else None,
        thinks=thinks(template.model, thinking),
        price_estimated=bool((info := model_info(template.model)) and info.estimated),
        warnings=tuple(warnings),
        output_schema_json=_output_schema_json(template),
        basis=learned.basis,
        counted_tokens=learned.counted,
        budget=fit,
    )


def _max_bound(totals: RequestTotals, template: RequestTemplate, price: ModelPrice, path: RoutePath) -> float:
    """At least the largest upper bound (`judgecore.decide.spend.request_bound`) of the requests to send: the
    bound of the largest size with the largest `max_tokens` (a bound grows with both)."""
    if not totals.n:
        return 0.0
    return request_bound(
        request_bytes=totals.max_size,
        cached_bytes=len(template.system_json or b""),
        max_tokens=totals.max_tokens,
        price=price,
        route=path,
    )
