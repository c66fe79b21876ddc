"""Statistics of a job's scores: pure functions over tuples of numbers or labels.

- numbers: mean with a 95% interval (Student's t), median, standard deviation, quartiles, histogram;
- labels: counts and shares, each share with a 95% Wilson score interval;
- against a reference: agreement, Cohen's kappa (quadratic-weighted for numbers, on their values),
  the confusion matrix, Pearson's and Spearman's correlations.

No numpy or scipy here: the t quantile comes from the regularized incomplete beta function (a continued
fraction, as in Numerical Recipes), inverted by bisection. The tests hold every function to scipy,
scikit-learn and `statistics` as oracles.
"""

from __future__ import annotations

import functools
import math
import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

import attrs

from judgecore.values import frozen

Z95 = statistics.NormalDist().inv_cdf(0.975)


def _betacf(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """Student's t distribution function."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t with `df` degrees of freedom (0 < p < 1). Kept per (p, df): a
    `--by` over 10,000 groups asks it once a group, mostly for the same few sizes (~50 bisection steps
    of a continued fraction each)."""
    if p == 0.5:
        return 0.0
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


def stdev(values: Sequence[float]) -> float | None:
    """The sample standard deviation (two passes in floats: `statistics.stdev` is exact but ~20x
    slower on 100,000 scores); None with fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    m = math.fsum(values) / n
    return math.sqrt(math.fsum((x - m) ** 2 for x in values) / (n - 1))


def mean_ci95(values: Sequence[float]) -> tuple[float, float] | None:
    """The 95% confidence interval of the mean (Student's t); None with fewer than two values."""
    n = len(values)
    sd = stdev(values)
    if sd is None:
        return None
    m = statistics.fmean(values)
    half = t_quantile(0.975, n - 1) * sd / math.sqrt(n)
    return (m - half, m + half)


def wilson_ci95(k: float, n: int) -> tuple[float, float] | None:
    """The 95% Wilson score interval of a share k/n (k may be fractional: a tie counts half); None when n is 0."""
    if n == 0:
        return None
    p = k / n
    z2 = Z95 * Z95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def clip(ci: tuple[float, float], bounds: tuple[float, float]) -> tuple[float, float]:
    """`ci` cut to `bounds` (lo, hi)."""
    lo, hi = bounds
    return (min(max(ci[0], lo), hi), max(min(ci[1], hi), lo))


@frozen(kw_only=True)
class Bin:
    lo: float
    hi: float
    n: int


def histogram(values: Sequence[float], *, max_distinct: int = 20, bins: int = 10) -> tuple[Bin, ...]:
    """One bin per value when they are few integers (a rating scale), else `bins` equal-width bins."""
    if not values:
        return ()
    distinct = sorted(set(values))
    if len(distinct) == 1 or (len(distinct) <= max_distinct and all(float(v).is_integer() for v in distinct)):
        counts = Counter(values)
        return tuple(Bin(lo=v, hi=v, n=counts[v]) for v in distinct)
    lo, hi = distinct[0], distinct[-1]
    width = (hi - lo) / bins
    out = [0] * bins
    for v in values:
        out[min(bins - 1, int((v - lo) / width))] += 1
    return tuple(Bin(lo=lo + i * width, hi=lo + (i + 1) * width, n=c) for i, c in enumerate(out))


@frozen(kw_only=True)
class NumericStats:
    """A numeric score over the scored items."""

    n: int
    mean: float
    ci95: tuple[float, float] | None
    median: float
    sd: float | None
    min: float
    max: float
    q1: float
    q3: float
    histogram: tuple[Bin, ...]
    #: the interval reached past the scale the verdict spec declares and was cut to it (`clipped_to`)
    ci95_clipped: bool = False

    def clipped_to(self, scale: tuple[float, float] | None) -> NumericStats:
        """These statistics with the mean's interval cut to `scale` (lo, hi): Student's t reaches far past
        a 1-5 scale on two items (1.50 +- 6.35), and no mean of scores on it can lie outside it."""
        if scale is None or self.ci95 is None:
            return self
        ci = clip(self.ci95, scale)
        return self if ci == self.ci95 else attrs.evolve(self, ci95=ci, ci95_clipped=True)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "numeric",
            "n": self.n,
            "mean": self.mean,
            "ci95": list(self.ci95) if self.ci95 else None,
            "ci95_clipped": self.ci95_clipped,
            "median": self.median,
            "sd": self.sd,
            "min": self.min,
            "max": self.max,
            "q1": self.q1,
            "q3": self.q3,
            "histogram": [{"lo": b.lo, "hi": b.hi, "n": b.n} for b in self.histogram],
        }


def describe_numeric(values: Sequence[float]) -> NumericStats | None:
    """Mean with its 95% interval, median, spread and histogram; None for no values."""
    if not values:
        return None
    if len(values) > 1:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return NumericStats(
        n=len(values),
        mean=statistics.fmean(values),
        ci95=mean_ci95(values),
        median=statistics.median(values),
        sd=stdev(values),
        min=min(values),
        max=max(values),
        q1=q1,
        q3=q3,
        histogram=histogram(values),
    )


@frozen(kw_only=True)
class LabelStats:
    """A label score over the scored items: counts, shares and the shares' 95% Wilson intervals."""

    n: int
    counts: tuple[tuple[str, int], ...]  # most frequent first, then by label

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": "label",
            "n": self.n,
            "counts": dict(self.counts),
            "shares": {k: c / self.n for k, c in self.counts},
            "ci95": {k: list(wilson_ci95(c, self.n) or ()) for k, c in self.counts},
        }


