"""The invalid-request breaker: when a job's every request is rejected as invalid, the job is broken.

Theory of operation. One value, fed by both routes in the order outcomes arrive, earlier runs first
(the shell folds the checkpoint's earliest final outcomes in with `Breaker.start`). Only final
outcomes count: a retriable one (a 5xx, a 429, an expired line) says nothing about whether the
payload is valid. The breaker has three states:

- `DECIDING`: fewer than `need = min(k, total)` final outcomes seen, all of them INVALID_REQUEST.
  Every INVALID_REQUEST outcome is *held*: the shell does not record it yet.
- `CLOSED`: a final outcome other than INVALID_REQUEST arrived. The shell records what it held
  (as `quarantined`) and everything after as usual.
- `TRIPPED`: the first `need` final outcomes were all INVALID_REQUEST. The job's configuration is
  broken (a bad `--model`, `--max-tokens` or rubric), not its data: the run stops sending, exit 4.
  Nothing held is recorded and no later INVALID_REQUEST is either, so those items stay `pending`
  and are not quarantined by a broken configuration; every other outcome already paid for
  (succeeded, miss) is recorded as usual.

The same holds for a 1-item job (`need` is 1: its one invalid request trips the breaker). A run that
ends while the breaker is still deciding (its other items are pending) records what it held: those
quarantines are final, and the next run folds them in from the checkpoint.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum

import attrs

from judgecore.results.outcomes import FailureClass, Outcome
from judgecore.values import frozen


@frozen(kw_only=True)
class BreakerPolicy:
    """Trip when the first `k` final outcomes of a job are all invalid requests."""

    k: int = 20

    def __attrs_post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"the breaker needs k >= 1, got {self.k}")


class BreakerState(StrEnum):
    DECIDING = "deciding"
    CLOSED = "closed"
    TRIPPED = "tripped"


@frozen(kw_only=True)
class Breaker:
    """The breaker of one job; `observe` returns the next value (see the module docstring)."""

    need: int
    seen: int = 0
    state: BreakerState = BreakerState.DECIDING

    @classmethod
    def start(
        cls,
        total: int,
        prior: Iterable[FailureClass | None] = (),
        policy: BreakerPolicy = BreakerPolicy(),
    ) -> Breaker:
        """A job of `total` ids, with the failure classes (None for success) of its earliest final
        outcomes in arrival order, as the checkpoint holds them."""
        b = cls(need=min(policy.k, total), state=BreakerState.DECIDING if total >= 1 else BreakerState.CLOSED)
        for failure in prior:
            if b.state is not BreakerState.DECIDING:
                break
            b = b._see(failure)
        return b

    @property
    def tripped(self) -> bool:
        return self.state is BreakerState.TRIPPED

    @property
    def deciding(self) -> bool:
        return self.state is BreakerState.DECIDING

    def holds(self, outcome: Outcome) -> bool:
        """Whether the shell must not record this outcome now (held while deciding, dropped once tripped)."""
        return outcome.failure is FailureClass.INVALID_REQUEST and self.state is not BreakerState.CLOSED

    def observe(self, outcome: Outcome) -> Breaker:
        """The breaker after one more outcome; non-final outcomes change nothing."""
        if not outcome.final or self.state is not BreakerState.DECIDING:
            return self
        return self._see(outcome.failure)

    def _see(self, failure: FailureClass | None) -> Breaker:
        if failure is not FailureClass.INVALID_REQUEST:
            return attrs.evolve(self, seen=self.seen + 1, state=BreakerState.CLOSED)
        seen = self.seen + 1
        return attrs.evolve(
            self, seen=seen, state=BreakerState.TRIPPED if seen >= self.need else BreakerState.DECIDING
        )

    def reason(self) -> str:
        """The one line a tripped run stops with."""
        return (
            f"FATAL_CONFIG: {'the only result' if self.need == 1 else f'the first {self.need} results'} "
            "of the job were all rejected as invalid requests; the job's configuration is broken (check --model, --max-tokens and the rubric); "
            "they stay pending and nothing more is sent"
        )
