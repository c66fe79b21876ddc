"""What a judge design buys, measured: the reliability statistics of samples, pairwise orders and panels.

Pure functions over output records (CONTRACT.md, "Judge designs"); a record without the design's field
is skipped, so these read any job and report `None` where a design was not used.

- samples (`samples`: each sample's `status`, `text`, `verdict`; `agreement`): the mean agreement and
  Krippendorff's alpha over the samples (items are units, samples are coders; nominal for labels,
  interval for numbers);
- pairwise (`verdict: {"winner", "consistent", "orders": [{"first", "choice"}, ...]}`): the win rate of A
  over B, ties split (a tie counts half), with a 95% Wilson interval; the position consistency rate (the
  share of items whose two orders agree); the first-position win share (of the orders that name a
  winner, the share naming the answer shown first);
- panel (`judges`: model -> verdict): each judge's score, and the agreement between judges (Cohen's kappa
  for two, quadratic-weighted for numbers as against a reference; Krippendorff's alpha for more).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from judgecore.summary.stats import (
    LabelStats,
    NumericStats,
    cohen_kappa,
    describe_labels,
    describe_numeric,
    wilson_ci95,
)
from judgecore.values import frozen


def _number(v: Any) -> bool:
    return type(v) in (int, float)


def krippendorff_alpha(units: Sequence[Sequence[Any]], *, level: str = "nominal") -> float | None:
    """Krippendorff's alpha over `units` (each the values its coders gave, `None` for none), `level`
    `"nominal"` or `"interval"`; None when it is undefined (fewer than two pairable values, or every
    pairable value the same). From the coincidence counts (Krippendorff 2011, "Computing
    Krippendorff's Alpha-Reliability"): alpha = 1 - (n - 1) * sum_u D_u / (m_u - 1) / D, with D_u the
    sum of the squared (interval) or 0/1 (nominal) differences over the ordered pairs of unit u, and D
    the same over every ordered pair of pairable values."""
    if level not in ("nominal", "interval"):
        raise ValueError(f"level must be 'nominal' or 'interval', not {level!r}")
    pairable = [[v for v in u if v is not None] for u in units]
    pairable = [u for u in pairable if len(u) >= 2]
    n = sum(len(u) for u in pairable)
    if n < 2:
        return None

    def spread(values: Sequence[Any]) -> float:
        m = len(values)
        if level == "nominal":
            return float(m * m - sum(c * c for c in Counter(values).values()))
        xs = [float(v) for v in values]
        return 2.0 * (m * sum(x * x for x in xs) - sum(xs) ** 2)

    within = sum(spread(u) / (len(u) - 1) for u in pairable)
    overall = spread([v for u in pairable for v in u])
    if overall <= 0:
        return None
    return 1.0 - (n - 1) * within / overall


def _value(verdict: Any, field: str | None) -> Any:
    """The score a verdict holds: `verdict[field]` for an object (for a pairwise verdict without that
    field, its winner, as `summary` scores the item), the value itself otherwise."""
    if isinstance(verdict, Mapping):
        if field is None:
            return None
        value = verdict.get(field)
        if value is None and "winner" in verdict and "orders" in verdict:
            return verdict["winner"]
        return value
    return verdict


def _level(values: Sequence[Any]) -> str:
    return "interval" if values and all(_number(v) for v in values) else "nominal"


def _codes(units: Sequence[Sequence[Any]]) -> tuple[list[list[Any]], str]:
    """The units' values, numbers as floats when every value is a number, else every value as text."""
    flat = [v for u in units for v in u if v is not None]
    level = _level(flat)
    if level == "interval":
        return [[None if v is None else float(v) for v in u] for u in units], level
    return [[None if v is None else str(v) for v in u] for u in units], level


@frozen(kw_only=True)
class SampleReliability:
    """`--samples K`: how often the samples of an item agree."""

    items: int  # items that list samples
    samples: int  # samples listed
    mean_agreement: float | None
    alpha: float | None
    level: str
    agreement_items: int = 0  # items with an agreement (a verdict): what the mean is over
    scored_samples: int = 0  # samples with a verdict: what alpha reads

    def to_json(self) -> dict[str, Any]:
        return {
            "items": self.items,
            "samples": self.samples,
            "agreement_items": self.agreement_items,
            "scored_samples": self.scored_samples,
            "mean_agreement": self.mean_agreement,
            "alpha": self.alpha,
            "alpha_level": self.level,
        }


def sample_reliability(records: Sequence[Mapping[str, Any]], field: str | None) -> SampleReliability | None:
    """The samples' reliability; None when no record carries `samples`."""
    with_samples = [r for r in records if isinstance(r.get("samples"), list)]
    if not with_samples:
        return None
    units = [[_value(s.get("verdict"), field) for s in r["samples"]] for r in with_samples]
    coded, level = _codes(units)
    agreements = [float(a) for r in with_samples if _number(a := r.get("agreement"))]
    return SampleReliability(
        items=len(with_samples),
        samples=sum(len(u) for u in units),
        mean_agreement=sum(agreements) / len(agreements) if agreements else None,
        alpha=krippendorff_alpha(coded, level=level),
        level=level,
        agreement_items=len(agreements),
        scored_samples=sum(v is not None for u in units for v in u),
    )


@frozen(kw_only=True)
class PairwiseReliability:
    """`--pairwise A,B`: who wins, and how much the position decided it."""

    a: str
    b: str
    items: int
    wins_a: int
    wins_b: int
    ties: int
    win_rate_a: float | None  # ties split: (wins_a + ties / 2) / items
    win_rate_a_ci95: tuple[float, float] | None
    consistent: int
    consistency: float | None
    consistency_ci95: tuple[float, float] | None
    decided_orders: int  # orders that named a winner
    first_wins: int
    first_position_share: float | None
    first_position_ci95: tuple[float, float] | None

    def to_json(self) -> dict[str, Any]:
        def ci(x: tuple[float, float] | None) -> list[float] | None:
            return list(x) if x else None

        return {
            "a": self.a,
            "b": self.b,
            "items": self.items,
            "wins": {self.a: self.wins_a, self.b: self.wins_b, "tie": self.ties},
            "win_rate_a": self.win_rate_a,
            "win_rate_a_ci95": ci(self.win_rate_a_ci95),
            "consistent": self.consistent,
            "consistency": self.consistency,
            "consistency_ci95": ci(self.consistency_ci95),
            "decided_orders": self.decided_orders,
            "first_position_wins": self.first_wins,
            "first_position_share": self.first_position_share,
            "first_position_ci95": ci(self.first_position_ci95),
        }


def _pairwise_verdict(r: Mapping[str, Any]) -> Mapping[str, Any] | None:
    v = r.get("verdict")
    if isinstance(v, Mapping) and "winner" in v and isinstance(v.get("orders"), list):
        return v
    return None


def _first_won(order: Mapping[str, Any]) -> bool | None:
    """True when an order's choice is the answer shown first, False for the other, None for a tie."""
    choice, first = order.get("choice"), order.get("first")
    if choice is None or str(choice).lower() == "tie":
        return None
    return choice == first or choice == "first"


def pairwise_reliability(records: Sequence[Mapping[str, Any]]) -> PairwiseReliability | None:
    """The pairwise figures; None when no record carries a pairwise verdict. A is the field shown
    first in an item's first order (the contract judges A first, then B first)."""
    verdicts = [v for r in records if (v := _pairwise_verdict(r)) is not None]
    if not verdicts:
        return None
    names: list[str] = []
    for v in verdicts:
        for o in v["orders"]:
            if isinstance(o, Mapping) and isinstance(o.get("first"), str) and o["first"] not in names:
                names.append(o["first"])
    a = names[0] if names else "A"
    b = names[1] if len(names) > 1 else "B"
    wins_a = sum(1 for v in verdicts if v["winner"] == a)
    wins_b = sum(1 for v in verdicts if v["winner"] == b)
    n = len(verdicts)
    ties = n - wins_a - wins_b
    consistent = sum(1 for v in verdicts if v.get("consistent") is True)
    decided = [
        w
        for v in verdicts
        for o in v["orders"]
        if isinstance(o, Mapping) and (w := _first_won(o)) is not None
    ]
    first = sum(decided)
    half = wins_a + ties / 2
    return PairwiseReliability(
        a=a,
        b=b,
        items=n,
        wins_a=wins_a,
        wins_b=wins_b,
        ties=ties,
        win_rate_a=half / n,
        win_rate_a_ci95=wilson_ci95(half, n),
        consistent=consistent,
        consistency=consistent / n,
        consistency_ci95=wilson_ci95(consistent, n),
        decided_orders=len(decided),
        first_wins=first,
        first_position_share=first / len(decided) if decided else None,
        first_position_ci95=wilson_ci95(first, len(decided)),
    )


@frozen(kw_only=True)
class JudgeScore:
    model: str
    n: int
    score: NumericStats | LabelStats | None

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "score": self.score.to_json() if self.score else None}