def describe_labels(values: Sequence[str]) -> LabelStats | None:
    if not values:
        return None
    counts = sorted(Counter(values).items(), key=lambda kv: (-kv[1], kv[0]))
    return LabelStats(n=len(values), counts=tuple(counts))


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r; None with fewer than two pairs or a constant side."""
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return statistics.correlation(x, y)


def _ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho (Pearson's r of the ranks, ties averaged)."""
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return statistics.correlation(_ranks(x), _ranks(y))


def confusion(
    reference: Sequence[Any], judged: Sequence[Any]
) -> tuple[tuple[Any, ...], tuple[tuple[int, ...], ...]]:
    """(labels, matrix): rows are the reference's labels, columns the judge's, labels sorted."""
    labels = tuple(sorted(set(reference) | set(judged), key=_sort_key))
    index = {v: i for i, v in enumerate(labels)}
    m = [[0] * len(labels) for _ in labels]
    for r, j in zip(reference, judged, strict=True):
        m[index[r]][index[j]] += 1
    return labels, tuple(tuple(row) for row in m)


def _sort_key(v: Any) -> tuple[int, Any]:
    return (0, v) if isinstance(v, int | float) and not isinstance(v, bool) else (1, str(v))


def cohen_kappa(reference: Sequence[Any], judged: Sequence[Any], *, weighted: bool = False) -> float | None:
    """Cohen's kappa; `weighted` uses quadratic weights on the values' distances (numbers only).

    None when it is undefined (no pairs, or chance agreement is total)."""
    n = len(reference)
    if n == 0:
        return None
    labels, m = confusion(reference, judged)
    k = len(labels)
    rows = [sum(m[i]) for i in range(k)]
    cols = [sum(m[i][j] for i in range(k)) for j in range(k)]
    if weighted:

        def w(i: int, j: int) -> float:
            return (float(labels[i]) - float(labels[j])) ** 2
    else:

        def w(i: int, j: int) -> float:
            return 0.0 if i == j else 1.0

    observed = sum(w(i, j) * m[i][j] for i in range(k) for j in range(k)) / n
    expected = sum(w(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k)) / (n * n)
    if expected == 0:
        return None
    return 1.0 - observed / expected
