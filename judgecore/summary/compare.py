"""The difference between two groups' scores, with its 95% interval: the headline of a `--by` report.

For every pair of groups (in the summary's group order, `second - first`):
- numbers: the difference of the means with Welch's 95% interval (Student's t on the Welch-Satterthwaite
  degrees of freedom; the analytic interval, so no resampling and nothing to seed);
- labels: for each label, the difference of its shares with Newcombe's hybrid score interval (Newcombe
  1998, method 10: built from the two shares' Wilson intervals).
Each difference says the items it rests on: the scored items of both groups, and their share of the
two groups' items (a difference behind 40% of the items is not one behind 100%). On a scale the verdict
spec declares (1-5), a difference of means lies within its width (-4 to +4): Welch's interval is cut to
it, and says so (`ci95_clipped`).

Every pair is quadratic in the groups: `judgecore.summary.job_summary` compares them only up to `COMPARED_GROUPS`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from typing import Any, Final

from judgecore.summary.stats import clip, stdev, t_quantile, wilson_ci95
from judgecore.values import frozen

#: The most groups whose every pair is compared (190 pairs); above it no pair is, in any output.
COMPARED_GROUPS: Final = 20


def welch_ci95(first: Sequence[float], second: Sequence[float]) -> tuple[float, float] | None:
    """The 95% interval of mean(second) - mean(first) (Welch); None with fewer than two values a side."""
    n1, n2 = len(first), len(second)
    s1, s2 = stdev(first), stdev(second)
    if s1 is None or s2 is None:
        return None
    d = statistics.fmean(second) - statistics.fmean(first)
    v1, v2 = s1 * s1 / n1, s2 * s2 / n2
    se2 = v1 + v2
    if se2 == 0:
        return (d, d)
    df = se2 * se2 / (v1 * v1 / (n1 - 1) + v2 * v2 / (n2 - 1))
    half = t_quantile(0.975, df) * math.sqrt(se2)
    return (d - half, d + half)


def newcombe_ci95(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float] | None:
    """The 95% interval of k2/n2 - k1/n1 (Newcombe's hybrid score interval); None for an empty side."""
    w1, w2 = wilson_ci95(k1, n1), wilson_ci95(k2, n2)
    if w1 is None or w2 is None:
        return None
    p1, p2 = k1 / n1, k2 / n2
    d = p2 - p1
    lo = d - math.sqrt((p2 - w2[0]) ** 2 + (w1[1] - p1) ** 2)
    hi = d + math.sqrt((w2[1] - p2) ** 2 + (p1 - w1[0]) ** 2)
    return (max(-1.0, lo), min(1.0, hi))


@frozen(kw_only=True)
class Difference:
    """`second - first` for one pair of groups (and, for labels, one label)."""

    first: Any
    second: Any
    kind: str  # "mean" or "share"
    label: str | None  # the label whose shares differ (kind "share")
    estimate: float
    ci95: tuple[float, float] | None
    n: int  # scored items behind it (both groups)
    items: int  # every item of both groups
    share_of_items: float
    #: the interval reached past the scale's width and was cut to it
    ci95_clipped: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "second": self.second,
            "kind": self.kind,
            "label": self.label,
            "difference": self.estimate,
            "ci95": list(self.ci95) if self.ci95 else None,
            "ci95_clipped": self.ci95_clipped,
            "n": self.n,
            "items": self.items,
            "share_of_items": self.share_of_items,
        }


def differences(
    groups: Sequence[tuple[Any, Sequence[Any], int]], *, numeric: bool, width: float | None = None
) -> tuple[Difference, ...]:
    """Every pair's difference. `groups`: (value, scored values, items in the group), in order; `width`:
    the scale's (hi - lo), which a difference of means cannot exceed either way."""
    out: list[Difference] = []
    for i, (g1, v1, items1) in enumerate(groups):
        for g2, v2, items2 in groups[i + 1 :]:
            if not v1 or not v2:
                continue
            n, items = len(v1) + len(v2), items1 + items2
            common = {"first": g1, "second": g2, "n": n, "items": items, "share_of_items": n / items}
            if numeric:
                a, b = [float(x) for x in v1], [float(x) for x in v2]
                d = statistics.fmean(b) - statistics.fmean(a)
                ci = welch_ci95(a, b)
                cut = clip(ci, (-width, width)) if ci is not None and width is not None else ci
                out.append(
                    Difference(
                        kind="mean", label=None, estimate=d, ci95=cut, ci95_clipped=cut != ci, **common
                    )
                )
                continue
            labels = sorted({str(x) for x in (*v1, *v2)})
            for label in labels:
                k1 = sum(1 for x in v1 if str(x) == label)
                k2 = sum(1 for x in v2 if str(x) == label)
                out.append(
                    Difference(
                        kind="share",
                        label=label,
                        estimate=k2 / len(v2) - k1 / len(v1),
                        ci95=newcombe_ci95(k1, len(v1), k2, len(v2)),
                        **common,
                    )
                )
    return tuple(out)
