"""The design statistics and group differences, each held to an independent library on generated data:
`krippendorff` (alpha), scikit-learn (kappa), scipy (Welch's interval, Wilson intervals by root-finding)."""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from judgecore.summary.compare import differences, newcombe_ci95, welch_ci95
from judgecore.summary.reliability import (
    designs_of,
    krippendorff_alpha,
    pairwise_reliability,
    panel_reliability,
    sample_reliability,
)
from judgecore.summary.stats import wilson_ci95

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])

units_of_labels = st.lists(
    st.lists(st.one_of(st.none(), st.sampled_from(["A", "B", "C"])), min_size=3, max_size=3),
    min_size=2,
    max_size=25,
)
units_of_numbers = st.lists(
    st.lists(st.one_of(st.none(), st.integers(1, 7)), min_size=4, max_size=4), min_size=2, max_size=25
)


def _oracle_alpha(units, level):
    import krippendorff
    import numpy as np

    codes = {v: i for i, v in enumerate(sorted({str(v) for u in units for v in u if v is not None}))}
    data = np.array(
        [
            [
                np.nan if u[k] is None else (float(u[k]) if level == "interval" else codes[str(u[k])])
                for u in units
            ]
            for k in range(len(units[0]))
        ],
        dtype=float,
    )
    return krippendorff.alpha(reliability_data=data, level_of_measurement=level)


def _defined(units) -> bool:
    pairable = [v for u in units if sum(x is not None for x in u) >= 2 for v in u if v is not None]
    return len(set(pairable)) >= 2


@FAST
@given(units_of_labels)
def test_nominal_alpha_is_krippendorffs(units):
    assume(_defined(units))
    assert _oracle_alpha(units, "nominal") == pytest.approx(
        krippendorff_alpha(units, level="nominal"), abs=1e-9
    )


@FAST
@given(units_of_numbers)
def test_interval_alpha_is_krippendorffs(units):
    assume(_defined(units))
    assert _oracle_alpha(units, "interval") == pytest.approx(
        krippendorff_alpha(units, level="interval"), abs=1e-9
    )


def test_alpha_is_undefined_without_two_distinct_pairable_values():
    assert krippendorff_alpha([["A", "A"], ["A", None]]) is None
    assert krippendorff_alpha([["A", None], ["B", None]]) is None


def _sample_record(values, agreement):
    return {
        "custom_id": "c",
        "samples": [
            {"status": "succeeded", "text": "t", "verdict": None if v is None else {"score": v}}
            for v in values
        ],
        "agreement": agreement,
    }


@FAST
@given(units_of_numbers, st.lists(st.floats(0, 1), min_size=2, max_size=25))
def test_samples_report_the_mean_agreement_and_the_interval_alpha_over_samples(units, agreements):
    assume(_defined(units))
    records = [_sample_record(u, a) for u, a in zip(units, agreements, strict=False)]
    got = sample_reliability(records, "score")
    kept = units[: len(records)]
    assume(_defined(kept))
    assert "interval" == got.level
    assert _oracle_alpha(kept, "interval") == pytest.approx(got.alpha, abs=1e-9)
    assert sum(agreements[: len(records)]) / len(records) == pytest.approx(got.mean_agreement)


def test_a_job_without_designs_reports_none_of_them():
    d = designs_of([{"custom_id": "c", "verdict": {"score": 3}, "status": "succeeded"}], "score")
    assert (None, None, None) == (d.samples, d.pairwise, d.panel)
    assert {} == d.to_json()


