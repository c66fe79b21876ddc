"""Spend and budget: what answers cost, an upper bound of what a send may cost, and the hard cap.

Theory of operation. Cost is computed from each answer's reported `usage` (`answer_cost`), the
model's prices, the route (batch: half price) and the cache tier (writes at 1.25x for the 5-minute
TTL used on the sync route, 2x for the 1-hour TTL used in batches; reads at the model's `cache_read`
multiplier: 0.1x, 0.05x on Opus 5.5 and Sonnet 5.5, 0.025x on Fable 5.1 and Mythos 5.1). What all-sync would
have cost is the same usage priced as a sync answer.

`--budget USD` is a hard cap, kept by one admission rule (`Budget.admits`): nothing is sent or created
unless

    spent so far + upper bound of everything in flight + upper bound of what is about to go <= cap.

The upper bound of one request (`request_bound`) takes its input at one token per 3 UTF-8 bytes of the
whole request as it goes on the wire (an over-estimate: English text runs about 4 bytes a token, and the
JSON framing is counted too), the rubric's share at the route's cache-write rate (the dearest way it can
be billed), and the full `max_tokens` of output (thinking tokens included: they are output tokens,
out of `max_tokens`), at the route's prices (Haiku 5.5's over-100k-prompt rates when the request may be
that long). When an answer comes back its
bound is released (`settle`) and its real cost is added; a send that answered nothing billable (a 429,
a 5xx, a connection error) only releases its bound. The shell keeps one `Budget` value per run, seeded
with the job's spend so far from the checkpoint.

Rounds. Real spend replaces the bounds as answers come back, so a run keeps sending while the next
request fits at its bound: on the sync route each answer frees its bound at once; on the batch route a
harvested sub-batch frees its sub-batch's, and the next sub-batch is cut to what is left. A run stops
for the budget only when the next request cannot fit at its bound with nothing left in flight that
could free any (`stops_for_budget`). What the rest then needs is `Expect`'s figure: the mean real
cost of the answers so far (earlier runs and this one), not their bounds (`budget_line` says it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import attrs

from judgecore.decide.prices import BATCH_DISCOUNT, CACHE_WRITE, DEFAULT_PRICES, usage_cost, usd
from judgecore.results.status import Usage
from judgecore.values import frozen
from judgecore.wire.models import ModelPrice
from judgecore.wire.models import price_for as _table_price

#: One token per this many UTF-8 bytes, for an upper bound of a request's input tokens.
BOUND_BYTES_PER_TOKEN = 3


def price_for(model: str, prices: Mapping[str, ModelPrice] = DEFAULT_PRICES) -> ModelPrice | None:
    """The model's prices, or None when the table does not know it (a budget then cannot be kept). A
    dated snapshot id has its alias's prices (`judgecore.wire.models`, the one table)."""
    if prices is DEFAULT_PRICES:
        return _table_price(model)
    return prices.get(model)


def answer_cost(usage: Usage, price: ModelPrice, route: str) -> float:
    """US dollars one answer cost, from its reported usage, on `route` ("sync" or "batch")."""
    return usage_cost(usage, price, "batch" if route == "batch" else "sync")


def all_sync_cost(usage: Usage, price: ModelPrice) -> float:
    """What the same answer would have cost on the sync route."""
    return usage_cost(usage, price, "sync")


def request_bound(
    *, request_bytes: int, cached_bytes: int, max_tokens: int, price: ModelPrice, route: str
) -> float:
    """An upper bound, in US dollars, of what one request can cost (see the module docstring).

    `request_bytes` is the request's whole serialized size; `cached_bytes` the part of it that carries a
    cache marker (the rubric), billed at most at the route's cache-write rate.
    """
    path = "batch" if route == "batch" else "sync"
    cached = math.ceil(max(0, cached_bytes) / BOUND_BYTES_PER_TOKEN)
    rest = math.ceil(max(0, request_bytes - cached_bytes) / BOUND_BYTES_PER_TOKEN)
    input_units = rest + cached * max(CACHE_WRITE[path], 1.0)
    in_rate, out_rate = price.input_per_mtok, price.output_per_mtok
    if price.long_prompt is not None and rest + cached > price.long_prompt[0]:
        _, in_rate, out_rate = price.long_prompt  # a prompt that may be over the tier: its rates
    # `max_tokens` covers thinking tokens too: they are output tokens, out of max_tokens
    usd = (input_units * in_rate + max_tokens * out_rate) / 1e6
    return usd * (BATCH_DISCOUNT if path == "batch" else 1.0)


