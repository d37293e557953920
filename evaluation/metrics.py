"""Offline ranking metrics as pure, vectorised numpy functions.

Every example-level metric takes labels ``y`` (0/1), predictions ``p`` and optional non-negative
per-example ``weights`` that act exactly like scikit-learn's ``sample_weight``: an integer weight
``k`` gives the same result as repeating the row ``k`` times, so a cluster bootstrap can reweight
examples instead of copying them. Notable points:

* Inputs are validated (1-D, same length, non-empty, labels in {0, 1}, finite predictions,
  finite non-negative weights with a positive total); violations raise ``ValueError``.
  Zero-weight examples are dropped before thresholds, bins or tie blocks are formed.
* ``roc_auc`` and ``gauc`` give tied scores half credit, as ``roc_auc_score`` does; ``pr_auc`` is
  ``average_precision_score`` (tied scores form one threshold, no interpolation).
* Undefined values are not errors: ``roc_auc`` is nan with one class, ``pr_auc`` is nan without
  positives, ``calibration`` is inf without positives, ``normalized_entropy`` is nan when the base
  rate is 0 or 1, and ``gauc`` is nan when no group has both classes.
* ``gauc`` is one lexsort by (group, score) plus ``bincount``s, with no loop over groups.
* ``lift_curve`` is linear across tied scores (expected capture under a random tie-break).
* ``recall_at_k`` divides by ``|relevant|`` (not ``min(k, |relevant|)``); ``ndcg_at_k`` uses
  ``min(k, |relevant|)`` for the ideal DCG. Both skip queries without relevant items and count a
  repeated retrieved item once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike


def _validate(y, p, weights, drop_zero: bool = False) -> tuple[np.ndarray, ...]:
    """Return ``(y, p, w)`` as float64 1-D arrays, or raise ValueError.

    ``drop_zero`` removes zero-weight rows, which must not create thresholds, bins or tie blocks.
    """
    y, p = np.asarray(y), np.asarray(p)
    if y.ndim != 1 or p.ndim != 1:
        raise ValueError(f"y and p must be 1-D, got shapes {y.shape} and {p.shape}")
    if len(y) != len(p):
        raise ValueError(f"y and p must have the same length, got {len(y)} and {len(p)}")
    if len(y) == 0:
        raise ValueError("y and p must be non-empty")
    if y.dtype.kind not in "biuf" or not np.all((y == 0) | (y == 1)):
        raise ValueError("labels y must all be 0 or 1")
    if p.dtype.kind not in "biuf" or not np.all(np.isfinite(p)):
        raise ValueError("predictions p must be finite numbers")
    if weights is None:
        w = np.ones(len(y))
    else:
        w = np.asarray(weights)
        if w.ndim != 1 or len(w) != len(y):
            raise ValueError(f"weights must be 1-D with length {len(y)}, got shape {w.shape}")
        if w.dtype.kind not in "biuf" or not np.all(np.isfinite(w)) or np.any(w < 0):
            raise ValueError("weights must be finite and non-negative")
        w = w.astype(np.float64)
        if w.sum() <= 0:
            raise ValueError("weights must have a positive total")
    keep = w > 0 if drop_zero else slice(None)
    return y[keep].astype(np.float64), p[keep].astype(np.float64), w[keep]


def log_loss(
    y: ArrayLike, p: ArrayLike, *, weights: ArrayLike | None = None, eps: float = 1e-7
) -> float:
    """Mean weighted binary cross-entropy in nats.

    Args:
        y: 0/1 labels.
        p: Predicted probabilities of label 1; clipped to ``[eps, 1 - eps]``.
        weights: Non-negative per-example weights (default all 1).
        eps: Clipping margin, in ``(0, 0.5)``.

    Returns:
        ``-sum(w * (y log p + (1 - y) log(1 - p))) / sum(w)``.
    """
    if not 0 < eps < 0.5:
        raise ValueError(f"eps must be in (0, 0.5), got {eps}")
    y, p, w = _validate(y, p, weights)
    p = np.clip(p, eps, 1 - eps)
    losses = -(y * np.log(p) + (1 - y) * np.log1p(-p))
    return float(np.sum(w * losses) / np.sum(w))


def binary_entropy(rate: float) -> float:
    """Entropy of a Bernoulli(rate) variable in nats.

    Args:
        rate: Probability of label 1, in ``[0, 1]``.

    Returns:
        ``-(r log r + (1 - r) log(1 - r))``; 0 for ``rate`` 0 or 1.
    """
    if not 0 <= rate <= 1:
        raise ValueError(f"rate must be in [0, 1], got {rate}")
    if rate in (0, 1):
        return 0.0
    return float(-(rate * np.log(rate) + (1 - rate) * np.log1p(-rate)))


def normalized_entropy(
    y: ArrayLike, p: ArrayLike, *, weights: ArrayLike | None = None, base_rate: float | None = None
) -> float:
    """Normalized entropy: log loss divided by the entropy of the base rate.

    Args:
        y: 0/1 labels.
        p: Predicted probabilities of label 1.
        weights: Non-negative per-example weights (default all 1).
        base_rate: Rate of the reference predictor; defaults to the weighted mean label.

    Returns:
        ``log_loss / binary_entropy(base_rate)`` (below 1 beats the constant predictor); nan when
        that entropy is 0.
    """
    loss = log_loss(y, p, weights=weights)
    if base_rate is None:
        yy, _, w = _validate(y, p, weights)
        base_rate = float(np.sum(w * yy) / np.sum(w))
    entropy = binary_entropy(base_rate)
    return loss / entropy if entropy > 0 else float("nan")


def _grouped_auc(y, p, w, codes: np.ndarray, n_groups: int):
    """Per-group ROC-AUC with half credit for ties: ``(auc, pos_weight, neg_weight)`` arrays."""
    order = np.lexsort((p, codes))
    y, p, w, codes = y[order], p[order], w[order], codes[order]
    # A block is a run of equal (group, score); its examples are mutually tied.
    starts = np.ones(len(y), dtype=bool)
    starts[1:] = (codes[1:] != codes[:-1]) | (p[1:] != p[:-1])
    block = np.cumsum(starts) - 1
    block_group = codes[starts]
    pos = np.bincount(block, weights=w * y)
    neg = np.bincount(block, weights=w * (1 - y))
    # Negative weight strictly below each block within its group.
    neg_cum = np.cumsum(neg)
    group_pos = np.bincount(block_group, weights=pos, minlength=n_groups)
    group_neg = np.bincount(block_group, weights=neg, minlength=n_groups)
    neg_before_group = np.cumsum(group_neg) - group_neg
    neg_below = neg_cum - neg - neg_before_group[block_group]
    wins = np.bincount(block_group, weights=pos * (neg_below + 0.5 * neg), minlength=n_groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        auc = wins / (group_pos * group_neg)
    return auc, group_pos, group_neg


def roc_auc(y: ArrayLike, p: ArrayLike, *, weights: ArrayLike | None = None) -> float:
    """Weighted ROC-AUC; tied scores get half credit.

    Args:
        y: 0/1 labels.
        p: Scores (higher means more likely positive).
        weights: Non-negative per-example weights (default all 1).

    Returns:
        The weighted probability that a positive outscores a negative, equal to scikit-learn's
        ``roc_auc_score`` with ``sample_weight``; nan if only one class has positive weight.
    """
    y, p, w = _validate(y, p, weights)
    auc, pos, neg = _grouped_auc(y, p, w, np.zeros(len(y), dtype=np.intp), 1)
    return float(auc[0]) if pos[0] > 0 and neg[0] > 0 else float("nan")


def _descending_blocks(y, p, w) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative (total, positive) weight at the end of each tie block, in descending score."""
    order = np.argsort(-p, kind="stable")
    y, p, w = y[order], p[order], w[order]
    last = np.append(p[1:] != p[:-1], True)
    return np.cumsum(w)[last], np.cumsum(w * y)[last]


