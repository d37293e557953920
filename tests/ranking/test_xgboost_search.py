"""XGBoost configuration search on validation: the lowest validation log loss wins, the
score is the real one, and the choice is deterministic."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hir_sdk.evaluation.metrics import log_loss
from hir_sdk.ranking.baselines import XGBoostBaseline, XGBoostConfig
from hir_sdk.ranking.xgboost_search import XGBOOST_GRID, search_xgboost

BASE = XGBoostConfig(n_estimators=80, early_stopping_rounds=15)
# the first point barely moves from the base rate in 80 trees: it cannot use the signal
GRID = ({"max_depth": 1, "learning_rate": 0.001}, {"max_depth": 3, "min_child_weight": 20.0})


def _frame(n: int, seed: int) -> tuple[pl.DataFrame, np.ndarray]:
    """One weak signal among twenty noise columns, 3% positives."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 21))
    p = 1 / (1 + np.exp(-(-3.8 + 0.8 * x[:, 0])))
    y = (rng.random(n) < p).astype(np.int64)
    return pl.DataFrame({f"f{i}": x[:, i] for i in range(21)}), y


@pytest.fixture(scope="module")
def split():
    return _frame(3_000, 0), _frame(3_000, 1)


def test_the_lowest_validation_loss_wins_and_the_score_is_real(split):
    (xt, yt), (xv, yv) = split
    result = search_xgboost(xt, yt, xv, yv, base=BASE, grid=GRID)
    assert [t.config.max_depth for t in result.trials] == [1, 3]
    losses = [t.validation_logloss for t in result.trials]
    assert losses[1] < losses[0] - 0.002
    assert result.chosen is result.trials[1]
    assert result.model.config == result.chosen.config
    assert result.model.config.n_estimators == BASE.n_estimators  # the rest from base
    # the recorded score is the log loss of the uncalibrated early-stopped model
    direct = XGBoostBaseline(result.chosen.config)
    direct.fit(xt, yt, xv, yv)
    raw = direct._model.predict_proba(xv.to_numpy())[:, 1]
    assert log_loss(yv, raw) == pytest.approx(result.chosen.validation_logloss, abs=1e-5)
    # and refitting the chosen configuration reproduces the chosen model bit for bit
    assert np.array_equal(direct.predict(xv), result.model.predict(xv))


def test_ties_keep_the_earlier_point(split):
    (xt, yt), (xv, yv) = split
    same = ({"max_depth": 3}, {"max_depth": 3})
    result = search_xgboost(xt, yt, xv, yv, base=BASE, grid=same)
    assert result.trials[0].validation_logloss == result.trials[1].validation_logloss
    assert result.chosen is result.trials[0]


def test_default_grid_holds_the_default_configuration():
    default = XGBoostConfig()
    assert {"max_depth": default.max_depth, "min_child_weight": default.min_child_weight} in [
        dict(point) for point in XGBOOST_GRID
    ]


def test_bad_grids_are_refused(split):
    (xt, yt), (xv, yv) = split
    with pytest.raises(ValueError, match="grid is empty"):
        search_xgboost(xt, yt, xv, yv, grid=())
    with pytest.raises(ValueError, match="unknown XGBoostConfig fields"):
        search_xgboost(xt, yt, xv, yv, grid=({"depth": 3},))


def test_feature_sets_are_searched_with_every_grid_point(split):
    (xt, yt), (xv, yv) = split
    sets = {"signal": ["f0"], "noise": [f"f{i}" for i in range(1, 21)]}
    result = search_xgboost(xt, yt, xv, yv, base=BASE, grid=GRID, feature_sets=sets)
    assert [(t.feature_set, t.config.max_depth) for t in result.trials] == [
        ("signal", 1),
        ("signal", 3),
        ("noise", 1),
        ("noise", 3),
    ]
    assert result.chosen.feature_set == "signal"  # the only column that carries the label
    assert result.chosen.describe().startswith("signal, depth ")
    # the model reads its own columns by name from a frame that has all of them
    alone = XGBoostBaseline(result.chosen.config).fit(xt.select("f0"), yt, xv.select("f0"), yv)
    assert np.array_equal(alone.predict(xv.select("f0")), result.model.predict(xv))
    with pytest.raises(ValueError, match="not in train"):
        search_xgboost(xt, yt, xv, yv, grid=GRID, feature_sets={"x": ["nope"]})
    with pytest.raises(ValueError, match="at least one column"):
        search_xgboost(xt, yt, xv, yv, grid=GRID, feature_sets={"x": []})