@frozen(kw_only=True)
class Budget:
    """The hard cap of a run: `spent` (answers so far, earlier runs included) and `reserved` (the upper
    bounds of everything in flight). `cap=None` means no budget: everything is admitted."""

    cap: float | None
    spent: float = 0.0
    reserved: float = 0.0

    def __attrs_post_init__(self) -> None:
        if self.cap is not None and not (math.isfinite(self.cap) and self.cap >= 0):
            raise ValueError(f"a budget must be a finite amount >= 0, got {self.cap}")

    @property
    def left(self) -> float:
        """What may still be committed (infinite without a cap)."""
        if self.cap is None:
            return math.inf
        return self.cap - self.spent - self.reserved

    def admits(self, bound: float) -> bool:
        """Whether a send whose cost is at most `bound` fits under the cap."""
        return self.cap is None or self.spent + self.reserved + bound <= self.cap

    def reserve(self, bound: float) -> Budget:
        return attrs.evolve(self, reserved=self.reserved + bound)

    def settle(self, bound: float, cost: float) -> Budget:
        """An answer came back: release its bound, add what it really cost. What is left reserved under
        a nano-dollar is the rounding of float sums, not a request in flight: it is dropped."""
        reserved = self.reserved - bound
        return attrs.evolve(self, reserved=reserved if reserved > 1e-9 else 0.0, spent=self.spent + cost)

    def release(self, bound: float) -> Budget:
        """A send answered nothing billable (or a batch line never ran): release its bound."""
        return self.settle(bound, 0.0)

    def fit(self, bounds: tuple[float, ...]) -> int:
        """How many of `bounds`, taken in order, fit under the cap together (to cut a sub-batch)."""
        if self.cap is None:
            return len(bounds)
        room = self.cap - self.spent - self.reserved
        total = 0.0
        for n, b in enumerate(bounds):
            total += b
            if total > room:
                return n
        return len(bounds)


def stops_for_budget(budget: Budget, next_bound: float, *, in_flight: bool) -> bool:
    """Whether the budget ends the run's sending: the next request does not fit even at its bound, and
    nothing in flight can free headroom by being answered (otherwise: wait for an answer)."""
    return not budget.admits(next_bound) and not in_flight


@frozen(kw_only=True)
class Expect:
    """What one more request is expected to cost, in US dollars: `per_request`, the mean of what `weight`
    answers really cost (0: the plan's prior figure, before any answer). `learn` folds in answers as
    they come back, so the figure of a run's budget line comes from real answers."""

    per_request: float = 0.0
    weight: int = 0

    def learn(self, cost: float, answers: int = 1) -> Expect:
        """`answers` more answers came back, costing `cost` in all."""
        if answers <= 0:
            return self
        n = self.weight + answers
        return Expect(per_request=(self.per_request * self.weight + cost) / n, weight=n)

    def of(self, n: int) -> float:
        """The expected cost of `n` more requests."""
        return self.per_request * max(0, n)


def rerun_budget(budget: Budget, expect: Expect, *, left: int, in_flight: int, next_bound: float) -> float:
    """The `--budget` (US dollars, whole cents rounded up) that would let a rerun send the `left`
    requests a budget stopped: the spend so far, what is in flight and the rest are expected to cost
    (from what the answers really cost), and one request's bound (the last request must still fit at
    its bound when it goes)."""
    rerun = budget.spent + expect.of(in_flight) + expect.of(left) + next_bound
    return math.ceil(rerun * 100) / 100


