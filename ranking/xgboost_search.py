"""Hyper-parameter selection for the XGBoost rankers on the validation window.

An A/B between two XGBoost arms that share one fixed configuration measures the
configuration as much as the features: on `small`, raising the minimum child weight
from 5 to 100 lowered the baseline's test NE by 2%, more than any feature did. So
each arm picks its own configuration from the same grid, by its validation log loss at
the early-stopping iteration, and neither sees the test window.

The grid varies tree depth and the minimum child weight (how many examples, weighted by
the loss's curvature, a leaf must hold: the regularizer that matters with rare positives);
every other setting comes from the base configuration. Fits run in grid order and ties
keep the earlier one, so the choice is deterministic.

`feature_sets` (name -> columns) adds the choice of columns to the search: every grid
point is fitted on each set, in the order given. A treatment arm that adds many columns
(cluster ids, per-cluster counts) next to a few strong ones can overfit the extra ones;
choosing on validation between "all of them" and "the strong ones" is the same kind of
tuning the grid does, and it never reads the test window either.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.ranking.baselines import XGBoostBaseline, XGBoostConfig

# depth x minimum child weight; includes the default configuration (6, 5)
XGBOOST_GRID: tuple[Mapping[str, float], ...] = tuple(
    {"max_depth": depth, "min_child_weight": weight}
    for depth in (4, 6)
    for weight in (5.0, 20.0, 100.0, 200.0)
)


@dataclass(frozen=True)
class Trial:
    """One grid point: its configuration and how it scored on validation."""

    config: XGBoostConfig
    validation_logloss: float
    best_iteration: int
    feature_set: str = ""  # the name of its columns when the search chose among sets

    def describe(self) -> str:
        c = self.config
        where = f"{self.feature_set}, " if self.feature_set else ""
        return (
            f"{where}depth {c.max_depth}, min_child_weight {c.min_child_weight:g}: validation "
            f"log loss {self.validation_logloss:.5f} at {self.best_iteration + 1} trees"
        )


@dataclass(frozen=True)
class XGBoostSearch:
    """The outcome of `search_xgboost`: every trial, and the chosen one fitted."""

    model: XGBoostBaseline  # the chosen configuration, fitted
    trials: tuple[Trial, ...]  # in grid order
    chosen_index: int  # the trial `model` was fitted in

    @property
    def chosen(self) -> Trial:
        return self.trials[self.chosen_index]


def search_xgboost(
    train: pl.DataFrame,
    y_train: np.ndarray,
    valid: pl.DataFrame,
    y_valid: np.ndarray,
    *,
    base: XGBoostConfig | None = None,
    grid: Sequence[Mapping[str, float]] = XGBOOST_GRID,
    name: str = "xgboost",
    feature_sets: Mapping[str, Sequence[str]] | None = None,
) -> XGBoostSearch:
    """Fit `base` with each grid point's overrides (on each of `feature_sets`, default all
    columns); keep the lowest validation log loss."""
    if not grid:
        raise ValueError("search_xgboost: the grid is empty")
    base = base or XGBoostConfig()
    fields = {f.name for f in dataclasses.fields(XGBoostConfig)}
    unknown = sorted({key for point in grid for key in point} - fields)
    if unknown:  # refused before any fit
        raise ValueError(f"search_xgboost: unknown XGBoostConfig fields {unknown}")
    sets = {"": list(train.columns)} if feature_sets is None else dict(feature_sets)
    if not sets or not all(sets.values()):
        raise ValueError("search_xgboost: every feature set needs at least one column")
    missing = sorted({c for cols in sets.values() for c in cols} - set(train.columns))
    if missing:
        raise ValueError(f"search_xgboost: feature sets name columns not in train: {missing}")
    runs = [(label, point) for label in sets for point in grid]
    models = [
        XGBoostBaseline(dataclasses.replace(base, **point), name=name).fit(
            train.select(sets[label]), y_train, valid.select(sets[label]), y_valid
        )
        for label, point in runs
    ]
    trials = tuple(
        Trial(m.config, m.validation_logloss, m.best_iteration, label)
        for m, (label, _) in zip(models, runs, strict=True)
    )
    # min keeps the first of equal losses
    chosen = min(range(len(trials)), key=lambda i: trials[i].validation_logloss)
    return XGBoostSearch(models[chosen], trials, chosen)
