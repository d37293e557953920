"""`hir ab` end to end on the tiny world, and its clear failures."""

from __future__ import annotations

import json

import numpy as np
import polars as pl
import pytest

from hir_sdk.cli.main import main
from hir_sdk.evaluation.pipeline import ABConfig, run_ab, write_report
from hir_sdk.ranking.baselines import XGBoostConfig

FAST = ABConfig(n_bootstrap=40, xgboost=XGBoostConfig(n_estimators=40))


@pytest.fixture(scope="module")
def run(tiny_world):
    return run_ab(tiny_world, FAST)


def test_report_folder_has_every_artifact(run, tmp_path):
    out = write_report(run, tmp_path / "report")
    assert sorted(p.name for p in out.iterdir()) == [
        ".hir-output.json",  # the output marker (hir_sdk.io.MARKER_FILE)
        "metrics.json",
        "predictions.parquet",
        "report.html",
        "report.md",
    ]
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["verdict"] == run.report.ab.verdict
    assert metrics["control"] == "xgboost" and metrics["treatment"] == "popularity"
    predictions = pl.read_parquet(out / "predictions.parquet")
    assert predictions.height == run.examples["test"].size == metrics["examples"]
    assert predictions["label"].sum() == metrics["positives"] > 0
    md = (out / "report.md").read_text()
    html = (out / "report.html").read_text()
    for text in (
        "cold-start advertisers",
        "new advertisers",
        "cold-start ads",
        "How each slice is defined",
        "sparse users",
        "super-interest: fashion",
        "censored",
        "NE",
    ):
        assert text in md and text in html


def test_slices_and_protocol(run):
    names = [s.name for s in run.report.ab.slices]
    assert names[:5] == [
        "cold-start ads",
        "new ads (first exposure < 14 days before the request)",
        "cold-start advertisers",
        "new advertisers (first exposure < 14 days before the request)",
        "sparse users (< 5 events before cutoff)",
    ]
    assert sum(n.startswith("super-interest") for n in names) == 6
    total = sum(s.examples for s in run.report.ab.slices if s.name.startswith("super"))
    assert total == run.report.ab.examples  # every test ad has a planted super-interest
    assert "windows" in run.report.protocol and "attribution" in run.report.protocol
    # the report says how each slice is defined
    assert "first exposure" in run.report.slice_rules["cold-start advertisers"]


def test_the_xgboost_arm_is_tuned_on_validation(run):
    search = run.searches["xgboost"]
    assert run.models["xgboost"].model is search.model
    assert len(search.trials) == len(FAST.xgboost_grid)
    assert search.chosen.validation_logloss == min(t.validation_logloss for t in search.trials)
    assert search.model.config == search.chosen.config
    assert search.model.config.n_estimators == FAST.xgboost.n_estimators
    assert "chosen on validation" in run.report.protocol["xgboost"]


def test_run_is_deterministic(tiny_world, run):
    again = run_ab(tiny_world, FAST)
    assert repr(again.report.ab) == repr(run.report.ab)  # repr: NaN (no interval) == NaN
    assert again.predictions.equals(run.predictions)


def test_cli_ab(tiny_world, tmp_path, capsys):
    out = tmp_path / "ab"
    args = ["ab", "--data", str(tiny_world), "--out", str(out), "--bootstrap", "40", "--no-tune"]
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "beats" in printed or "no significant" in printed
    md = (out / "report.md").read_text()
    assert "best iteration" in md and "chosen on validation" not in md  # --no-tune