def pr_auc(y: ArrayLike, p: ArrayLike, *, weights: ArrayLike | None = None) -> float:
    """Average precision (area under the precision-recall curve, step-wise).

    Args:
        y: 0/1 labels.
        p: Scores (higher means more likely positive).
        weights: Non-negative per-example weights (default all 1).

    Returns:
        ``sum_n (R_n - R_{n-1}) P_n`` over distinct score thresholds in descending order, the
        definition of scikit-learn's ``average_precision_score``; nan if there are no positives.
    """
    seen, tp = _descending_blocks(*_validate(y, p, weights, drop_zero=True))
    if tp[-1] <= 0:
        return float("nan")
    precision = tp / seen
    recall_gain = np.diff(tp, prepend=0.0) / tp[-1]
    return float(np.sum(recall_gain * precision))


def calibration(y: ArrayLike, p: ArrayLike, *, weights: ArrayLike | None = None) -> float:
    """Calibration ratio: total predicted over total observed.

    Args:
        y: 0/1 labels.
        p: Predicted probabilities of label 1.
        weights: Non-negative per-example weights (default all 1).

    Returns:
        ``sum(w * p) / sum(w * y)`` (1 is calibrated on average); inf if there are no positives.
    """
    y, p, w = _validate(y, p, weights)
    observed = np.sum(w * y)
    return float(np.sum(w * p) / observed) if observed > 0 else float("inf")


