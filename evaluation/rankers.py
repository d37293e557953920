"""The A/B's arms by name: the built-in rankers and the ones a user registers.

`save_ranker(ranker, name, out)` writes a fitted arm that follows `SavableRanker` into
a new folder (marked as hir-sdk's, replaced only with `overwrite` and only when ours);
`load_ranker(out, config)` builds the named arm fresh and restores it. An `xgboost+hir`
arm stores its trees and columns; it reads the HIR columns from `RankingData.hir` again
when it predicts. A `multistage` arm stores its two stages' weights, dense scaler and
calibration (`ranking.sequence.multistage_files`); it reads the graph (the one it was
fitted on) and the HIR snapshots of the data it predicts on.

`register_ranker(name, factory, needs_hir=...)` adds an arm; `factory(config)` gets the
A/B's `ABConfig` and returns a fresh object that follows the ranker protocol
(`hir_sdk.ranking.ranker.Ranker`: `fit`, `predict`, `describe`). `hir ab` and
`run_ab` then accept the name as control or treatment. An arm with `needs_hir` reads
HIR snapshots (`RankingData.hir`): the A/B then needs encoder runs, and both arms fit
only on examples after what the first encoder read.

Built in:

- `xgboost`: XGBoost on the as-of features, its depth and minimum child weight chosen on
  validation (`ABConfig.tune`) or fixed (`ABConfig.xgboost`);
- `popularity`: the owner's as-of smoothed conversion rate, rescaled (the floor);
- `xgboost+hir`: the same XGBoost with HIR feature columns (needs HIR);
- `multistage`: the multi-stage sequence ranker (needs HIR); its dense inputs are the
  as-of features and, as `xgboost+hir` reads them, the HIR feature columns
  (`MultiStageConfig.hir_columns`);
- `xgboost+multistage`: XGBoost with the multi-stage ranker's probability as one more
  column (needs HIR), the way a new model often ships first: as a feature of the ranker
  in production. The multi-stage ranker reads only the oldest `ABConfig.stack_share` of
  the training examples, those whose attribution window ends before the split (a label
  read past it would reach into the later examples' features): it fits on the older of
  them and chooses its epoch and calibration on the newest `CHOOSE_SHARE` (choosing on
  the later examples would make their column a function of their own labels). Its
  column is missing on the oldest (it would be an in-sample score there) and, on every
  later example, comes from that one model. XGBoost fits on all training examples and
  makes its own choices on the validation window, which the first stage never read;
- `xgboost+hir+multistage`: the same, with `xgboost+hir`'s columns besides the score:
  the multi-stage ranker as one more feature of the best GBDT.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.evaluation.examples import attribution_seconds
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.output_folder import check_ours
from hir_sdk.ranking.baselines import PopularityModel, XGBoostBaseline
from hir_sdk.ranking.hir_features import similarity_columns
from hir_sdk.ranking.ranker import Ranker, RankingData, SavableRanker
from hir_sdk.ranking.sequence.examples import RankingExamples
from hir_sdk.ranking.xgboost_search import XGBoostSearch, search_xgboost
from hir_sdk.schema.manifest import DAY, iso_time

if TYPE_CHECKING:
    from hir_sdk.evaluation.pipeline import ABConfig
    from hir_sdk.ranking.sequence.multistage import MultiStageRanker
    from hir_sdk.ranking.sequence.multistage_files import SavedMultiStage

RankerFactory = Callable[["ABConfig"], Ranker]
# a stacked arm's first stage: the newest share of its examples, on which it chooses its
# epoch and calibration (the older ones fit it)
CHOOSE_SHARE = 0.25
RANKER_FILE = "ranker.json"  # the arm's name, in a folder save_ranker wrote


@dataclass(frozen=True)
class _Entry:
    factory: RankerFactory
    needs_hir: bool


_REGISTRY: dict[str, _Entry] = {}


def register_ranker(name: str, factory: RankerFactory, *, needs_hir: bool = False) -> None:
    """Make `name` an A/B arm built by `factory(config)`; a name is registered once."""
    if not name or not isinstance(name, str):
        raise ValueError(f"a ranker name must be a non-empty string, got {name!r}")
    if name in _REGISTRY:
        raise ValueError(f"a ranker named {name!r} is already registered")
    _REGISTRY[name] = _Entry(factory, needs_hir)


def ranker_names() -> tuple[str, ...]:
    """The registered arms, built-in ones first."""
    return tuple(_REGISTRY)


def needs_hir(name: str) -> bool:
    return _entry(name).needs_hir


def make_ranker(name: str, config: ABConfig) -> Ranker:
    """A fresh, unfitted arm `name` for the A/B `config`."""
    ranker = _entry(name).factory(config)
    if not isinstance(ranker, Ranker):
        raise TypeError(
            f"the factory of ranker {name!r} returned {type(ranker).__name__}, which lacks "
            "fit(data), predict(data, window) or describe()"
        )
    return ranker


def save_ranker(ranker: Ranker, name: str, out: str | Path, *, overwrite: bool = False) -> Path:
    """Write the fitted arm `ranker`, registered as `name`, into the new folder `out`."""
    _entry(name)
    if not isinstance(ranker, SavableRanker):
        raise TypeError(f"ranker {name!r} ({type(ranker).__name__}) has no save(folder)/load")
    with atomic_output_dir(out, kind="ranker", overwrite=overwrite) as tmp:
        ranker.save(tmp)
        (tmp / RANKER_FILE).write_text(json.dumps({"name": name}), encoding="utf-8")
    return Path(out)


def load_ranker(out: str | Path, config: ABConfig) -> Ranker:
    """The arm `save_ranker` wrote into `out`, fitted, for the A/B `config`."""
    check_ours(out, kind="ranker")
    path = Path(out) / RANKER_FILE
    try:
        name = json.loads(path.read_text(encoding="utf-8"))["name"]
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise InputError(f"{path}: cannot read the saved ranker's name ({err})") from None
    ranker = make_ranker(name, config)
    if not isinstance(ranker, SavableRanker):
        raise InputError(f"{out}: the ranker {name!r} cannot be loaded (it has no load)")
    ranker.load(Path(out))
    return ranker


def _entry(name: str) -> _Entry:
    try:
        return _REGISTRY[name]
    except KeyError:
        raise InputError(f"unknown model {name!r}; choose from {list(_REGISTRY)}") from None


class XGBoostArm:
    """XGBoost on the as-of features (`xgboost`); with `hir`, plus the HIR feature columns
    (`xgboost+hir`), choosing on validation between all of them and the similarity ones."""

    def __init__(self, config: ABConfig, *, name: str = "xgboost", hir: bool = False) -> None:
        self.config, self.name, self.hir = config, name, hir
        self.model: XGBoostBaseline | None = None
        self.search: XGBoostSearch | None = None

    def _features(self, data: RankingData, window: str) -> pl.DataFrame:
        return data.with_hir(window) if self.hir else data.features[window]

    def _feature_sets(self, data: RankingData, columns: list[str]) -> dict[str, list[str]] | None:
        """The column sets the validation search chooses between (None: all of them)."""
        if not self.hir:
            return None
        base = data.features["train"].columns
        return {
            "all HIR columns": columns,
            "HIR similarity columns": [*base, *similarity_columns(columns)],
        }

    def fit(self, data: RankingData) -> XGBoostArm:
        X = {w: self._features(data, w) for w in ("train", "validation")}
        y = {w: data.labels(w) for w in X}
        feature_sets = self._feature_sets(data, X["train"].columns)
        if self.config.tune:
            self.search = search_xgboost(
                X["train"],
                y["train"],
                X["validation"],
                y["validation"],
                base=self.config.xgboost,
                grid=self.config.xgboost_grid,
                name=self.name,
                feature_sets=feature_sets,
            )
            self.model = self.search.model
        else:
            self.model = XGBoostBaseline(self.config.xgboost, name=self.name)
            self.model.fit(X["train"], y["train"], X["validation"], y["validation"])
        return self

    def predict(self, data: RankingData, window: str) -> np.ndarray:
        if self.model is None:
            raise RuntimeError(f"{self.name}: predict before fit")
        return self.model.predict(self._features(data, window))

    def save(self, folder: Path) -> None:
        if self.model is None:
            raise RuntimeError(f"{self.name}: save before fit")
        self.model.save(folder)

    def load(self, folder: Path) -> XGBoostArm:
        self.model, self.search = XGBoostBaseline.load(folder), None
        return self

    def describe(self) -> str:
        if self.model is None:
            return "not fitted"
        how = (
            f"chosen on validation ({self.search.chosen.describe()}) from: "
            + "; ".join(t.describe() for t in self.search.trials)
            if self.search
            else f"best iteration {self.model.best_iteration}"
        )
        top = list(self.model.feature_importance())[:5]
        return f"{asdict(self.model.config)}; {how}; top features {top}"


class PopularityArm:
    """The floor: the ad's owner's as-of smoothed conversion rate, rescaled."""

    def __init__(self, config: ABConfig) -> None:
        self.model = PopularityModel()

    def fit(self, data: RankingData) -> PopularityArm:
        self.model.fit(data.features["train"], data.labels("train"))
        return self

    def predict(self, data: RankingData, window: str) -> np.ndarray:
        return self.model.predict(data.features[window])

    def save(self, folder: Path) -> None:
        self.model.save(folder)

    def load(self, folder: Path) -> PopularityArm:
        self.model = PopularityModel.load(folder)
        return self

    def describe(self) -> str:
        return f"as-of smoothed owner conversion rate ({self.model.column}), rescaled"


class MultiStageArm:
    """The multi-stage sequence ranker (cached user model, online ranker, MoE heads)."""

    def __init__(self, config: ABConfig) -> None:
        self.settings = config.multistage
        self.attribution_days = config.attribution_days  # None: the manifest's
        self.model: MultiStageRanker | None = None
        self.saved: SavedMultiStage | None = None  # loaded: joined to the data at predict

    def examples(self, data: RankingData, window: str) -> RankingExamples:
        """`window`'s examples, with the HIR feature columns among the dense inputs where
        the settings ask for them (`MultiStageConfig.hir_columns`)."""
        dense = data.with_hir(window) if self.settings.hir_columns else data.features[window]
        return RankingExamples.of(data.examples[window], dense)

    def fit(self, data: RankingData) -> MultiStageArm:
        from hir_sdk.ranking.sequence.multistage import MultiStageRanker

        window_s = attribution_seconds(data.graph.manifest, self.attribution_days)
        self.model = MultiStageRanker(data.graph, data.hir, self.settings, label_window_s=window_s)
        self.model.fit(self.examples(data, "train"), self.examples(data, "validation"))
        return self

    def predict(self, data: RankingData, window: str) -> np.ndarray:
        if self.model is None and self.saved is not None:
            self.model = self.saved.ranker(data.graph, data.hir)
        if self.model is None:
            raise RuntimeError("multistage: predict before fit")
        return self.model.predict(self.examples(data, window))

    def save(self, folder: Path) -> None:
        if self.model is None:
            raise RuntimeError("multistage: save before fit")
        from hir_sdk.ranking.sequence.multistage_files import save_multistage

        save_multistage(self.model, folder)

    def load(self, folder: Path) -> MultiStageArm:
        """The saved ranker; it reads the graph and HIR snapshots of the data it
        predicts on (the graph must be the one it was fitted on)."""
        from hir_sdk.ranking.sequence.multistage_files import SavedMultiStage

        self.saved, self.model = SavedMultiStage.read(folder), None
        self.settings = self.saved.config
        return self

    def describe(self) -> str:
        if self.model is None and self.saved is not None:
            return f"loaded from {self.saved.folder} (joined to the data at predict)"
        if self.model is None:
            return "not fitted"
        last = self.model.history_log[-1] if self.model.history_log else {}
        calibration = self.model.calibration
        return (
            f"user model {asdict(self.settings.user_model)}; online ranker "
            f"{asdict(self.settings.ranker)}; {len(self.model.history_log)} epochs, "
            f"last {last}; Platt a={calibration.a:.3f} b={calibration.b:.3f}"
        )


def stack_split(ts: np.ndarray, share: float, name: str, window_s: int = 0) -> int:
    """The time before which the oldest `share` of the training examples (request times
    `ts`) fit a stacked arm's first stage, those of them whose label (attribution window
    `window_s` seconds) is known before it; an `InputError` when the first stage would
    have fewer than two distinct times of them (one to fit on, one to choose on:
    `first_stage_rows`), or the examples from the split on would be none (`hir run` and
    `hir ab` check it before any training)."""
    split = int(np.quantile(ts, share, method="lower")) if len(ts) else 0
    early = ts < split
    if not early.any() or early.all():
        raise InputError(
            f"{name}: the oldest {share:g} of the {len(ts):,} training examples leaves "
            "none on one side of the split the multi-stage ranker fits on (too few "
            "examples, or all at one time); choose another model or give the training "
            "window more exposures"
        )
    if len(np.unique(ts[ts + window_s < split])) < 2:
        raise InputError(
            f"{name}: the multi-stage ranker fits on the training examples before "
            f"{iso_time(split)} whose label is known by then (and chooses on the newest "
            f"of them), and with an attribution window of {window_s / DAY:g} days too few "
            f"are: the training window (from {iso_time(int(ts.min()))}) is too short "
            "for it; choose another model, a longer log, or (hir ab) a shorter "
            "--attribution-days"
        )
    return split


def first_stage_rows(ts: np.ndarray, split: int, window_s: int) -> tuple[np.ndarray, np.ndarray]:
    """(fit, choose): masks over the training examples (request times `ts`) a stacked
    arm's first stage reads, all labelled before the `split` (attribution window
    `window_s`): the newest `CHOOSE_SHARE` of them choose its epoch and calibration, the
    older ones fit it (`stack_split` checks that both are there)."""
    known = ts + window_s < split
    cut = int(np.quantile(ts[known], 1 - CHOOSE_SHARE, method="higher"))
    if cut == int(ts[known].min()):  # the quantile falls on the oldest time: keep it to fit
        cut = int(ts[known][ts[known] > cut].min())
    return known & (ts < cut), known & (ts >= cut)


class StackedArm(XGBoostArm):
    """XGBoost on the as-of features (with `hir`, and the HIR columns) plus the
    multi-stage ranker's probability (`xgboost+multistage`, `xgboost+hir+multistage`,
    see the module)."""

    SCORE = "multistage_p"
    FILE = "stack.json"

    def __init__(self, config: ABConfig, *, hir: bool = False) -> None:
        name = "xgboost+hir+multistage" if hir else "xgboost+multistage"
        super().__init__(config, name=name, hir=hir)
        self.share = config.stack_share
        self.first = MultiStageArm(config)
        self.split: int | None = None  # training examples before it fit the first stage

    def _features(self, data: RankingData, window: str) -> pl.DataFrame:
        if self.split is None:
            raise RuntimeError(f"{self.name}: features before fit")
        score = np.asarray(self.first.predict(data, window), dtype=np.float64)
        if window == "train":  # the first stage's own examples: an in-sample score
            score = np.where(data.column(window, "ts") < self.split, np.nan, score)
        return super()._features(data, window).with_columns(pl.Series(self.SCORE, score))

    def _feature_sets(self, data: RankingData, columns: list[str]) -> dict[str, list[str]] | None:
        sets = super()._feature_sets(data, columns)  # the score column is in every set
        if sets is None:
            return None
        return {k: v if self.SCORE in v else [*v, self.SCORE] for k, v in sets.items()}

    def fit(self, data: RankingData) -> StackedArm:
        ts = data.examples["train"]["ts"].to_numpy()
        window_s = attribution_seconds(data.graph.manifest, self.config.attribution_days)
        split = stack_split(ts, self.share, self.name, window_s)
        # its score is a feature of the examples from the split on, so it reads only
        # labels known before the split, to fit and to choose alike: a label read past it
        # would carry a conversion at or after a later example's request time into that
        # example's feature (choosing on the later examples, their own labels); the
        # validation window stays unread until XGBoost's own choices
        fit, choose = first_stage_rows(ts, split, window_s)
        head = data.regroup({"train": ("train", fit), "validation": ("train", choose)})
        self.first.fit(head)
        self.split = split
        super().fit(data)
        return self

    def save(self, folder: Path) -> None:
        if self.split is None:
            raise RuntimeError(f"{self.name}: save before fit")
        super().save(folder)
        (folder / "multistage").mkdir()
        self.first.save(folder / "multistage")
        record = {"split": self.split, "share": self.share}
        (folder / self.FILE).write_text(json.dumps(record), encoding="utf-8")

    def load(self, folder: Path) -> StackedArm:
        path = folder / self.FILE
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            split, share = int(record["split"]), float(record["share"])
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise InputError(f"{path}: cannot read the stacked ranker's split ({err})") from None
        super().load(folder)
        self.first.load(folder / "multistage")
        self.split, self.share = split, share
        return self

    def describe(self) -> str:
        if self.split is None:
            return "not fitted"
        return (
            f"multi-stage ranker fitted on the training examples labelled before "
            f"{iso_time(self.split)} (the oldest {self.share:g}), its probability the "
            f"column {self.SCORE} (missing before then): {self.first.describe()}; XGBoost "
            f"on every training example: {super().describe()}"
        )


register_ranker("xgboost", XGBoostArm)
register_ranker("popularity", PopularityArm)
register_ranker(
    "xgboost+hir", lambda config: XGBoostArm(config, name="xgboost+hir", hir=True), needs_hir=True
)
register_ranker("multistage", MultiStageArm, needs_hir=True)
register_ranker("xgboost+multistage", StackedArm, needs_hir=True)
register_ranker(
    "xgboost+hir+multistage", lambda config: StackedArm(config, hir=True), needs_hir=True
)
