"""judgecore.summary.stats against well-kept libraries as oracles (scipy, scikit-learn, statistics).

scipy and scikit-learn are imported inside the tests that use them (about 2 s of imports), so that a
run of any other test does not pay for them at collection."""

from __future__ import annotations

import math
import statistics
import warnings

from hypothesis import given
from hypothesis import strategies as st

from judgecore.summary.stats import (
    cohen_kappa,
    confusion,
    describe_labels,
    describe_numeric,
    histogram,
    mean_ci95,
    pearson,
    spearman,
    t_quantile,
    wilson_ci95,
)

close = lambda a, b: math.isclose(a, b, rel_tol=1e-7, abs_tol=1e-9)  # noqa: E731

scores = st.lists(st.integers(1, 5), min_size=2, max_size=60)
reals = st.lists(st.floats(-100, 100, allow_nan=False).map(lambda x: round(x, 3)), min_size=2, max_size=60)


@given(st.floats(0.51, 0.9999), st.integers(1, 400))
def test_t_quantile_agrees_with_scipy(p, df):
    from scipy import stats as sps

    assert math.isclose(sps.t.ppf(p, df), t_quantile(p, df), rel_tol=1e-8)


@given(reals)
def test_mean_interval_agrees_with_scipy_t_interval(values):
    from scipy import stats as sps

    got = mean_ci95(values)
    if statistics.stdev(values) == 0:
        assert got is not None and close(got[0], got[1])
        return
    lo, hi = sps.t.interval(0.95, len(values) - 1, loc=statistics.fmean(values), scale=sps.sem(values))
    assert got is not None and close(lo, got[0]) and close(hi, got[1])


@given(reals)
def test_median_spread_and_quartiles_agree_with_statistics(values):
    import numpy as np

    d = describe_numeric(values)
    assert d is not None
    assert close(statistics.median(values), d.median)
    assert close(statistics.stdev(values), d.sd or 0.0)
    assert close(float(np.percentile(values, 25)), d.q1) and close(float(np.percentile(values, 75)), d.q3)
    assert len(values) == sum(b.n for b in d.histogram)


def test_a_rating_scale_gets_one_bin_per_value():
    assert [(1, 2), (3, 1), (5, 1)] == [(b.lo, b.n) for b in histogram([1, 1, 3, 5])]


@given(st.integers(0, 200), st.integers(1, 200))
def test_wilson_interval_agrees_with_scipy(k, n):
    from scipy import stats as sps

    k = min(k, n)
    ci = sps.binomtest(k, n).proportion_ci(0.95, method="wilson")
    got = wilson_ci95(k, n)
    assert (
        got is not None
        and math.isclose(ci.low, got[0], abs_tol=1e-9)
        and math.isclose(ci.high, got[1], abs_tol=1e-9)
    )


@given(st.lists(st.sampled_from(["PASS", "FAIL", "PARTIAL"]), min_size=1, max_size=40))
def test_label_shares_count_every_value(values):
    d = describe_labels(values)
    assert d is not None and len(values) == sum(c for _, c in d.counts)


@given(st.data())
def test_unweighted_kappa_agrees_with_sklearn(data):
    from sklearn.metrics import cohen_kappa_score

    a = data.draw(st.lists(st.sampled_from("abc"), min_size=2, max_size=50))
    b = data.draw(st.lists(st.sampled_from("abc"), min_size=len(a), max_size=len(a)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(a, b)
    got = cohen_kappa(a, b)
    assert (got is None and math.isnan(expected)) or close(expected, got)


@given(st.data())
def test_quadratic_kappa_on_values_agrees_with_sklearn_over_the_full_scale(data):
    from sklearn.metrics import cohen_kappa_score

    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(1, 5), min_size=len(a), max_size=len(a)))
    lo, hi = min(a + b), max(a + b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = cohen_kappa_score(a, b, weights="quadratic", labels=list(range(lo, hi + 1)))
    got = cohen_kappa(a, b, weighted=True)
    assert (got is None and math.isnan(expected)) or close(expected, got)


@given(st.data())
def test_confusion_matrix_agrees_with_sklearn(data):
    from sklearn.metrics import confusion_matrix

    a = data.draw(scores)
    b = data.draw(st.lists(st.integers(1, 5), min_size=len(a), max_size=len(a)))
    labels, matrix = confusion(a, b)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = confusion_matrix(a, b, labels=list(labels)).tolist()
    assert expected == [list(r) for r in matrix]


@given(st.data())
def test_correlations_agree_with_scipy(data):
    from scipy import stats as sps

    x = data.draw(reals)
    y = data.draw(st.lists(st.integers(0, 10).map(float), min_size=len(x), max_size=len(x)))
    if len(set(x)) < 2 or len(set(y)) < 2:
        assert (None, None) == (pearson(x, y), spearman(x, y))
        return
    assert math.isclose(sps.pearsonr(x, y).statistic, pearson(x, y), abs_tol=1e-9)
    assert math.isclose(sps.spearmanr(x, y).statistic, spearman(x, y), abs_tol=1e-9)