def test_cli_ab_without_conversions_exits_2(write_dataset, tmp_path, capsys):
    out = tmp_path / "ab"
    assert main(["ab", "--data", str(write_dataset()), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no conversion edge type" in err and not out.exists()


def test_cli_ab_with_an_empty_test_window_exits_2(tiny_world, tmp_path, capsys):
    out = tmp_path / "ab"
    code = main(["ab", "--data", str(tiny_world), "--out", str(out), "--attribution-days", "30"])
    assert code == 2
    err = capsys.readouterr().err
    assert "window has no exposures with a known label" in err and "censored" in err
    assert not out.exists()


def test_config_rejects_unknown_models():
    from hir_sdk.errors import InputError

    with pytest.raises(InputError, match="unknown model"):
        ABConfig(control="gpt")
    with pytest.raises(InputError, match="different models"):
        ABConfig(control="xgboost", treatment="xgboost")


def test_a_stacked_arm_that_cannot_split_its_training_window_fails_before_training(tiny_world):
    """The stacked arm's first stage fits on the oldest `stack_share` of the training
    examples labelled before its split: a share that leaves none there is refused by the
    windows' check (which `hir run` calls before the encoders train), not after the
    training."""
    from hir_sdk.errors import InputError
    from hir_sdk.evaluation.pipeline import check_windows
    from hir_sdk.graph import build_graph
    from hir_sdk.schema import load_dataset

    graph = build_graph(load_dataset(tiny_world))
    stacked = ABConfig(control="xgboost", treatment="xgboost+multistage", stack_share=1e-9)
    with pytest.raises(InputError, match="xgboost\\+multistage: the oldest 1e-09 of the"):
        check_windows(graph, stacked)
    # the oldest fifth lies within one attribution window of the split: no label of it is
    # known before the split, so the first stage would have nothing to fit on
    fifth = ABConfig(control="xgboost", treatment="xgboost+multistage", stack_share=0.2)
    with pytest.raises(InputError, match="with an attribution window of 7 days too few are"):
        check_windows(graph, fifth)
    check_windows(graph, ABConfig(control="xgboost", treatment="xgboost+multistage"))
    check_windows(graph, ABConfig(control="xgboost", treatment="xgboost+hir", stack_share=1e-9))


def test_cli_ab_with_a_truth_folder_that_does_not_exist_exits_2(tiny_world, tmp_path, capsys):
    """A mistyped --truth used to drop the per-interest slices without a word."""
    out, typo = tmp_path / "ab", tmp_path / "truht"
    argv = ["ab", "--data", str(tiny_world), "--out", str(out), "--truth", str(typo)]
    assert main(argv) == 2
    assert f"{typo}: the planted-truth folder does not exist" in capsys.readouterr().err
    assert not out.exists()
    typo.write_text("a file")
    assert main(argv) == 2
    assert f"{typo}: the planted-truth folder is not a folder" in capsys.readouterr().err


def test_conversions_that_never_reach_an_exposed_ads_owner_are_explained(
    tiny_world, tmp_path, capsys
):
    """Without the structural edges that join ads to their advertisers no conversion is
    attributed: the message says how many there are and which rule ties them back."""
    import shutil

    from hir_sdk.schema.dataset import EDGES_FILE
    from hir_sdk.schema.manifest import load_manifest

    data = tmp_path / "data"
    shutil.copytree(tiny_world, data)
    manifest = load_manifest(data / "manifest.toml")
    structural = [e.rel for e in manifest.edge_types_with_role("structural")]
    edges = pl.read_parquet(data / EDGES_FILE)
    edges.filter(~pl.col("edge_type").is_in(structural)).write_parquet(data / EDGES_FILE)
    conversions = edges.filter(
        pl.col("edge_type").is_in([e.rel for e in manifest.edge_types_with_role("conversion")])
    ).height
    assert main(["ab", "--data", str(data), "--out", str(tmp_path / "ab")]) == 2
    err = capsys.readouterr().err
    assert f"the log holds {conversions:,} conversion edges" in err and conversions > 0
    assert "funnel.owner_type = 'advertiser'" in err
    # no conversion edge at all: said so, without the owner advice
    kinds = [e.rel for e in manifest.edge_types_with_role("conversion")]
    edges.filter(~pl.col("edge_type").is_in(kinds)).write_parquet(data / EDGES_FILE)
    assert main(["ab", "--data", str(data), "--out", str(tmp_path / "ab")]) == 2
    err = capsys.readouterr().err
    assert "the log holds no conversion edges" in err and "owner_type" not in err


def test_a_test_window_of_one_user_is_refused(tiny_world, tmp_path, capsys):
    """The intervals resample users: with one, every resample is the same and a
    zero-width interval was reported as significant."""
    import shutil

    from hir_sdk.schema.dataset import EDGES_FILE
    from hir_sdk.schema.manifest import load_manifest

    data = tmp_path / "data"
    shutil.copytree(tiny_world, data)
    t = load_manifest(data / "manifest.toml").time
    edges = pl.read_parquet(data / EDGES_FILE)
    first = edges.filter((pl.col("src_type") == "user") & (pl.col("ts") >= t.test_start))
    keep = first["src_id"][0]
    others = (pl.col("src_type") == "user") & (pl.col("src_id") != keep)
    edges.filter(~(others & (pl.col("ts") >= t.test_start))).write_parquet(data / EDGES_FILE)
    assert main(["ab", "--data", str(data), "--out", str(tmp_path / "ab")]) == 2
    assert "come from 1 user" in capsys.readouterr().err


def test_metrics_json_is_strict_json_when_intervals_are_missing(run, tmp_path):
    """Too few resamples leave the intervals out (NaN): metrics.json writes them as
    null, since JSON has no NaN (strict readers refuse the file otherwise)."""
    import dataclasses

    from hir_sdk.evaluation.ab import compare

    p = run.predictions
    few = compare(
        p["label"].to_numpy(),
        p["p_xgboost"].to_numpy(),
        p["p_popularity"].to_numpy(),
        p["user_id"].to_numpy(),
        n_bootstrap=10,
    )
    report = dataclasses.replace(run.report, ab=few)
    out = write_report(dataclasses.replace(run, report=report), tmp_path / "report")

    def refuse(constant):
        raise AssertionError(f"metrics.json holds {constant}")

    metrics = json.loads((out / "metrics.json").read_text(), parse_constant=refuse)
    ne = next(m for m in metrics["metrics"] if m["metric"] == "ne")
    assert ne["delta"]["low"] is None and ne["delta"]["estimate"] is not None
    assert metrics["verdict"].startswith("no verdict")


def test_a_slice_of_one_user_gets_no_interval():
    """Every resample that draws a one-user slice's user gives the same delta: a
    zero-width interval marked significant, now left out like a slice without
    conversions."""
    from hir_sdk.evaluation.ab import compare

    rng = np.random.default_rng(0)
    users = np.repeat(np.arange(30), 40)
    y = (rng.random(len(users)) < 0.3).astype(float)
    c = np.clip(0.3 + 0.1 * rng.normal(size=len(y)), 0.01, 0.99)
    t = np.clip(0.5 * c + 0.5 * y, 0.01, 0.99)
    result = compare(y, c, t, users, slices={"one user": users == 0, "two": users < 2})
    one, two = result.slices
    assert one.deltas == () and len(two.deltas) > 0
