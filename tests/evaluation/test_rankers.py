"""The ranker protocol and registry: the built-in arms follow it, a user's ranker plugs
in by name (the docs/rankers.md example), a broken one is refused, and a fitted arm
saved and loaded predicts what it did."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation.built_in_arms import BUILT_IN_ARMS
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.evaluation.pipeline import ABConfig, run_ab_on_graph
from hir_sdk.evaluation.rankers import (
    StackedArm,
    first_stage_rows,
    load_ranker,
    make_ranker,
    needs_hir,
    ranker_names,
    register_ranker,
    save_ranker,
)
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.hir_features import HirFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.ranker import Ranker, RankingData
from hir_sdk.ranking.sequence import MultiStageConfig
from hir_sdk.schema.manifest import DAY
from tests.hir_sdk.interests.conftest import snapshot  # noqa: F401
from tests.page_example import run_page_example


def test_docs_example_plugs_in_a_ranker():
    run_page_example("rankers.md")
    assert "owner-rate" in ranker_names() and not needs_hir("owner-rate")


BUILT_IN = (
    "xgboost",
    "popularity",
    "xgboost+hir",
    "multistage",
    "xgboost+multistage",
    "xgboost+hir+multistage",
)


def test_built_in_arms_follow_the_protocol():
    assert ranker_names()[: len(BUILT_IN)] == BUILT_IN == BUILT_IN_ARMS  # what `hir ab` offers
    config = ABConfig()
    for name in BUILT_IN:
        assert isinstance(make_ranker(name, config), Ranker)
    assert [needs_hir(n) for n in BUILT_IN] == [False, False, True, True, True, True]


def test_names_are_checked():
    with pytest.raises(InputError, match="unknown model 'nope'"):
        ABConfig(treatment="nope")
    with pytest.raises(ValueError, match="already registered"):
        register_ranker("xgboost", lambda config: None)


class _NotARanker:
    def __init__(self, config: ABConfig) -> None:
        pass

    def fit(self, data):
        return self


class _TooFew:
    def __init__(self, config: ABConfig) -> None:
        pass

    def fit(self, data):
        return self

    def predict(self, data, window):
        return np.full(3, 0.5)

    def describe(self):
        return "three predictions, whatever the window"


def test_a_ranker_that_breaks_the_protocol_is_refused(tiny_graph):
    register_ranker("test-not-a-ranker", _NotARanker)
    with pytest.raises(TypeError, match="lacks fit"):
        make_ranker("test-not-a-ranker", ABConfig())
    register_ranker("test-too-few", _TooFew)
    config = ABConfig(control="popularity", treatment="test-too-few", n_bootstrap=5)
    with pytest.raises(InputError, match="predicted \\(3,\\) values"):
        run_ab_on_graph(tiny_graph, config)


@pytest.fixture(scope="module")
def ranking_data(tiny_graph):
    owners = OwnersAsOf(tiny_graph)
    frames = {
        w: build_examples(tiny_graph, w, owners=owners).frame
        for w in ("train", "validation", "test")
    }
    features = AsOfFeatures(tiny_graph, owners)
    X = {
        w: features.compute(*(f[c].to_numpy() for c in ("user", "ad", "ts")))
        for w, f in frames.items()
    }
    return RankingData(tiny_graph, frames, X)


def test_ranking_data_adds_the_hir_columns_once_per_window(
    ranking_data,
    snapshot,  # noqa: F811
    tiny_graph,
):
    lookup = HirLookup(tiny_graph, [snapshot])
    data = dataclasses.replace(ranking_data, hir=lookup)
    frame = data.with_hir("test")
    keys = [data.column("test", c) for c in ("user", "ad", "ts")]
    hir = HirFeatures(tiny_graph, lookup).compute(*keys)
    assert frame.columns == [*data.features["test"].columns, *hir.columns]
    assert frame.select(hir.columns).equals(hir)  # the arms' own features, row-aligned
    assert frame.select(data.features["test"].columns).equals(data.features["test"])
    cached = data._hir_columns["test"]
    data.with_hir("test")
    assert data._hir_columns["test"] is cached and set(data._hir_columns) == {"test"}
    # a copy with other rows in its windows computes its own
    rows = pl.Series(np.arange(data.examples["test"].height) % 2 == 0)
    half = dataclasses.replace(
        data,
        examples={"test": data.examples["test"].filter(rows)},
        features={"test": data.features["test"].filter(rows)},
    )
    assert half.with_hir("test").equals(frame.filter(rows))
    with pytest.raises(InputError, match="need HIR snapshots"):
        ranking_data.with_hir("test")


def test_regrouped_windows_take_their_hir_columns_from_the_source(
    ranking_data,
    snapshot,  # noqa: F811
    tiny_graph,
    monkeypatch,
):
    data = dataclasses.replace(ranking_data, hir=HirLookup(tiny_graph, [snapshot]))
    n, tests = data.examples["train"].height, data.examples["test"].height
    early = np.arange(n) < n // 3
    calls = []
    compute = HirFeatures.compute

    def counted(self, *keys):  # noqa: ANN001, ANN202
        calls.append(len(keys[0]))
        return compute(self, *keys)

    monkeypatch.setattr(HirFeatures, "compute", counted)
    head = data.regroup({"train": ("train", early), "validation": ("train", ~early)})
    assert set(head.examples) == {"train", "validation"}
    assert head.examples["train"].equals(data.examples["train"].filter(pl.Series(early)))
    assert head.features["validation"].equals(data.features["train"].filter(pl.Series(~early)))
    assert head.with_hir("validation").equals(data.with_hir("train").filter(pl.Series(~early)))
    assert head.with_hir("train").equals(data.with_hir("train").filter(pl.Series(early)))
    picks = np.array([5, 1, 9])  # indices, in any order, of a regrouped window's source
    again = head.regroup({"sample": ("validation", picks), "test": ("validation", None)})
    assert again.with_hir("sample").equals(head.with_hir("validation")[picks])
    assert again.examples["test"].equals(head.examples["validation"])
    assert data.regroup({"all": ("test", None)}).with_hir("all").equals(data.with_hir("test"))
    assert calls == [n, tests]  # each source window once, whatever took rows of it
    # a copy with other rows or other snapshots computes its own
    flipped = dataclasses.replace(
        head,
        examples={**head.examples, "train": head.examples["validation"]},
        features={**head.features, "train": head.features["validation"]},
    )
    assert flipped.with_hir("train").equals(head.with_hir("validation"))
    assert len(calls) == 3
    other = dataclasses.replace(head, hir=HirLookup(tiny_graph, [snapshot]))
    assert other.with_hir("validation").equals(head.with_hir("validation"))
    assert len(calls) == 4
    with pytest.raises(ValueError, match="a mask of"):
        data.regroup({"train": ("train", early[:-1])})


@pytest.mark.parametrize("name", ["xgboost", "popularity"])
def test_a_saved_ranker_predicts_what_it_did(name, ranking_data, tmp_path):
    config = ABConfig(tune=False)
    ranker = make_ranker(name, config).fit(ranking_data)
    want = ranker.predict(ranking_data, "test")
    assert len(np.unique(want)) > 10  # a fitted model, not a constant
    out = save_ranker(ranker, name, tmp_path / "ranker")
    loaded = load_ranker(out, config)
    assert loaded is not ranker
    np.testing.assert_array_equal(loaded.predict(ranking_data, "test"), want)
    if name == "xgboost":
        assert loaded.model.calibration == ranker.model.calibration is not None
    with pytest.raises(InputError, match="already exists"):
        save_ranker(ranker, name, out)
    save_ranker(ranker, name, out, overwrite=True)  # our own folder: replaced


def test_a_ranker_folder_not_ours_is_refused(ranking_data, tmp_path):
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    (theirs / "notes.txt").write_text("keep me")
    ranker = make_ranker("popularity", ABConfig()).fit(ranking_data)
    with pytest.raises(InputError):
        save_ranker(ranker, "popularity", theirs, overwrite=True)
    assert (theirs / "notes.txt").read_text() == "keep me"
    with pytest.raises(InputError, match="not a"):
        load_ranker(theirs, ABConfig())
    ours = save_ranker(ranker, "popularity", tmp_path / "ours")
    (ours / "model.json").write_text("[]")  # damaged after saving
    with pytest.raises(InputError, match="popularity model metadata must be a JSON object"):
        load_ranker(ours, ABConfig())
    (ours / "model.json").write_text('{"format_version": 1, "kind": "xgboost"}')
    with pytest.raises(InputError, match="holds a 'xgboost' model, not 'popularity'"):
        load_ranker(ours, ABConfig())
    with pytest.raises(RuntimeError, match="save before fit"):
        save_ranker(make_ranker("multistage", ABConfig()), "multistage", tmp_path / "m")


def test_a_saved_multistage_ranker_predicts_what_it_did(
    ranking_data,
    snapshot,  # noqa: F811
    tiny_graph,
    tmp_path,
):
    small = MultiStageConfig(
        epochs=1, max_train_examples=3_000, max_valid_examples=1_000, dense_bins=4
    )
    config = ABConfig(multistage=small)
    data = dataclasses.replace(ranking_data, hir=HirLookup(tiny_graph, [snapshot]))
    ranker = make_ranker("multistage", config).fit(data)
    assert ranker.model.scaler.bins == 4  # saved and restored with its bin edges
    want = ranker.predict(data, "test")
    assert len(np.unique(want)) > 10  # a fitted model, not a constant
    out = save_ranker(ranker, "multistage", tmp_path / "ranker")
    loaded = load_ranker(out, ABConfig())  # the saved settings, not the config's defaults
    assert loaded.settings == small and "loaded from" in loaded.describe()
    np.testing.assert_array_equal(loaded.predict(data, "test"), want)
    assert loaded.model.history_log == ranker.model.history_log
    # its dense inputs are the as-of features and the HIR feature columns
    columns = ranker.model.scaler.columns
    assert columns[: len(data.features["test"].columns)] == data.features["test"].columns
    assert {"hir_cos", "hir_nbr_rate_t0.1", "hir_same_l0"} <= set(columns)
    without = dataclasses.replace(small, hir_columns=False)
    alone = make_ranker("multistage", ABConfig(multistage=without)).fit(data)
    assert alone.model.scaler.columns == data.features["test"].columns
    # the saved ranker reads its own graph and HIR width only
    with pytest.raises(InputError, match="HIR embeddings of width"):
        load_ranker(out, ABConfig()).predict(dataclasses.replace(data, hir=None), "test")
    other = dataclasses.replace(tiny_graph, fingerprint="another graph")
    with pytest.raises(InputError, match="fitted on another graph"):
        load_ranker(out, ABConfig()).predict(dataclasses.replace(data, graph=other), "test")
    (out / "weights.pt").write_bytes(b"not weights")
    with pytest.raises(InputError):
        load_ranker(out, ABConfig())


def test_the_stacked_arm_reads_a_first_stage_fitted_before_its_split(
    ranking_data,
    snapshot,  # noqa: F811
    tiny_graph,
    tmp_path,
):
    small = MultiStageConfig(epochs=1, max_train_examples=3_000, max_valid_examples=1_000)
    config = ABConfig(multistage=small, tune=False, stack_share=0.4)
    data = dataclasses.replace(ranking_data, hir=HirLookup(tiny_graph, [snapshot]))
    stacked = make_ranker("xgboost+multistage", config).fit(data)
    ts = data.column("train", "ts")
    early = ts < stacked.split
    assert 0.35 < early.mean() <= 0.4  # the oldest share, cut at an example's time
    # the first stage is the multi-stage ranker fitted on those of them labelled before
    # the split alone, choosing on the newest of them (never on validation)
    fit, choose = (pl.Series(m) for m in first_stage_rows(ts, stacked.split, 7 * DAY))
    train, features = data.examples["train"], data.features["train"]
    head = dataclasses.replace(
        data,
        examples={"train": train.filter(fit), "validation": train.filter(choose)},
        features={"train": features.filter(fit), "validation": features.filter(choose)},
    )
    alone = make_ranker("multistage", config).fit(head)
    for window in ("validation", "test"):
        want = alone.predict(data, window)
        column = stacked._features(data, window)[StackedArm.SCORE].to_numpy()
        np.testing.assert_allclose(column, want, rtol=1e-6)
    train = stacked._features(data, "train")[StackedArm.SCORE].to_numpy()
    assert np.isnan(train[early]).all() and not np.isnan(train[~early]).any()
    np.testing.assert_allclose(train[~early], alone.predict(data, "train")[~early], rtol=1e-6)
    assert StackedArm.SCORE in stacked.model._columns  # XGBoost reads the column
    want = stacked.predict(data, "test")
    assert len(np.unique(want)) > 10
    assert "before 2026-" in stacked.describe()
    out = save_ranker(stacked, "xgboost+multistage", tmp_path / "stacked")
    loaded = load_ranker(out, ABConfig())
    assert loaded.split == stacked.split and loaded.share == 0.4
    np.testing.assert_array_equal(loaded.predict(data, "test"), want)
    with pytest.raises(InputError, match="stack_share must be between 0 and 1"):
        ABConfig(stack_share=1.0)


class _FirstStage:
    """Stands in for the multi-stage ranker: records the request times it fits on."""

    def __init__(self) -> None:
        self.ts: dict[str, np.ndarray] = {}

    def fit(self, data):
        self.ts = {w: data.column(w, "ts") for w in ("train", "validation")}
        return self

    def predict(self, data, window):
        return np.full(data.examples[window].height, 0.01)


def test_the_stacked_arms_first_stage_reads_no_label_from_after_its_split(ranking_data):
    # A label of an example at t reads conversions up to t + W. The first stage's score is
    # a feature of the training examples from the split on, so a label it fits on must be
    # known before the split: one read past it would put a conversion at or after a later
    # example's request time into that example's feature.
    stacked = StackedArm(ABConfig(tune=False, stack_share=0.4))
    stacked.first = _FirstStage()
    stacked.fit(ranking_data)
    # Its epoch and calibration read labels too: chosen on the later examples, their
    # score would be a function of their own labels (of conversions after them).
    window = 7 * DAY  # the tiny world's attribution window
    fitted, chosen = stacked.first.ts["train"], stacked.first.ts["validation"]
    assert len(fitted) > 0 and (fitted + window < stacked.split).all()
    assert len(chosen) > 0 and (chosen + window < stacked.split).all()
    assert fitted.max() < chosen.min()  # it chooses on the newest of them
    # the same with the A/B's own attribution window, not the manifest's
    stacked = StackedArm(ABConfig(tune=False, stack_share=0.4, attribution_days=2.0))
    stacked.first = _FirstStage()
    stacked.fit(ranking_data)
    for labelled in stacked.first.ts.values():
        assert (labelled + 2 * DAY < stacked.split).all()


def test_the_multistage_arm_reads_click_labels_within_the_abs_attribution_window(
    ranking_data, monkeypatch
):
    # its examples are labelled with the A/B's attribution window, so they are known only
    # that long after the exposure: a click label reading further would cross the
    # window's label horizon (the stacked arm's first stage: its split)
    from hir_sdk.ranking.sequence.multistage import MultiStageRanker

    monkeypatch.setattr(MultiStageRanker, "fit", lambda self, train, valid: self)
    settings = MultiStageConfig(hir_columns=False)
    for days, window in ((None, DAY), (0.5, DAY // 2)):  # the tiny world's is 7 days
        arm = make_ranker("multistage", ABConfig(multistage=settings, attribution_days=days))
        assert arm.fit(ranking_data).model.click_window_s == window


def test_the_stacked_arm_on_the_hir_columns_keeps_its_score_in_every_column_set(
    ranking_data,
    snapshot,  # noqa: F811
    tiny_graph,
    tmp_path,
):
    small = MultiStageConfig(epochs=1, max_train_examples=3_000, max_valid_examples=1_000)
    grid = ({"max_depth": 4, "min_child_weight": 5.0},)
    config = ABConfig(multistage=small, xgboost_grid=grid, stack_share=0.4)
    data = dataclasses.replace(ranking_data, hir=HirLookup(tiny_graph, [snapshot]))
    stacked = make_ranker("xgboost+hir+multistage", config).fit(data)
    assert stacked.name == "xgboost+hir+multistage" and stacked.hir
    hir = data.with_hir("test").columns
    assert stacked._features(data, "test").columns == [*hir, StackedArm.SCORE]
    sets = stacked._feature_sets(data, [*hir, StackedArm.SCORE])
    assert set(sets) == {"all HIR columns", "HIR similarity columns"}
    assert all(v.count(StackedArm.SCORE) == 1 for v in sets.values())
    assert len(sets["HIR similarity columns"]) < len(sets["all HIR columns"])
    assert {t.feature_set for t in stacked.search.trials} == set(sets)
    assert StackedArm.SCORE in stacked.model._columns
    # the first stage is the same as the plain stacked arm's: one split, one model
    plain = make_ranker("xgboost+multistage", config).fit(data)
    assert plain.split == stacked.split
    np.testing.assert_array_equal(
        plain._features(data, "test")[StackedArm.SCORE],
        stacked._features(data, "test")[StackedArm.SCORE],
    )
    want = stacked.predict(data, "test")
    out = save_ranker(stacked, "xgboost+hir+multistage", tmp_path / "stacked")
    np.testing.assert_array_equal(load_ranker(out, ABConfig()).predict(data, "test"), want)