@dataclass(frozen=True)
class ReliabilityBins:
    """Reliability diagram data, one entry per non-empty bin (right-closed ``(lower, upper]``)."""

    lower: np.ndarray
    upper: np.ndarray
    mean_predicted: np.ndarray
    observed_rate: np.ndarray
    weight: np.ndarray


def reliability_bins(
    y: ArrayLike,
    p: ArrayLike,
    *,
    n_bins: int = 10,
    strategy: str = "quantile",
    weights: ArrayLike | None = None,
) -> ReliabilityBins:
    """Bin predictions and compare the mean prediction with the observed rate in each bin.

    Bins are right-closed ``(lower, upper]`` with the first one closed on both sides. With
    ``"quantile"`` the edges are weighted quantiles (inverse CDF) of ``p``, so each bin holds about
    the same weight, which suits rare events; tied predictions stay in one bin, so fewer bins may
    come back. With ``"uniform"`` the edges split ``[0, 1]`` evenly. Empty bins are dropped.

    Args:
        y: 0/1 labels.
        p: Predicted probabilities, in ``[0, 1]``.
        n_bins: Number of bins before empty ones are dropped (at least 1).
        strategy: ``"quantile"`` or ``"uniform"``.
        weights: Non-negative per-example weights (default all 1).

    Returns:
        A ReliabilityBins whose arrays have one entry per bin with positive weight.
    """
    if not isinstance(n_bins, int | np.integer) or n_bins < 1:
        raise ValueError(f"n_bins must be a positive integer, got {n_bins!r}")
    if strategy not in ("quantile", "uniform"):
        raise ValueError(f"strategy must be 'quantile' or 'uniform', got {strategy!r}")
    y, p, w = _validate(y, p, weights, drop_zero=True)
    if np.any((p < 0) | (p > 1)):
        raise ValueError("reliability_bins needs predictions p in [0, 1]")
    if strategy == "uniform":
        edges = np.linspace(0.0, 1.0, n_bins + 1)
    else:
        order = np.argsort(p, kind="stable")
        p_sorted, cum = p[order], np.cumsum(w[order])
        idx = np.searchsorted(cum, np.linspace(0.0, 1.0, n_bins + 1) * cum[-1], side="left")
        edges = p_sorted[np.minimum(idx, len(p) - 1)]
        edges[0], edges[-1] = p_sorted[0], p_sorted[-1]
    bin_of = np.searchsorted(edges[1:-1], p, side="left")
    weight = np.bincount(bin_of, weights=w, minlength=n_bins)
    sum_p = np.bincount(bin_of, weights=w * p, minlength=n_bins)
    sum_y = np.bincount(bin_of, weights=w * y, minlength=n_bins)
    keep = weight > 0
    lower, upper, weight = edges[:-1][keep], edges[1:][keep], weight[keep]
    return ReliabilityBins(lower, upper, sum_p[keep] / weight, sum_y[keep] / weight, weight)


