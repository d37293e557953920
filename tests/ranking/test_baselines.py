"""Baseline rankers: deterministic, calibrated-ish, and XGBoost beats the floor."""

from __future__ import annotations

import numpy as np
import pytest
import xgboost as xgb

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.evaluation.metrics import calibration, log_loss, roc_auc
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.ranking.baselines import PopularityModel, XGBoostBaseline, XGBoostConfig
from hir_sdk.ranking.features import AsOfFeatures


@pytest.fixture(scope="module")
def data(tiny_world):
    graph = build_graph_from_dir(tiny_world)
    features = AsOfFeatures(graph)
    out = {}
    for window in ("train", "validation", "test"):
        f = build_examples(graph, window).frame
        out[window] = (
            features.compute(f["user"].to_numpy(), f["ad"].to_numpy(), f["ts"].to_numpy()),
            f["label"].to_numpy(),
        )
    return out


def test_xgboost_is_deterministic_and_beats_the_floor(data):
    (xt, yt), (xv, yv), (xs, ys) = data["train"], data["validation"], data["test"]
    config = XGBoostConfig(n_estimators=60, seed=3)
    a = XGBoostBaseline(config).fit(xt, yt, xv, yv).predict(xs)
    b = XGBoostBaseline(config).fit(xt, yt, xv, yv).predict(xs)
    assert np.array_equal(a, b)
    assert ((a > 0) & (a < 1)).all()
    floor = PopularityModel().fit(xt, yt).predict(xs)
    assert roc_auc(ys, a) > roc_auc(ys, floor) + 0.05


def test_popularity_matches_the_training_rate(data):
    (xt, yt) = data["train"]
    model = PopularityModel().fit(xt, yt)
    assert np.mean(model.predict(xt)) == pytest.approx(np.mean(yt), rel=1e-3)


def test_feature_importance_names_real_columns(data):
    (xt, yt), (xv, yv) = data["train"], data["validation"]
    model = XGBoostBaseline(XGBoostConfig(n_estimators=20)).fit(xt, yt, xv, yv)
    importance = model.feature_importance()
    assert importance and set(importance) <= set(xt.columns)
    assert list(importance.values()) == sorted(importance.values(), reverse=True)


def test_predict_before_fit_is_an_error():
    with pytest.raises(RuntimeError, match="before fit"):
        PopularityModel().predict(None)
    with pytest.raises(ValueError, match="learning_rate"):
        XGBoostConfig(learning_rate=0)


def test_platt_scaling_on_validation_fixes_a_drifted_base_rate(data):
    """The tiny world converts about six times more often in the validation window than
    in the training window: the raw model under-predicts there by far, its Platt-scaled
    margins match the validation rate and lose less; the ordering stays the same."""
    (xt, yt), (xv, yv) = data["train"], data["validation"]
    assert np.mean(yv) > 3 * np.mean(yt)
    raw = XGBoostBaseline(XGBoostConfig(n_estimators=60, calibrate=False)).fit(xt, yt, xv, yv)
    fixed = XGBoostBaseline(XGBoostConfig(n_estimators=60)).fit(xt, yt, xv, yv)
    assert raw.calibration is None and fixed.calibration is not None
    p_raw, p_fixed = raw.predict(xv), fixed.predict(xv)
    assert calibration(yv, p_raw) < 0.5
    assert calibration(yv, p_fixed) == pytest.approx(1.0, abs=0.02)
    assert log_loss(yv, p_fixed) < log_loss(yv, p_raw)
    assert fixed.calibration.a > 0  # a monotone map: the ranking is kept
    assert roc_auc(yv, p_fixed) == pytest.approx(roc_auc(yv, p_raw))


def test_plain_evaluation_matrices_give_the_wrapper_s_model(data):
    """The baseline evaluates its validation window as a plain `DMatrix` (faster per
    round); the scikit-learn wrapper's own evaluation set gives the same log loss every
    round, so early stopping keeps the same trees and the predictions are identical."""
    (xt, yt), (xv, yv), (xs, _) = data["train"], data["validation"], data["test"]
    ours = XGBoostBaseline(XGBoostConfig(n_estimators=80, seed=1)).fit(xt, yt, xv, yv)
    theirs = xgb.XGBClassifier(**ours.config.classifier_params())
    theirs.fit(xt.to_numpy(), yt, eval_set=[(xv.to_numpy(), yv)], verbose=False)
    logloss = theirs.evals_result()["validation_0"]["logloss"]
    assert ours._model.evals_result()["validation_0"]["logloss"] == logloss
    assert ours.best_iteration == theirs.best_iteration
    x = xs.to_numpy()
    assert np.array_equal(
        ours._model.predict(x, output_margin=True), theirs.predict(x, output_margin=True)
    )


def test_the_evaluation_set_is_not_a_quantile_matrix(data, monkeypatch):
    """The override of the wrapper's matrix factory still takes effect (it is a private
    method of XGBoost's scikit-learn API, which an upgrade could rename)."""
    (xt, yt), (xv, yv) = data["train"], data["validation"]
    made = []
    original = xgb.QuantileDMatrix.__init__

    def recording(self, *args, ref=None, **kwargs):
        made.append(ref is not None)
        original(self, *args, ref=ref, **kwargs)

    monkeypatch.setattr(xgb.QuantileDMatrix, "__init__", recording)
    XGBoostBaseline(XGBoostConfig(n_estimators=5)).fit(xt, yt, xv, yv)
    assert made == [False]  # the training matrix only
    xgb.XGBClassifier(**XGBoostConfig(n_estimators=5).classifier_params()).fit(
        xt.to_numpy(), yt, eval_set=[(xv.to_numpy(), yv)], verbose=False
    )
    assert made == [False, False, True]  # the wrapper's own: training, then evaluation
