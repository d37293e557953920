"""Baseline rankers on the as-of features: XGBoost (what a team runs today) and a
popularity floor. Both predict the probability that an exposure converts.

XGBoost early-stops on the validation window and then, with `calibrate` (the default),
recalibrates its margins on that window with Platt scaling: the validation window sits
between the training examples and the test, so this corrects drift that a model fitted
on older examples carries, when the validation window is representative of the test.
On `small`, the XGBoost + HIR arm over-predicted by 24% without it (NE +1.43% against
the baseline) and by 14% with it (NE +0.52%); the baseline moved by 0.05%. On the tiny
world, whose validation window converts ten times more often than its test window, it
makes NE worse: turn it off there (`XGBoostConfig(calibrate=False)`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import polars as pl
import xgboost as xgb

from hir_sdk.errors import InputError
from hir_sdk.io.saved_meta import read_saved_meta
from hir_sdk.ranking.calibration import PROBABILITY_FLOOR, PlattScaling

MODEL_FILE = "model.ubj"  # XGBoost's own binary format: the trees, bit for bit
SETTINGS_FILE = "model.json"  # what else predicting needs: columns, calibration, settings
FORMAT_VERSION = 1


def _read_settings(folder: Path, kind: str) -> dict:
    """The saved model's settings, refused unless they are of `kind`."""
    settings = read_saved_meta(Path(folder), SETTINGS_FILE, f"{kind} model", FORMAT_VERSION)
    if settings.get("kind") != kind:
        raise InputError(
            f"holds a {settings.get('kind')!r} model, not {kind!r}",
            file=Path(folder) / SETTINGS_FILE,
        )
    return settings


@dataclass(frozen=True)
class XGBoostConfig:
    """Gradient-boosted trees; early stopping on the validation window's log loss."""

    n_estimators: int = 400
    max_depth: int = 6
    learning_rate: float = 0.05
    subsample: float = 0.8
    colsample_bytree: float = 0.8
    min_child_weight: float = 5.0
    early_stopping_rounds: int = 30
    n_threads: int = 2
    seed: int = 0
    calibrate: bool = True  # Platt scaling of the margins on the validation window

    def __post_init__(self) -> None:
        if self.n_estimators < 1 or self.max_depth < 1 or not 0 < self.learning_rate <= 1:
            raise ValueError(
                "XGBoostConfig: need n_estimators >= 1, max_depth >= 1, 0 < learning_rate <= 1"
            )

    def classifier_params(self) -> dict[str, object]:
        """These settings as `xgboost.XGBClassifier` keyword arguments (histogram trees,
        log loss, early stopping on the evaluation set)."""
        return {
            "n_estimators": self.n_estimators,
            "max_depth": self.max_depth,
            "learning_rate": self.learning_rate,
            "subsample": self.subsample,
            "colsample_bytree": self.colsample_bytree,
            "min_child_weight": self.min_child_weight,
            "early_stopping_rounds": self.early_stopping_rounds,
            "n_jobs": self.n_threads,
            "random_state": self.seed,
            "tree_method": "hist",
            "objective": "binary:logistic",
            "eval_metric": "logloss",
        }


class _EvalDMatrixClassifier(xgb.XGBClassifier):
    """`XGBClassifier` whose evaluation sets are plain `DMatrix`es. The scikit-learn
    wrapper builds them as `QuantileDMatrix`es (referencing the training matrix), which
    XGBoost evaluates several times slower per boosting round, with the same log loss;
    early stopping evaluates the validation window every round, so that was most of an
    A/B's XGBoost time (benchmarks/results/xgboost_eval.md). The training matrix, and so
    the trees, are unchanged."""

    def _create_dmatrix(self, ref: xgb.DMatrix | None, **kwargs: object) -> xgb.DMatrix:
        if ref is not None:  # an evaluation set; the training matrix comes with no ref
            return xgb.DMatrix(**kwargs, nthread=self.n_jobs)
        return super()._create_dmatrix(ref, **kwargs)


