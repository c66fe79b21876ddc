"""A sub-batch as one run tracks it: its persistent state, its in-run phase, and the facts neither
table derives (its ids, its tries and when it is next due, its group, what it may cost)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import attrs

from judgecore.decide.planning import ModelPrice
from judgecore.decide.polling import BatchSnapshot
from judgecore.decide.spend import request_bound
from judgecore.run.subbatch import Phase, SubState
from judgecore.wire.requests import Request, RequestIndex


@attrs.frozen(kw_only=True)
class Sub:
    sub_id: int
    round: int
    n: int
    intent_at: float
    state: SubState
    phase: Phase
    #: its custom_ids: a view of the run's column when this run planned it (see `requests`), else as
    #: the checkpoint lists them
    ids: Sequence[str] = ()
    #: the column position of each of `ids` (-1: outside the run's columns), what the run marks
    at: Sequence[int] = ()
    requests: Sequence[Request] = ()  # known for sub-batches planned by this run
    group: int | None = None
    snap: BatchSnapshot | None = None
    due: float = 0.0  # next poll / next create or reconcile / next harvest, not before
    tries: int = 0  # creates + failed listings (intents), or streams (ended batches), this run
    open: frozenset[str] = frozenset()  # ids its group's harvests recorded not final, until settled
    bound: float = 0.0  # the upper bound of its cost, reserved in the budget until it is harvested
    cost: float = 0.0  # what its group's harvests cost, until settled

    @property
    def recovered(self) -> bool:
        """An intent of an earlier run: this run holds none of its requests, so never resends them
        itself (a listing that proves it absent frees its ids for the next round instead)."""
        return not self.requests


def bounder(price: ModelPrice | None, cached_bytes: int, requests: RequestIndex) -> Callable[[str], float]:
    """The upper bound of one request's cost on the batch route, by custom_id (0 without a price)."""

    def bound(custom_id: str) -> float:
        if price is None:
            return 0.0
        size, max_tokens = requests.bound_inputs(custom_id)
        return request_bound(
            request_bytes=size,
            cached_bytes=cached_bytes,
            max_tokens=max_tokens,
            price=price,
            route="batch",
        )

    return bound


def first_sub(own: int, top: int, slot: tuple[int, int]) -> int:
    """The first sub_id past `own` and `top` that is `slot[0]` modulo `slot[1]`."""
    k, m = slot
    if m < 1 or not 0 <= k < m:
        raise ValueError(f"sub_slot must be (k, m) with 0 <= k < m, got {slot}")
    n = max(own, top) + 1
    return n + (k - n) % m
