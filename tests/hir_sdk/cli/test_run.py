"""`hir run`: the main job on a dataset folder in the input format (here a tiny world
without its content table: the defaults must fit data without content)."""

from __future__ import annotations

import json
import shutil
import sys
from dataclasses import replace
from pathlib import Path

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest

from hir_sdk.cli.main import main
from hir_sdk.interests import read_embeddings
from hir_sdk.io.output_folder import marker_kind
from hir_sdk.pipeline import encoder_settings as base_config
from hir_sdk.schema.dataset import CONTENT_FILE
from hir_sdk.schema.manifest import load_manifest
from hir_sdk.synth import TRUTH_DIR
from hir_sdk.training import load_config
from hir_sdk.training.preflight import check_before_loading
from tests.hir_sdk.cli.test_cli import RUNS
from tests.hir_sdk.cli.test_cli import SMALL_ENCODER as DEMO_ENCODER

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)

# test_cli.py's small encoder, with content features left to the data
SMALL_ENCODER = DEMO_ENCODER.replace("use_content = true\n", "")


def test_content_features_follow_the_data(tmp_path):
    assert "use_content" not in SMALL_ENCODER
    assert base_config(None, has_content=True).use_content
    assert not base_config(None, has_content=False).use_content
    # a config file that leaves use_content out changes only what it sets
    partial = tmp_path / "partial.toml"
    partial.write_text("[engagement]\nscale = 20.0\n")
    config = base_config(str(partial), has_content=True)
    assert config.use_content and config.engagement.scale == 20.0
    assert not base_config(str(partial), has_content=False).use_content
    off = tmp_path / "off.toml"
    off.write_text("use_content = false\n")
    assert not base_config(str(off), has_content=True).use_content
    on = tmp_path / "on.toml"
    on.write_text("use_content = true\n")
    assert base_config(str(on), has_content=False).use_content


def _rename_types(data: Path, names: dict[str, str]) -> None:
    """Rename node types in a dataset folder's manifest and tables."""
    import polars as pl
    import tomli_w

    from hir_sdk.schema.dataset import EDGES_FILE, NODES_FILE
    from hir_sdk.schema.manifest import MANIFEST_FILE

    manifest = tomllib.loads((data / MANIFEST_FILE).read_text())
    manifest["node_types"] = [names.get(t, t) for t in manifest["node_types"]]
    for spec in manifest["edge_types"]:
        spec["src"], spec["dst"] = (
            names.get(spec["src"], spec["src"]),
            names.get(spec["dst"], spec["dst"]),
        )
    (data / MANIFEST_FILE).write_text(tomli_w.dumps(manifest))
    for file, columns in ((NODES_FILE, ["node_type"]), (EDGES_FILE, ["src_type", "dst_type"])):
        table = pl.read_parquet(data / file)
        renamed = [pl.col(c).cast(pl.String).replace(names) for c in columns]
        table.with_columns(renamed).write_parquet(data / file)


