"""Tests for hir_sdk.evaluation.metrics: literal values, scikit-learn agreement, validation."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm

from hir_sdk.evaluation.metrics import (
    ReliabilityBins,
    binary_entropy,
    calibration,
    gauc,
    lift_curve,
    log_loss,
    ndcg_at_k,
    normalized_entropy,
    pr_auc,
    recall_at_k,
    reliability_bins,
    roc_auc,
)

approx = pytest.approx

# --------------------------------------------------------------------------- literal values


def test_log_loss_literal() -> None:
    # -(ln 0.8 + ln 0.6) / 2 = (0.2231435513 + 0.5108256238) / 2
    assert log_loss([1, 0], [0.8, 0.4]) == approx(0.3669845876)
    # weights 3, 1: (3 * 0.2231435513 + 0.5108256238) / 4
    assert log_loss([1, 0], [0.8, 0.4], weights=[3, 1]) == approx(0.2950640694)
    # p = 0 for a positive is clipped to eps: -ln(1e-7) = 16.1180956510
    assert log_loss([0, 1], [1.0, 0.0]) == approx(16.1180956510)
    assert log_loss([1], [0.0], eps=1e-3) == approx(-math.log(1e-3))


def test_binary_entropy_literal() -> None:
    assert binary_entropy(0.5) == approx(math.log(2))
    # -(0.25 ln 0.25 + 0.75 ln 0.75) = 0.3465735903 + 0.2157615543
    assert binary_entropy(0.25) == approx(0.5623351446)
    assert binary_entropy(0.0) == 0.0
    assert binary_entropy(1) == 0.0


def test_normalized_entropy_literal() -> None:
    # Predicting the base rate 0.25 everywhere: log loss = H(0.25), so NE = 1.
    assert normalized_entropy([1, 0, 0, 0], [0.25] * 4) == approx(1.0)
    # p = 0.5 everywhere: ln 2 / H(0.25) = 0.6931471806 / 0.5623351446
    assert normalized_entropy([1, 0, 0, 0], [0.5] * 4) == approx(1.2326229068)
    # explicit base rate 0.5: ln 2 / ln 2
    assert normalized_entropy([1, 0, 0, 0], [0.5] * 4, base_rate=0.5) == approx(1.0)
    # weighted base rate: weights 3,1,1,1 give rate 3/6 = 0.5, log loss = ln 2 -> NE = 1
    assert normalized_entropy([1, 0, 0, 0], [0.5] * 4, weights=[3, 1, 1, 1]) == approx(1.0)
    assert math.isnan(normalized_entropy([1, 1], [0.3, 0.9]))


def test_roc_auc_literal_with_ties() -> None:
    y = [0, 0, 1, 1, 0, 1]
    p = [0.1, 0.4, 0.35, 0.8, 0.4, 0.4]
    # positives 0.35, 0.8, 0.4 vs negatives 0.1, 0.4, 0.4:
    # 0.35 -> 1 + 0 + 0; 0.8 -> 3; 0.4 -> 1 + 0.5 + 0.5 (ties); total 6 / 9
    assert roc_auc(y, p) == approx(6 / 9)
    # weight 3 on the negative at 0.1: negatives weigh 5, positives 3.
    # 0.35 -> 3; 0.8 -> 3 + 1 + 1; 0.4 -> 3 + 0.5 + 0.5; total 12 / 15
    assert roc_auc(y, p, weights=[3, 1, 1, 1, 1, 1]) == approx(0.8)
    assert roc_auc([0, 1], [0.5, 0.5]) == approx(0.5)
    assert math.isnan(roc_auc([1, 1, 1], [0.1, 0.2, 0.3]))
    assert math.isnan(roc_auc([0, 1], [0.1, 0.2], weights=[1, 0]))


def test_pr_auc_literal() -> None:
    # descending: 0.9(+) P=1 R=.5; 0.8(-) P=.5 R=.5; 0.7(+) P=2/3 R=1; 0.1(-) P=.5 R=1
    # AP = 0.5 * 1 + 0.5 * 2/3 = 0.8333...
    assert pr_auc([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1]) == approx(5 / 6)
    # tie at 0.5 is one threshold: P=1/2 R=1/2; then 0.2: P=2/3 R=1 -> 1/4 + 1/3
    assert pr_auc([1, 0, 1], [0.5, 0.5, 0.2]) == approx(7 / 12)
    # weight 3 on the first positive: 0.9 P=1 R=3/4; 0.8 no gain; 0.7 P=4/5 R=1
    # AP = 3/4 * 1 + 1/4 * 4/5 = 0.95
    assert pr_auc([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], weights=[3, 1, 1, 1]) == approx(0.95)
    assert math.isnan(pr_auc([0, 0], [0.1, 0.2]))


def test_calibration_literal() -> None:
    # (0.5 + 0.5 + 0.2 + 0.2) / 2 = 0.7
    assert calibration([1, 0, 0, 1], [0.5, 0.5, 0.2, 0.2]) == approx(0.7)
    # weights 2,1,1,1: (1.0 + 0.5 + 0.2 + 0.2) / (2 + 1) = 1.9 / 3
    assert calibration([1, 0, 0, 1], [0.5, 0.5, 0.2, 0.2], weights=[2, 1, 1, 1]) == approx(1.9 / 3)
    assert calibration([0, 0], [0.1, 0.2]) == math.inf


def test_gauc_literal() -> None:
    # group a: y 1,0 p .9,.1 -> AUC 1, weight 2
    # group b: y 1,0,0 p .2,.5,.2 -> positive .2 loses to .5, ties .2 -> 0.5 / 2 = 0.25, weight 3
    # group c: only positives -> skipped
    # GAUC = (2 * 1 + 3 * 0.25) / 5 = 0.55
    y = [0, 1, 1, 1, 0, 0, 1]
    p = [0.5, 0.9, 0.7, 0.2, 0.1, 0.2, 0.3]
    g = ["b", "a", "c", "b", "a", "b", "c"]
    assert gauc(y, p, g) == approx(0.55)
    # weight 3 on a's negative: a weighs 4 -> (4 * 1 + 3 * 0.25) / 7
    w = [1, 1, 1, 1, 3, 1, 1]
    assert gauc(y, p, g, weights=w) == approx(4.75 / 7)
    assert math.isnan(gauc([1, 0], [0.3, 0.4], [1, 2]))


def test_recall_at_k_literal() -> None:
    retrieved = [[1, 2, 3], [4, 5, 6], [7]]
    relevant = [{1, 3, 9}, {6}, set()]
    # k=2: q1 {1,2} & {1,3,9} = 1 -> 1/3; q2 {4,5} -> 0/1; q3 has no relevant, skipped -> 1/6
    assert recall_at_k(retrieved, relevant, 2) == approx(1 / 6)
    # k=3: q1 2/3, q2 1/1 -> 5/6 (the denominator is |relevant| = 3, not min(k, 3))
    assert recall_at_k(retrieved, relevant, 3) == approx(5 / 6)
    # k=1, |relevant| = 3: 1/3, not 1/min(1, 3) = 1
    assert recall_at_k([[1, 2]], [[1, 3, 9]], 1) == approx(1 / 3)
    # a repeated item is counted once
    assert recall_at_k([[1, 1]], [{1, 2}], 2) == approx(0.5)
    assert math.isnan(recall_at_k([[1]], [set()], 1))


def test_ndcg_at_k_literal() -> None:
    # q1: hits at ranks 0 and 2 -> DCG = 1/log2(2) + 1/log2(4) = 1.5
    #     ideal with min(3, 3) = 3 hits: 1 + 1/log2(3) + 1/2 = 2.1309297536 -> 0.7039180890
    # q2: hit at rank 2 -> 0.5; ideal 1 -> 0.5; mean = 0.6019590445
    retrieved = [[1, 2, 3], [4, 5, 6], [7]]
    relevant = [{1, 3, 9}, {6}, set()]
    assert ndcg_at_k(retrieved, relevant, 3) == approx(0.6019590445)
    assert ndcg_at_k([[1, 2]], [{1, 2, 3}], 2) == approx(1.0)
    # duplicate relevant item counts once: 1 / (1 + 1/log2(3)) = 1 / 1.6309297536
    assert ndcg_at_k([[1, 1]], [{1, 2}], 2) == approx(0.6131471928)
    assert math.isnan(ndcg_at_k([[1]], [[]], 1))


def test_reliability_bins_literal() -> None:
    # quantile, 2 bins: edges (min .1, weighted median .2, max .4); bins [.1,.2] and (.2,.4]
    bins = reliability_bins([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], n_bins=2)
    assert isinstance(bins, ReliabilityBins)
    np.testing.assert_allclose(bins.lower, [0.1, 0.2])
    np.testing.assert_allclose(bins.upper, [0.2, 0.4])
    np.testing.assert_allclose(bins.mean_predicted, [0.15, 0.35])
    np.testing.assert_allclose(bins.observed_rate, [0.0, 1.0])
    np.testing.assert_allclose(bins.weight, [2, 2])
    # weights 3,1,1,1: half of the weight (3) is reached at p = .1 -> bins {.1} and {.2,.3,.4}
    bins = reliability_bins([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4], n_bins=2, weights=[3, 1, 1, 1])
    np.testing.assert_allclose(bins.weight, [3, 3])
    np.testing.assert_allclose(bins.mean_predicted, [0.1, 0.3])  # (.2 + .3 + .4) / 3
    np.testing.assert_allclose(bins.observed_rate, [0.0, 2 / 3])
    # uniform, 4 bins on [0, 1]: (0,.25] {.05,.1}; (.25,.5] empty, dropped; (.5,.75] {.6,.65}; ...
    bins = reliability_bins(
        [0, 1, 1, 0, 1], [0.05, 0.1, 0.6, 0.65, 0.9], n_bins=4, strategy="uniform"
    )
    np.testing.assert_allclose(bins.lower, [0.0, 0.5, 0.75])
    np.testing.assert_allclose(bins.upper, [0.25, 0.75, 1.0])
    np.testing.assert_allclose(bins.mean_predicted, [0.075, 0.625, 0.9])
    np.testing.assert_allclose(bins.observed_rate, [0.5, 0.5, 1.0])
    np.testing.assert_allclose(bins.weight, [2, 2, 1])


def test_lift_curve_literal() -> None:
    # descending .9(+) .8(-) .7(+) .1(-): after 0,1,2,3,4 of 4 examples: 0, 1/2, 1/2, 1, 1
    x, c = lift_curve([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], n_points=5)
    np.testing.assert_allclose(x, [0, 0.25, 0.5, 0.75, 1])
    np.testing.assert_allclose(c, [0, 0.5, 0.5, 1, 1])
    # one tie block: linear from (0,0) to (1,1)
    x, c = lift_curve([1, 0], [0.5, 0.5], n_points=3)
    np.testing.assert_allclose(c, [0, 0.5, 1])
    # weight 3 on the top positive: x knots 0, 3/6, 4/6, 5/6, 1; capture 0, 3/4, 3/4, 1, 1
    x, c = lift_curve([1, 0, 1, 0], [0.9, 0.8, 0.7, 0.1], n_points=3, weights=[3, 1, 1, 1])
    np.testing.assert_allclose(c, [0, 0.75, 1])
    x, c = lift_curve([0, 0], [0.1, 0.2], n_points=4)
    assert len(x) == 4 and np.isnan(c).all()


# --------------------------------------------------------------------------- scikit-learn


def _random_case(rng: np.random.Generator, n: int, ties: bool):
    y = rng.integers(0, 2, n)
    y[:2] = [0, 1]
    p = rng.uniform(0.01, 0.99, n)
    if ties:
        p = np.round(p, 1).clip(0.05, 0.95)
    w = rng.integers(0, 4, n)
    w[:2] = [1, 2]
    return y, p, w


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("ties", [False, True])
def test_agrees_with_sklearn(seed: int, ties: bool) -> None:
    rng = np.random.default_rng(seed)
    y, p, w = _random_case(rng, 300, ties)
    assert log_loss(y, p) == approx(skm.log_loss(y, p))
    assert log_loss(y, p, weights=w) == approx(skm.log_loss(y, p, sample_weight=w))
    assert roc_auc(y, p) == approx(skm.roc_auc_score(y, p))
    assert roc_auc(y, p, weights=w) == approx(skm.roc_auc_score(y, p, sample_weight=w))
    assert pr_auc(y, p) == approx(skm.average_precision_score(y, p))
    assert pr_auc(y, p, weights=w) == approx(skm.average_precision_score(y, p, sample_weight=w))
    # float weights too
    wf = rng.uniform(0, 2, len(y))
    assert roc_auc(y, p, weights=wf) == approx(skm.roc_auc_score(y, p, sample_weight=wf))
    assert pr_auc(y, p, weights=wf) == approx(skm.average_precision_score(y, p, sample_weight=wf))


@pytest.mark.parametrize("seed", range(3))
def test_integer_weights_equal_duplicated_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    y, p, w = _random_case(rng, 200, ties=True)
    yr, pr = np.repeat(y, w), np.repeat(p, w)
    g = rng.integers(0, 10, len(y))
    gr = np.repeat(g, w)
    for fn in (log_loss, normalized_entropy, roc_auc, pr_auc, calibration):
        assert fn(y, p, weights=w) == approx(fn(yr, pr)), fn.__name__
    assert gauc(y, p, g, weights=w) == approx(gauc(yr, pr, gr))
    np.testing.assert_allclose(lift_curve(y, p, weights=w)[1], lift_curve(yr, pr)[1])
    for strategy in ("quantile", "uniform"):
        a = reliability_bins(y, p, weights=w, strategy=strategy)
        b = reliability_bins(yr, pr, strategy=strategy)
        for field in ("lower", "upper", "mean_predicted", "observed_rate", "weight"):
            np.testing.assert_allclose(getattr(a, field), getattr(b, field))


@st.composite
def _cases(draw):
    n = draw(st.integers(2, 40))
    y = draw(st.lists(st.integers(0, 1), min_size=n, max_size=n))
    levels = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    w = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    y[:2], w[0], w[1] = [0, 1], max(w[0], 1), max(w[1], 1)
    p = (np.array(levels) + 0.5) / 10  # ten levels in (0, 1), so ties are common
    return np.array(y), p, np.array(w)


@settings(max_examples=50, deadline=None)
@given(_cases())
def test_property_agrees_with_sklearn(case) -> None:
    y, p, w = case
    assert log_loss(y, p, weights=w) == approx(skm.log_loss(y, p, sample_weight=w))
    assert roc_auc(y, p, weights=w) == approx(skm.roc_auc_score(y, p, sample_weight=w))
    assert pr_auc(y, p, weights=w) == approx(skm.average_precision_score(y, p, sample_weight=w))
    assert roc_auc(np.repeat(y, w), np.repeat(p, w)) == approx(roc_auc(y, p, weights=w))
    bins = reliability_bins(y, p, weights=w, n_bins=4)
    assert bins.weight.sum() == approx(w.sum())
    assert np.sum(bins.weight * bins.mean_predicted) == approx(np.sum(w * p))
    assert np.all(bins.lower <= bins.upper)
    x, c = lift_curve(y, p, weights=w, n_points=11)
    assert c[0] == 0 and c[-1] == approx(1) and np.all(np.diff(c) >= -1e-12)


# --------------------------------------------------------------------------- gauc reference


def _gauc_reference(y, p, g, w) -> float:
    total, weight = 0.0, 0.0
    for key in np.unique(g):
        m = g == key
        if w[m][y[m] == 1].sum() > 0 and w[m][y[m] == 0].sum() > 0:
            total += w[m].sum() * skm.roc_auc_score(y[m], p[m], sample_weight=w[m])
            weight += w[m].sum()
    return total / weight


@pytest.mark.parametrize("seed", range(3))
def test_gauc_matches_per_group_loop(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 1000
    y = rng.integers(0, 2, n)
    p = np.round(rng.uniform(0, 1, n) + 0.3 * y, 1)
    g = rng.integers(0, 30, n)
    w = rng.uniform(0, 2, n)
    assert gauc(y, p, g) == approx(_gauc_reference(y, p, g, np.ones(n)))
    assert gauc(y, p, g, weights=w) == approx(_gauc_reference(y, p, g, w))
    assert gauc(y, p, g.astype(str)) == approx(gauc(y, p, g))


def test_gauc_fast_for_many_groups() -> None:
    rng = np.random.default_rng(0)
    n = 400_000
    y = rng.integers(0, 2, n)
    p = rng.uniform(0, 1, n) + 0.5 * y
    g = rng.integers(0, 100_000, n)
    start = time.perf_counter()
    value = gauc(y, p, g)
    assert time.perf_counter() - start < 2.0
    assert 0.5 < value < 1.0


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("y", "p", "w", "match"),
    [
        ([0, 1], [0.5], None, "same length"),
        ([], [], None, "non-empty"),
        ([0, 2], [0.1, 0.2], None, "0 or 1"),
        ([0, np.nan], [0.1, 0.2], None, "0 or 1"),
        (["0", "1"], [0.1, 0.2], None, "0 or 1"),
        ([0, 1], [0.1, np.nan], None, "finite"),
        ([0, 1], [0.1, np.inf], None, "finite"),
        ([[0, 1]], [[0.1, 0.2]], None, "1-D"),
        ([0, 1], [0.1, 0.2], [1.0], "length 2"),
        ([0, 1], [0.1, 0.2], [1.0, -1.0], "non-negative"),
        ([0, 1], [0.1, 0.2], [1.0, np.nan], "non-negative"),
        ([0, 1], [0.1, 0.2], [0, 0], "positive total"),
    ],
)
def test_input_validation(y, p, w, match) -> None:
    for fn in (log_loss, normalized_entropy, roc_auc, pr_auc, calibration, lift_curve):
        with pytest.raises(ValueError, match=match):
            fn(y, p, weights=w)
    with pytest.raises(ValueError, match=match):
        reliability_bins(y, p, weights=w)
    with pytest.raises(ValueError, match=match):
        gauc(y, p, [0] * len(y), weights=w)


def test_argument_validation() -> None:
    with pytest.raises(ValueError, match="rate"):
        binary_entropy(1.5)
    with pytest.raises(ValueError, match="eps"):
        log_loss([0, 1], [0.1, 0.2], eps=0.0)
    with pytest.raises(ValueError, match="rate"):
        normalized_entropy([0, 1], [0.1, 0.2], base_rate=-0.1)
    with pytest.raises(ValueError, match="groups"):
        gauc([0, 1], [0.1, 0.2], [1])
    with pytest.raises(ValueError, match="n_bins"):
        reliability_bins([0, 1], [0.1, 0.2], n_bins=0)
    with pytest.raises(ValueError, match="strategy"):
        reliability_bins([0, 1], [0.1, 0.2], strategy="kmeans")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        reliability_bins([0, 1], [0.1, 1.2])
    with pytest.raises(ValueError, match="n_points"):
        lift_curve([0, 1], [0.1, 0.2], n_points=1)
    for fn in (recall_at_k, ndcg_at_k):
        with pytest.raises(ValueError, match="k must"):
            fn([[1]], [{1}], 0)
        with pytest.raises(ValueError, match="lengths differ"):
            fn([[1], [2]], [{1}], 1)
