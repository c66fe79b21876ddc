"""How long a simulated batch takes: fixed, or drawn from a heavy-tailed distribution.

The docs say "most batches finishing in less than 1 hour" and "may take up to 24 hours": a batch's
latency is a distribution with a long tail, not a constant. A scenario's `batch_latency` names the
distribution and `batch_seconds` is its median; `batch_latency_shape` its spread:

- `fixed`: every batch takes `batch_seconds` (the default; what the tests of the lifecycle use).
- `lognormal`: `median x exp(shape x Z)`, Z standard normal; shape 1.2 by default (median 20 min:
  82% of batches within an hour, 0.8% over 6 hours).
- `pareto`: `x_m x U^(-1 / shape)` with `x_m = median / 2^(1 / shape)`; shape 1.1 by default (median
  20 min: 85% within an hour, 0.45% still running at 24 hours: those expire, as the API's do).

A draw is the inverse of the distribution at a uniform `u` in [0, 1); the simulator takes `u` from a
hash of its seed and the batch id, so the same scenario and requests give the same latencies. The
bench (`bench/deadline.py`) draws from the same functions.
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Final

#: The distributions `batch_latency` may name.
LATENCY_KINDS: Final = ("fixed", "lognormal", "pareto")

#: Each drawn distribution's shape when `batch_latency_shape` is None.
DEFAULT_SHAPE: Final = {"lognormal": 1.2, "pareto": 1.1}

_NORMAL: Final = NormalDist()


def latency_at(kind: str, median: float, shape: float | None, u: float) -> float:
    """The latency (seconds) of quantile `u` in [0, 1) of distribution `kind` with this `median`."""
    if kind == "fixed" or median <= 0:
        return median
    a = DEFAULT_SHAPE[kind] if shape is None else shape
    u = min(max(u, 1e-12), 1.0 - 1e-12)  # the open interval: both tails are unbounded
    if kind == "lognormal":
        return median * math.exp(a * _NORMAL.inv_cdf(u))
    if kind == "pareto":
        return median / 2.0 ** (1.0 / a) * (1.0 - u) ** (-1.0 / a)
    raise ValueError(f"unknown batch latency {kind!r}; expected one of {LATENCY_KINDS}")