def test_run_on_a_dataset_without_content(tiny_world, tmp_path, capsys):
    """Without content, and with other names for the users and ads (`member`,
    `creative`): the exposure edges say which types are ranked for which."""
    data, out, config = tmp_path / "data", tmp_path / "job", tmp_path / "encoder.toml"
    shutil.copytree(tiny_world, data, ignore=shutil.ignore_patterns(CONTENT_FILE, TRUTH_DIR))
    _rename_types(data, {"user": "member", "ad": "creative"})
    config.write_text(SMALL_ENCODER)
    argv = ["run", "--data", str(data), "--out", str(out), "--config", str(config)]
    argv += ["--steps", "3", "--bootstrap", "20"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "[6/6" in printed
    assert "refreshed it until the validation and the test start (1 warm-started" in printed
    # the encoder and its warm-started refreshes; each snapshot by the newest before it
    t = load_manifest(data / "manifest.toml").time
    runs = {name: load_config(out / name / "config.toml") for name in RUNS}
    assert [c.steps for c in runs.values()] == [3, 1, 1]  # refreshes: a third
    assert {(c.model.dim, c.batch_size, c.use_content) for c in runs.values()} == {(32, 24, False)}
    assert {c.select for c in runs.values()} == {"last"}
    assert [Path(c.init_from).name for c in runs.values()] == ["", "run", "run_validation"]
    # the published runs, not the temporary folder: the configs can be reused as they are
    assert [c.init_from for c in runs.values()][1:] == [
        str((out / name).resolve()) for name in ("run", "run_validation")
    ]
    check_before_loading(runs["run_test"], data)  # what `hir fit --config` checks first
    assert [c.train_until for c in runs.values()][1:] == [
        str(t.validation_start),
        str(t.test_start),
    ]
    exported = json.loads((out / "onnx" / "export.json").read_text())
    # the run as it is now, not in the temporary folder the job wrote into
    assert exported["run"] == str((out / "run_test").resolve())
    assert exported["trained_until"] == t.test_start
    embeddings = read_embeddings(out / "embeddings")
    assert embeddings.meta["run"] == str((out / "run_test").resolve())
    assert set(embeddings.table["node_type"].cast(str).unique()) == {"member", "creative"}
    assert "| exact k-NN on embeddings |" in printed and "xgboost+hir vs xgboost" in printed
    # the engagement prior's weight, chosen on the validation window and printed
    assert "engagement prior weight" in printed and "chosen on the validation window" in printed
    assert "| popularity, time-decayed (the prior alone) |" in printed
    assert printed.count(" ok\n") == 3  # encoder, quantizer and BoM index parity
    job = tomllib.loads((out / "job.toml").read_text())
    assert job["data"] == str(data.resolve()) and job["refresh_steps"] == 1
    assert job["ab"] == {"control": "xgboost", "treatment": "xgboost+hir", "bootstrap": 20}
    assert job["encoder"]["model"]["dim"] == 32 and not job["encoder"]["use_content"]
    assert marker_kind(out) == "job" and marker_kind(out / "ab") == "report"
    written = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert written == {"ab", "embeddings", "graph", "job.toml", "onnx", "retrieval.json", *RUNS}
    # the retrieval figures and the prior's choice, as printed
    retrieval = json.loads((out / "retrieval.json").read_text())
    chosen = retrieval["prior_choice"]
    assert retrieval["prior_weight"] == chosen["weight"] and chosen["window"] == "validation"
    assert f"engagement prior weight {chosen['weight']:g}, chosen" in printed
    assert [row["weight"] for row in chosen["scores"]][0] == 0.0
    # the prior's decay, chosen with the weights, is the one the table ranked with
    scales = [row["half_life_scale"] for row in chosen["scores_by_half_life_scale"]]
    assert scales == [1.0, 0.25, 4.0, 16.0, None]  # None: infinity, counts undecayed
    assert retrieval["prior_half_life_scale"] == chosen["half_life_scale"] in scales
    assert retrieval["k_values"] == [20, 100] and retrieval["pairs"] > 0
    exact = retrieval["recall"]["exact k-NN on embeddings"]
    assert len(exact) == 2 and 0 <= exact[0] <= exact[1] <= 1
    assert (out / "ab" / "report.html").exists()
    assert sorted(p.name for p in (out / "onnx").glob("*.onnx")) == [
        "encoder.onnx",
        "quantizer.onnx",
    ]
    assert main(argv) == 2  # written by hir run: replaced only with --overwrite
    assert "pass --overwrite to replace it" in capsys.readouterr().err


def test_run_refuses_bad_folders_before_any_work(tiny_world, tmp_path, capsys):
    absent = tmp_path / "absent"
    assert main(["run", "--data", str(absent), "--out", str(tmp_path / "a")]) == 2
    assert "dataset folder not found" in capsys.readouterr().err
    inside = Path(tiny_world) / "job"
    assert main(["run", "--data", str(tiny_world), "--out", str(inside)]) == 2
    assert capsys.readouterr().err and not inside.exists()
    config = tmp_path / "encoder.toml"
    config.write_text("[model]\ndim = 0\n")
    out = tmp_path / "job"
    assert main(["run", "--data", str(tiny_world), "--out", str(out), "--config", str(config)]) == 2
    assert str(config) in capsys.readouterr().err and not out.exists()


def test_a_log_without_conversions_in_a_window_fails_before_training(
    tiny_world, tmp_path, capsys, monkeypatch
):
    """No conversion in the validation window (where each ranker chooses its settings):
    one message naming the window, exit code 2, in seconds rather than after training."""
    import polars as pl

    import hir_sdk.training.refresh_chain as refresh_chain
    from hir_sdk.schema.dataset import EDGES_FILE

    data, out = tmp_path / "data", tmp_path / "job"
    shutil.copytree(tiny_world, data)
    manifest = load_manifest(data / "manifest.toml")
    t = manifest.time
    conversions = [e.rel for e in manifest.edge_types_with_role("conversion")]
    edges = pl.read_parquet(data / EDGES_FILE)
    in_validation = (pl.col("ts") >= t.validation_start) & (pl.col("ts") < t.test_start)
    edges.filter(~(pl.col("edge_type").is_in(conversions) & in_validation)).write_parquet(
        data / EDGES_FILE
    )

    def no_training(*args, **kwargs):
        raise AssertionError("hir run trained before checking the windows")

    monkeypatch.setattr(refresh_chain, "train_refreshed", no_training)
    assert main(["run", "--data", str(data), "--out", str(out), "--steps", "3"]) == 2
    err = capsys.readouterr().err
    assert "the validation window" in err and "no conversion" in err
    assert "chooses its settings" in err and not out.exists()


def test_a_manifest_start_long_before_the_log_still_trains_on_its_first_half(
    tiny_world, tmp_path, monkeypatch
):
    """A manifest whose `time.start` lies a year before the first edge (a round date before
    the log begins) is valid: the first encoder's window is the first half of the training
    window's data, not of the manifest's span, which would end before any edge."""
    import hir_sdk.training.refresh_chain as refresh_chain
    from hir_sdk.graph import build_graph_from_dir
    from hir_sdk.schema.manifest import DAY, MANIFEST_FILE

    data, out = tmp_path / "data", tmp_path / "job"
    shutil.copytree(tiny_world, data)
    manifest = load_manifest(data / MANIFEST_FILE)
    t = manifest.time
    early = replace(manifest, time=replace(t, start=t.start - 365 * DAY))
    (data / MANIFEST_FILE).write_text(early.to_toml())
    first = int(build_graph_from_dir(data).ts[0])
    seen = {}

    class Trained(Exception):
        pass

    def record(data, out, first_run, ends, **kwargs):
        seen.update(ends)
        raise Trained

    monkeypatch.setattr(refresh_chain, "train_refreshed", record)
    with pytest.raises(Trained):
        main(["run", "--data", str(data), "--out", str(out), "--steps", "3"])
    assert seen["run"] == first + (t.validation_start - first) // 2
