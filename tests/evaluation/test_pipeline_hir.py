"""`hir ab` with the HIR arms: snapshots of an encoder trained before the ranking window,
both arms fitted after it, and clear failures when the encoder saw too much."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig, run_ab
from hir_sdk.ranking.baselines import XGBoostConfig
from hir_sdk.ranking.sequence import MultiStageConfig, OnlineRankerConfig, UserModelConfig

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)

SMALL_RANKER = MultiStageConfig(
    user_model=UserModelConfig(dim=16, heads=2, layers=1, out_dim=8, history=32),
    ranker=OnlineRankerConfig(dim=16, heads=2, recent=8, hidden=16, experts=2, top_k=1),
    epochs=1,
    batch_size=256,
)


def _config(treatment: str, run: Path | None) -> ABConfig:
    return ABConfig(
        treatment=treatment,
        n_bootstrap=20,
        xgboost=XGBoostConfig(n_estimators=40),
        run=None if run is None else str(run),
        multistage=SMALL_RANKER,
    )


def test_xgboost_with_hir_features(tiny_world, early_run):
    result = run_ab(tiny_world, _config("xgboost+hir", early_run))
    until = 1_768_608_000  # 2026-01-17
    assert result.examples["train"].frame["ts"].min() >= until
    protocol = result.report.protocol
    assert "fit window" in protocol and "2026-01-17" in protocol["fit window"]
    assert protocol["fit window"].count("2026-") == 4  # from, and three snapshots
    p = result.predictions["p_xgboost+hir"].to_numpy()
    assert np.isfinite(p).all() and ((p > 0) & (p < 1)).all()
    assert not np.allclose(p, result.predictions["p_xgboost"].to_numpy())
    assert "hir snapshots" in result.timings
    # the treatment chose on validation between all HIR columns and the similarity ones
    search = result.searches["xgboost+hir"]
    sets = {t.feature_set for t in search.trials}
    assert sets == {"all HIR columns", "HIR similarity columns"}
    assert len(search.trials) == 2 * len({t.config for t in search.trials})
    best = min(t.validation_logloss for t in search.trials)
    assert search.chosen.validation_logloss == best
    used = set(search.model._columns)
    assert ("hir_ad_l0" in used) == (search.chosen.feature_set == "all HIR columns")
    assert {"hir_cos", "hir_recent_click_max", "user_days_since_imp"} <= used  # and baseline
    assert search.chosen.describe() in protocol["xgboost+hir"]


@pytest.fixture(scope="module")
def multistage_ab(tiny_world, early_run):
    return run_ab(tiny_world, _config("multistage", early_run))


def test_multistage_arm_predicts_calibrated_probabilities(multistage_ab):
    p = multistage_ab.predictions["p_multistage"].to_numpy()
    assert ((p > 0) & (p < 1)).all()
    assert not np.allclose(p, multistage_ab.predictions["p_xgboost"].to_numpy())
    assert "Platt" in multistage_ab.report.protocol["multistage"]


@pytest.mark.slow  # a second multi-stage A/B; `make test-slow`
def test_multistage_arm_is_deterministic(tiny_world, early_run, multistage_ab):
    again = run_ab(tiny_world, _config("multistage", early_run))
    np.testing.assert_array_equal(
        multistage_ab.predictions["p_multistage"].to_numpy(),
        again.predictions["p_multistage"].to_numpy(),
    )


def test_hir_arms_need_a_run(tiny_world):
    with pytest.raises(InputError, match="xgboost\\+hir read HIR snapshots: give an encoder run"):
        run_ab(tiny_world, _config("xgboost+hir", None))


def test_encoder_trained_through_the_ranking_window_is_refused(tiny_world, tiny_run):
    # tiny_run trained until the validation start: no training example is left after it
    with pytest.raises(InputError, match="no labelled training exposures from"):
        run_ab(tiny_world, _config("multistage", tiny_run))


def test_cli_ab_without_run_exits_2(tiny_world, tmp_path, capsys):
    out = tmp_path / "ab"
    code = main(["ab", "--data", str(tiny_world), "--out", str(out), "--treatment", "multistage"])
    assert code == 2 and not out.exists()
    assert "give an encoder run" in capsys.readouterr().err


def test_snapshot_lookup_refuses_fitting_before_the_encoder_window(tiny_world, early_run):
    from hir_sdk.graph import build_graph_from_dir
    from hir_sdk.ranking.hir_snapshots import build_hir_lookup

    graph = build_graph_from_dir(tiny_world)
    lookup = build_hir_lookup(early_run, tiny_world, graph, times=[1_768_608_000])
    lookup.check_fit_window(1_768_608_000)  # at the boundary: fine
    with pytest.raises(InputError, match="before the HIR encoder's training window ended"):
        lookup.check_fit_window(1_768_608_000 - 1)
    stale = dataclasses.replace(lookup.snapshots[0], meta={**lookup.snapshots[0].meta})
    del stale.meta["trained_until"]
    from hir_sdk.ranking.hir_lookup import HirLookup

    with pytest.raises(InputError, match="does not record"):
        HirLookup(graph, [stale]).check_fit_window(0)


def test_lookup_adds_new_ads_on_creation_and_daily_between_full_refreshes(tiny_world, early_run):
    from hir_sdk.graph import build_graph_from_dir
    from hir_sdk.interests.arrivals import ON_CREATION
    from hir_sdk.ranking.hir_snapshots import build_hir_lookup

    graph = build_graph_from_dir(tiny_world)
    t = graph.manifest.time
    times = [t.validation_start, t.test_start]
    lookup = build_hir_lookup(early_run, tiny_world, graph, times=times)
    daily = build_hir_lookup(early_run, tiny_world, graph, times=times, creation_latency=None)
    plain = build_hir_lookup(
        early_run, tiny_world, graph, times=times, arrivals_every=None, creation_latency=None
    )
    assert [s.as_of for s in lookup.full_snapshots] == times
    assert len(plain.snapshots) == 2
    arrivals = [s for s in daily.snapshots if "arrivals_since" in s.meta]
    assert arrivals and len(daily.snapshots) == 2 + len(arrivals)
    for s in arrivals:
        base = max(f for f in times if f < s.as_of)
        assert s.meta["arrivals_since"] == base and (s.as_of - base) % 86_400 == 0
        assert set(s.table["node_type"].cast(str).unique().to_list()) == {"ad"}
        assert s.quantizer is daily.full_snapshots[times.index(base)].quantizer
    # by default, one creation snapshot more per full snapshot, a minute's latency
    created = [s for s in lookup.snapshots if ON_CREATION in s.meta]
    assert len(created) == 2 and len(lookup.snapshots) == len(daily.snapshots) + 2
    assert all(s.meta[ON_CREATION] == 60 for s in created)
    assert lookup.created_rows == sum(len(s.table) for s in created) > 0 == daily.created_rows
    # an ad launched during the test window has HIR rows from a minute after its launch,
    # and from its first daily arrival snapshot on, the daily rows
    ads = np.arange(
        graph.type_offsets[graph.type_code("ad")], graph.type_offsets[graph.type_code("ad") + 1]
    )
    late = ads[(graph.created_ts[ads] >= t.test_start) & (graph.created_ts[ads] < t.end - 86_400)]
    born = graph.created_ts[late]
    day_after = (born - t.test_start) // 86_400 * 86_400 + t.test_start + 86_400
    late, born, day_after = (a[born + 60 < day_after] for a in (late, born, day_after))
    assert len(late) > 0
    assert daily.lookup(late, day_after).found.all()
    assert not daily.lookup(late, day_after - 1).found.any()
    assert lookup.lookup(late, born + 60).found.all()
    assert not lookup.lookup(late, born + 59).found.any()
    np.testing.assert_array_equal(lookup.lookup(late, day_after).z, daily.lookup(late, day_after).z)
    assert not plain.lookup(late, np.full(len(late), t.end - 1)).found.any()