@frozen(kw_only=True)
class PanelReliability:
    """`--judge MODEL` (repeated): each judge's score and how much the judges agree."""

    judges: tuple[JudgeScore, ...]
    items: int  # items with a verdict from at least two judges
    statistic: str  # "cohen_kappa" for two judges, "krippendorff_alpha" for more
    agreement: float | None
    weights: str | None  # "quadratic" for a two-judge kappa over numbers
    level: str

    def to_json(self) -> dict[str, Any]:
        return {
            "judges": [j.to_json() for j in self.judges],
            "items": self.items,
            "statistic": self.statistic,
            "agreement": self.agreement,
            "kappa_weights": self.weights,
            "alpha_level": self.level,
        }


def panel_reliability(records: Sequence[Mapping[str, Any]], field: str | None) -> PanelReliability | None:
    """The panel's figures; None when no record carries `judges`."""
    panels = [r["judges"] for r in records if isinstance(r.get("judges"), Mapping)]
    if not panels:
        return None
    models = sorted({str(m) for p in panels for m in p})
    units = [[_value(p.get(m), field) for m in models] for p in panels]
    coded, level = _codes(units)
    judges = []
    for k, m in enumerate(models):
        values = [u[k] for u in coded if u[k] is not None]
        stats = describe_numeric(values) if level == "interval" else describe_labels(values)
        judges.append(JudgeScore(model=m, n=len(values), score=stats))
    both = [u for u in coded if sum(v is not None for v in u) >= 2]
    if len(models) == 2:
        pairs = [u for u in both if None not in u]
        numeric = level == "interval"
        values: tuple[list[Any], list[Any]] = (
            [int(u[0]) if numeric and u[0].is_integer() else u[0] for u in pairs],
            [int(u[1]) if numeric and u[1].is_integer() else u[1] for u in pairs],
        )
        kappa = cohen_kappa(*values, weighted=numeric) if pairs else None
        return PanelReliability(
            judges=tuple(judges),
            items=len(pairs),
            statistic="cohen_kappa",
            agreement=kappa,
            weights="quadratic" if numeric else None,
            level=level,
        )
    return PanelReliability(
        judges=tuple(judges),
        items=len(both),
        statistic="krippendorff_alpha",
        agreement=krippendorff_alpha(coded, level=level),
        weights=None,
        level=level,
    )


@frozen(kw_only=True)
class Designs:
    """What each design the records carry buys (None for a design the job did not use)."""

    samples: SampleReliability | None = None
    pairwise: PairwiseReliability | None = None
    panel: PanelReliability | None = None

    @property
    def any(self) -> bool:
        return any(x is not None for x in (self.samples, self.pairwise, self.panel))

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.samples is not None:
            out["samples"] = self.samples.to_json()
        if self.pairwise is not None:
            out["pairwise"] = self.pairwise.to_json()
        if self.panel is not None:
            out["panel"] = self.panel.to_json()
        return out


def designs_of(records: Sequence[Mapping[str, Any]], field: str | None) -> Designs:
    return Designs(
        samples=sample_reliability(records, field),
        pairwise=pairwise_reliability(records),
        panel=panel_reliability(records, field),
    )