@dataclass
class XGBoostBaseline:
    """XGBoost on the hand-crafted as-of features (`hir_sdk.ranking.features`)."""

    config: XGBoostConfig = field(default_factory=XGBoostConfig)
    name: str = "xgboost"
    _model: xgb.XGBClassifier | None = None
    _columns: list[str] | None = None
    calibration: PlattScaling | None = None  # set by fit when config.calibrate

    def fit(
        self, train: pl.DataFrame, y_train: np.ndarray, valid: pl.DataFrame, y_valid: np.ndarray
    ) -> XGBoostBaseline:
        c = self.config
        self._columns = train.columns
        self._model = _EvalDMatrixClassifier(**c.classifier_params())
        x_valid = valid.select(self._columns).to_numpy()
        self._model.fit(train.to_numpy(), y_train, eval_set=[(x_valid, y_valid)], verbose=False)
        self.calibration = None
        if c.calibrate and 0 < np.sum(y_valid) < len(y_valid):
            margins = self._model.predict(x_valid, output_margin=True)
            self.calibration = PlattScaling.fit(margins, np.asarray(y_valid, dtype=np.float64))
        return self

    def predict(self, features: pl.DataFrame) -> np.ndarray:
        if self._model is None or self._columns is None:
            raise RuntimeError("XGBoostBaseline.predict before fit")
        x = features.select(self._columns).to_numpy()
        if self.calibration is None:
            return self._model.predict_proba(x)[:, 1]
        p = self.calibration(self._model.predict(x, output_margin=True))
        return np.clip(p, PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)

    def save(self, folder: str | Path) -> None:
        """Write the fitted model into the existing `folder` (`MODEL_FILE`, `SETTINGS_FILE`);
        `load` gives back a model whose predictions are identical."""
        if self._model is None or self._columns is None:
            raise RuntimeError("XGBoostBaseline.save before fit")
        folder = Path(folder)
        self._model.save_model(folder / MODEL_FILE)
        calibration = None if self.calibration is None else asdict(self.calibration)
        settings = {
            "format_version": FORMAT_VERSION,
            "kind": "xgboost",
            "name": self.name,
            "config": asdict(self.config),
            "columns": self._columns,
            "calibration": calibration,
        }
        (folder / SETTINGS_FILE).write_text(json.dumps(settings, indent=1), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> XGBoostBaseline:
        """The model `save` wrote into `folder`."""
        folder = Path(folder)
        settings = _read_settings(folder, "xgboost")
        model = xgb.XGBClassifier()
        try:
            model.load_model(folder / MODEL_FILE)
        except (OSError, xgb.core.XGBoostError) as err:
            raise InputError(
                f"{folder / MODEL_FILE}: cannot load the XGBoost model ({err})"
            ) from None
        calibration = settings["calibration"]
        return cls(
            config=XGBoostConfig(**settings["config"]),
            name=settings["name"],
            _model=model,
            _columns=list(settings["columns"]),
            calibration=None if calibration is None else PlattScaling(**calibration),
        )

    @property
    def best_iteration(self) -> int:
        if self._model is None:
            raise RuntimeError("XGBoostBaseline not fitted")
        return int(self._model.best_iteration)

    @property
    def validation_logloss(self) -> float:
        """Validation log loss at the early-stopping iteration (before calibration)."""
        if self._model is None:
            raise RuntimeError("XGBoostBaseline not fitted")
        return float(self._model.best_score)

    def feature_importance(self) -> dict[str, float]:
        """Gain-based importance per feature, largest first."""
        if self._model is None or self._columns is None:
            raise RuntimeError("XGBoostBaseline not fitted")
        gains = self._model.get_booster().get_score(importance_type="gain")
        named = {self._columns[int(k[1:])]: v for k, v in gains.items()}
        return dict(sorted(named.items(), key=lambda kv: -kv[1]))


@dataclass
class PopularityModel:
    """The floor: the ad's owner's as-of smoothed conversion rate (`adv_cvr`), rescaled so
    its mean matches the training label rate."""

    name: str = "popularity"
    column: str = "adv_cvr"
    _scale: float | None = None

    def fit(
        self,
        train: pl.DataFrame,
        y_train: np.ndarray,
        valid: pl.DataFrame | None = None,
        y_valid: np.ndarray | None = None,
    ) -> PopularityModel:
        score = train[self.column].to_numpy()
        self._scale = float(np.mean(y_train) / max(float(np.mean(score)), 1e-12))
        return self

    def save(self, folder: str | Path) -> None:
        """Write the fitted model into the existing `folder` (`SETTINGS_FILE`)."""
        if self._scale is None:
            raise RuntimeError("PopularityModel.save before fit")
        settings = {
            "format_version": FORMAT_VERSION,
            "kind": "popularity",
            "name": self.name,
            "column": self.column,
            "scale": self._scale,
        }
        (Path(folder) / SETTINGS_FILE).write_text(json.dumps(settings), encoding="utf-8")

    @classmethod
    def load(cls, folder: str | Path) -> PopularityModel:
        """The model `save` wrote into `folder`."""
        settings = _read_settings(Path(folder), "popularity")
        return cls(name=settings["name"], column=settings["column"], _scale=settings["scale"])

    def predict(self, features: pl.DataFrame) -> np.ndarray:
        if self._scale is None:
            raise RuntimeError("PopularityModel.predict before fit")
        return np.clip(features[self.column].to_numpy() * self._scale, 1e-6, 1 - 1e-6)