def gauc(
    y: ArrayLike, p: ArrayLike, groups: ArrayLike, *, weights: ArrayLike | None = None
) -> float:
    """Group AUC: per-group ROC-AUC averaged with weights equal to each group's total weight.

    Args:
        y: 0/1 labels.
        p: Scores (higher means more likely positive).
        groups: Group key per example (e.g. user id); any sortable values.
        weights: Non-negative per-example weights (default all 1).

    Returns:
        ``sum_g W_g AUC_g / sum_g W_g`` over groups with positive weight in both classes (other
        groups are skipped); nan if no group is left. Vectorised: one lexsort, no group loop.
    """
    y, p, w = _validate(y, p, weights)
    groups = np.asarray(groups)
    if groups.ndim != 1 or len(groups) != len(y):
        raise ValueError(f"groups must be 1-D with length {len(y)}, got shape {groups.shape}")
    uniques, codes = np.unique(groups, return_inverse=True)
    auc, pos, neg = _grouped_auc(y, p, w, codes.reshape(-1), len(uniques))
    valid = (pos > 0) & (neg > 0)
    if not valid.any():
        return float("nan")
    group_weight = (pos + neg)[valid]
    return float(np.sum(group_weight * auc[valid]) / np.sum(group_weight))


def lift_curve(
    y: ArrayLike, p: ArrayLike, *, n_points: int = 101, weights: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Cumulative capture (gains) curve.

    Args:
        y: 0/1 labels.
        p: Scores; examples are examined in descending score order.
        n_points: Number of evenly spaced points on ``[0, 1]`` (at least 2).
        weights: Non-negative per-example weights (default all 1).

    Returns:
        ``(x, captured)``: ``x`` is the fraction of total weight examined, ``captured`` the
        fraction of positive weight found by then; from (0, 0) to (1, 1). Within a block of tied
        scores the curve is linear (expected value under a random tie-break). ``captured`` is all
        nan if there are no positives.
    """
    if not isinstance(n_points, int | np.integer) or n_points < 2:
        raise ValueError(f"n_points must be an integer >= 2, got {n_points!r}")
    seen, found = _descending_blocks(*_validate(y, p, weights, drop_zero=True))
    x = np.linspace(0.0, 1.0, n_points)
    if found[-1] <= 0:
        return x, np.full(n_points, np.nan)
    return x, np.interp(x, np.append(0.0, seen) / seen[-1], np.append(0.0, found) / found[-1])


Ranked = Sequence[Sequence[object]]  # per query, items best first
Relevant = Sequence[Collection[object]]  # per query, the relevant items


def _check_queries(retrieved, relevant, k) -> None:
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if (n_ret := len(retrieved)) != (n_rel := len(relevant)):
        raise ValueError(f"retrieved and relevant lengths differ: {n_ret} vs {n_rel}")


def recall_at_k(retrieved: Ranked, relevant: Relevant, k: int) -> float:
    """Recall@k averaged over queries.

    Per query: ``|set(top-k retrieved) & relevant| / |relevant|``. The denominator is the full
    number of relevant items, NOT ``min(k, |relevant|)``, so recall@k can stay below 1 when a
    query has more than ``k`` relevant items.

    Args:
        retrieved: Per query, items in ranked order (best first).
        relevant: Per query, the set of relevant items.
        k: Cut-off (at least 1).

    Returns:
        Mean over queries with at least one relevant item; nan if there are none.
    """
    _check_queries(retrieved, relevant, k)
    scores = [
        len(set(list(got)[:k]) & rel) / len(rel)
        for got, rel in zip(retrieved, map(set, relevant), strict=True)
        if rel
    ]
    return float(np.mean(scores)) if scores else float("nan")


def ndcg_at_k(retrieved: Ranked, relevant: Relevant, k: int) -> float:
    """NDCG@k with binary relevance and a log2 discount.

    Per query: ``DCG = sum_{i < k, item_i relevant} 1 / log2(i + 2)`` (0-based rank ``i``; a
    repeated item counts only at its first rank), divided by the ideal DCG of
    ``min(k, |relevant|)`` relevant items at the top.

    Args:
        retrieved: Per query, items in ranked order (best first).
        relevant: Per query, the set of relevant items.
        k: Cut-off (at least 1).

    Returns:
        Mean over queries with at least one relevant item; nan if there are none.
    """
    _check_queries(retrieved, relevant, k)
    discount = 1.0 / np.log2(np.arange(k) + 2.0)
    ideal = np.cumsum(discount)
    scores = []
    for got, rel in zip(retrieved, map(set, relevant), strict=True):
        if not rel:
            continue
        hits: set[object] = set()
        dcg = 0.0
        for i, item in enumerate(list(got)[:k]):
            if item in rel and item not in hits:
                hits.add(item)
                dcg += discount[i]
        scores.append(dcg / ideal[min(k, len(rel)) - 1])
    return float(np.mean(scores)) if scores else float("nan")