def _wilson_by_root_finding(k, n):
    """The Wilson interval as the set of p that the score test does not reject (scipy's brentq)."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    z, phat = norm.ppf(0.975), k / n

    def below(p):
        return (phat - p) - z * math.sqrt(p * (1 - p) / n)

    def above(p):
        return (p - phat) - z * math.sqrt(p * (1 - p) / n)

    lo = 0.0 if phat == 0 else brentq(below, 1e-15, phat - 1e-12)
    hi = 1.0 if phat == 1 else brentq(above, phat + 1e-12, 1 - 1e-15)
    return lo, hi


orders = st.sampled_from(["A", "B", "tie"])


@FAST
@given(st.lists(st.tuples(orders, orders), min_size=1, max_size=60))
def test_pairwise_win_rate_consistency_and_first_position_share(pairs):
    """Order 1 shows A first, order 2 shows B first; agreeing orders name the winner, others tie."""
    records = []
    for c1, c2 in pairs:
        winner = c1 if c1 == c2 else "tie"
        records.append(
            {
                "custom_id": "x",
                "verdict": {
                    "winner": winner,
                    "consistent": c1 == c2,
                    "orders": [{"first": "A", "choice": c1}, {"first": "B", "choice": c2}],
                },
            }
        )
    got = pairwise_reliability(records)
    n = len(pairs)
    wins = sum(1 for c1, c2 in pairs if c1 == c2 == "A")
    ties = sum(1 for c1, c2 in pairs if c1 != c2 or c1 == "tie")
    assert (wins + ties / 2) / n == pytest.approx(got.win_rate_a)
    assert _wilson_by_root_finding(wins + ties / 2, n) == pytest.approx(got.win_rate_a_ci95, abs=1e-7)
    assert sum(c1 == c2 for c1, c2 in pairs) / n == pytest.approx(got.consistency)
    decided = [c == first for c1, c2 in pairs for c, first in ((c1, "A"), (c2, "B")) if c != "tie"]
    if decided:
        assert sum(decided) / len(decided) == pytest.approx(got.first_position_share)
        assert _wilson_by_root_finding(sum(decided), len(decided)) == pytest.approx(
            got.first_position_ci95, abs=1e-7
        )
    else:
        assert got.first_position_share is None


@FAST
@given(st.lists(st.tuples(st.sampled_from("xyz"), st.sampled_from("xyz")), min_size=2, max_size=40))
def test_a_two_judge_panel_agrees_by_cohens_kappa(pairs):
    from sklearn.metrics import cohen_kappa_score

    assume(len({v for p in pairs for v in p}) >= 2)
    records = [{"custom_id": "c", "judges": {"m1": {"score": a}, "m2": {"score": b}}} for a, b in pairs]
    got = panel_reliability(records, "score")
    expected = cohen_kappa_score([a for a, _ in pairs], [b for _, b in pairs])
    assume(not math.isnan(expected))
    assert "cohen_kappa" == got.statistic
    assert expected == pytest.approx(got.agreement, abs=1e-9)
    assert ["m1", "m2"] == [j.model for j in got.judges]


@FAST
@given(units_of_numbers)
def test_a_panel_of_more_judges_agrees_by_interval_alpha_and_scores_each_judge(units):
    assume(_defined(units))
    models = ["a", "b", "c", "d"]
    records = [
        {
            "custom_id": "c",
            "judges": {m: (None if v is None else {"score": v}) for m, v in zip(models, u, strict=True)},
        }
        for u in units
    ]
    got = panel_reliability(records, "score")
    assert "krippendorff_alpha" == got.statistic
    assert _oracle_alpha(units, "interval") == pytest.approx(got.agreement, abs=1e-9)
    for k, judge in enumerate(got.judges):
        values = [u[k] for u in units if u[k] is not None]
        assert len(values) == judge.n
        if values:
            assert sum(values) / len(values) == pytest.approx(judge.score.mean)


samples_of_scores = st.lists(
    st.floats(-50, 50, allow_nan=False).map(lambda x: round(x, 2)), min_size=2, max_size=40
)


@FAST
@given(samples_of_scores, samples_of_scores)
@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # scipy on nearly identical values
def test_the_group_difference_interval_is_welchs_as_scipy_computes_it(first, second):
    from scipy import stats

    assume(len(set(first)) > 1 or len(set(second)) > 1)
    res = stats.ttest_ind(second, first, equal_var=False).confidence_interval(0.95)
    assert (res.low, res.high) == pytest.approx(welch_ci95(first, second), rel=1e-6, abs=1e-6)
    (d,) = differences([("a", first, len(first) + 3), ("b", second, len(second))], numeric=True)
    assert sum(second) / len(second) - sum(first) / len(first) == pytest.approx(d.estimate)
    assert len(first) + len(second) == d.n
    assert d.n / (d.n + 3) == pytest.approx(d.share_of_items)


def _scipy_wilson(k, n):
    from scipy.stats import binomtest

    ci = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    return ci.low, ci.high


@FAST
@given(
    st.integers(1, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
    st.integers(1, 80).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))),
)
def test_the_difference_of_shares_is_newcombes_from_scipys_wilson_intervals(a, b):
    (k1, n1), (k2, n2) = a, b
    assert _scipy_wilson(k1, n1) == pytest.approx(wilson_ci95(k1, n1), abs=1e-9)
    (l1, u1), (l2, u2) = _scipy_wilson(k1, n1), _scipy_wilson(k2, n2)
    p1, p2 = k1 / n1, k2 / n2
    expected = (p2 - p1 - math.hypot(p2 - l2, u1 - p1), p2 - p1 + math.hypot(u2 - p2, p1 - l1))
    assert expected == pytest.approx(newcombe_ci95(k1, n1, k2, n2), abs=1e-9)


def test_label_differences_are_one_per_label_and_pair():
    got = differences([("a", ["pass", "fail", "pass"], 3), ("b", ["fail"], 2), ("c", [], 1)], numeric=False)
    assert [("a", "b", "fail"), ("a", "b", "pass")] == [(d.first, d.second, d.label) for d in got]
    assert pytest.approx(1 - 1 / 3) == got[0].estimate


def _pair(winner):
    return {"winner": winner, "consistent": True, "orders": [{"first": "a", "choice": winner}] * 2}


@FAST
@given(units_of_labels)
def test_pairwise_samples_and_panels_are_measured_on_their_winners(units):
    """A pairwise verdict has no score field: its samples and its judges agree on the winner (as
    `summary` scores the item), not on a field no pairwise verdict holds."""
    assume(_defined(units))
    as_winner = [[None if v is None else {"A": "a", "B": "b", "C": "tie"}[v] for v in u] for u in units]
    samples = [
        {"custom_id": "c", "samples": [{"status": "succeeded", "verdict": v and _pair(v)} for v in u]}
        for u in as_winner
    ]
    got = sample_reliability(samples, "score")
    assert _oracle_alpha(as_winner, "nominal") == pytest.approx(got.alpha, abs=1e-9)
    panels = [
        {"custom_id": "c", "judges": {f"m{k}": v and _pair(v) for k, v in enumerate(u)}} for u in as_winner
    ]
    panel = panel_reliability(panels, "score")
    assert _oracle_alpha(as_winner, "nominal") == pytest.approx(panel.agreement, abs=1e-9)
    for k, judge in enumerate(panel.judges):
        assert sum(u[k] is not None for u in as_winner) == judge.n


def test_the_sample_figures_say_how_many_items_and_samples_they_are_over():
    """An item the judge refused has samples but no agreement: the mean is over the other items, and
    the text says so rather than counting every item."""
    from judgecore.summary.text import design_rows

    records = [
        _sample_record([3, 3, 4], 2 / 3),
        _sample_record([5, 5, 5], 1.0),
        _sample_record([None] * 3, None),
    ]
    got = sample_reliability(records, "score")
    assert (3, 9, 2, 6) == (got.items, got.samples, got.agreement_items, got.scored_samples)
    assert (2 / 3 + 1.0) / 2 == pytest.approx(got.mean_agreement)
    rows = {figure: detail for _, figure, _, detail in design_rows(designs_of(records, "score"))}
    assert "2 of 3 items" == rows["mean agreement of the samples"]
    assert "6 of 9 samples" == rows["Krippendorff's alpha (interval)"]
    whole = sample_reliability(records[:2], "score")
    assert (
        "2 items"
        == {f: d for _, f, _, d in design_rows(designs_of(records[:2], "score"))}[
            "mean agreement of the samples"
        ]
    )
    assert (2, 6) == (whole.agreement_items, whole.scored_samples)