def budget_line(
    budget: Budget, expect: Expect, *, left: int, in_flight: int, next_bound: float, noun: str = "item"
) -> str:
    """The run's last word on the budget: `left` requests pending need about so much more (from what the
    answers really cost), and the `--budget` that would let a rerun send them all (`rerun_budget`)."""
    assert budget.cap is not None
    need = expect.of(left)
    rerun = rerun_budget(budget, expect, left=left, in_flight=in_flight, next_bound=next_bound)
    basis = (
        f"from what {expect.weight:,} {'answer' if expect.weight == 1 else 'answers'} cost"
        if expect.weight
        else "estimated, no answer yet"
    )
    many = noun if left == 1 else f"{noun}s"
    return (
        f"budget: {usd(budget.cap)} cannot cover the next request at its upper bound (${next_bound:,.4f}; "
        f"{usd(budget.spent)} spent, {usd(budget.reserved)} held for what is in flight); {left:,} {many} "
        f"left pending need about {usd(need)} more ({basis}); rerun with --budget {rerun:.2f} to send them"
    )


def rounds_to_spend(room: float, bound: float, expect: float, *, most: int = 1_000) -> int | None:
    """About how many rounds of sub-batches spend `room` (US dollars) when each round sends what fits
    at `bound` a request and each answer really costs `expect`: every round frees the gap between the
    two, so the rounds shrink geometrically until one request no longer fits. None: no expectation
    yet, or one at the bound (a round or two). Counted, not solved: at most `most`."""
    if bound <= 0 or not 0 < expect < bound:
        return None
    rounds = 0
    while rounds < most:
        n = int(room // bound)
        if n == 0:
            return rounds
        room -= n * expect
        rounds += 1
    return rounds


def cut_line(*, fit: int, of: int, room: float, bound: float, expect: Expect) -> str | None:
    """The one warning of a run whose budget first cuts a sub-batch on the batch route: how many rounds
    (each a batch's turnaround) spending it is likely to take, and what makes them fewer. None when
    the rounds are few (3 or fewer) or cannot be told."""
    rounds = rounds_to_spend(room, bound, expect.per_request)
    if rounds is None or rounds <= 3:
        return None
    basis = (
        f"{expect.weight:,} {'answer' if expect.weight == 1 else 'answers'}"
        if expect.weight
        else "the estimate"
    )
    return (
        f"budget rounds: a sub-batch is cut to {fit:,} of {of:,} requests: each is held at its upper bound "
        f"(${bound:,.4f}: its max_tokens of output) until its batch is harvested, while "
        f"an answer costs about ${expect.per_request:,.4f} (from {basis}); spending the budget will take "
        f"about {rounds:,} rounds, each a batch's turnaround. A --max-tokens nearer the answers' length "
        "(a new job), or the sync route (--force-sync: an answer frees its bound at once, at full price), "
        "takes fewer"
    )


@frozen(kw_only=True)
class Spend:
    """What a job's answers cost so far (`spent`), and what the same answers would have cost all-sync."""

    spent: float
    all_sync: float
    answers: int


@frozen(kw_only=True)
class Money:
    """US dollars: spent so far, the same answers all-sync, and the dry-run's estimate (None: unknown)."""

    spend_usd: float | None = None
    all_sync_usd: float | None = None
    estimate_usd: float | None = None


def spend_of(answers: Iterable[tuple[str, Usage]], price: ModelPrice) -> Spend:
    """The spend of every billed answer, `(route, usage)` each, as the checkpoint records them (an item
    answered twice was paid twice). Cost is linear in each token count, so usages summed per route give
    the same spend (`answers` then counts the sums). Seed a run's `Budget` with
    `Budget(cap=..., spent=spend.spent)`."""
    spent = all_sync = 0.0
    n = 0
    for route, usage in answers:
        spent += answer_cost(usage, price, route)
        all_sync += all_sync_cost(usage, price)
        n += 1
    return Spend(spent=spent, all_sync=all_sync, answers=n)
