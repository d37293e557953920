"""The `hir` command line end to end: synth -> graph build -> graph info, and demo."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hir_sdk.cli.main import main


def test_synth_build_info_round_trip(tmp_path, capsys):
    data, graph = tmp_path / "data", tmp_path / "graph"
    assert main(["synth", "--out", str(data), "--scale", "tiny", "--seed", "3"]) == 0
    assert "wrote tiny world (seed 3)" in capsys.readouterr().out
    assert main(["graph", "build", "--data", str(data), "--out", str(graph)]) == 0
    assert "built graph" in capsys.readouterr().out
    assert main(["graph", "info", str(graph), "--json"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["name"] == "synthetic-tiny"
    assert info["nodes"]["user"] == 1000
    assert sum(info["windows"].values()) == info["num_edges"]
    assert 0 < info["conversion_rate"] < 0.02
    assert main(["graph", "info", str(graph)]) == 0
    table = capsys.readouterr().out
    assert "(user, impression, ad)" in table and "conversion rate" in table


def test_synth_refuses_existing_output(tmp_path, capsys):
    out = tmp_path / "data"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    assert main(["synth", "--out", str(out), "--scale", "tiny"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "keep.txt").read_text() == "mine"


def test_graph_info_on_a_non_graph(tmp_path, capsys):
    assert main(["graph", "info", str(tmp_path)]) == 2
    assert "not a saved graph" in capsys.readouterr().err


def test_demo_tiny(tmp_path, capsys):
    """The whole pipeline: world, graph, encoder, snapshots, A/B with HIR, ONNX export."""
    out = tmp_path / "demo"
    argv = ["demo", "--out", str(out), "--scale", "tiny", "--steps", "4", "--bootstrap", "20"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "conversion rate" in printed and "synthetic-tiny" in printed
    assert "[7/7" in printed and "xgboost+hir vs xgboost" in printed
    assert "| exact k-NN on embeddings |" in printed and "recall@100" in printed
    assert printed.count(" ok\n") == 3  # encoder, quantizer and BoM index parity
    assert (out / "data" / "manifest.toml").exists() and (out / "graph" / "graph.json").exists()
    assert (out / "ab" / "report.html").exists() and (out / "run" / "config.toml").exists()
    assert (out / "embeddings" / "embeddings.parquet").exists()
    assert sorted(p.name for p in (out / "onnx").glob("*.onnx")) == [
        "encoder.onnx",
        "quantizer.onnx",
    ]


def test_demo_movielens(tmp_path, capsys):
    """The same pipeline on MovieLens-100K read from the installed recbole files: no truth
    folder, every movie its own owner, retrieval leaves out what users already rated."""
    out = tmp_path / "ml"
    argv = ["demo", "--dataset", "movielens-100k", "--out", str(out), "--steps", "4"]
    assert main([*argv, "--bootstrap", "20"]) == 0
    printed = capsys.readouterr().out
    assert "read movielens-100k from the recbole package: 202,518 events" in printed
    assert "xgboost+hir vs xgboost on movielens-100k" in printed
    assert "1,637 ads in the index" in printed  # movies rated before the test start
    assert printed.count(" ok\n") == 3
    assert not (out / "data" / "truth").exists()
    assert (out / "ab" / "report.html").exists()


def test_console_script_reports_usage_errors_with_exit_2():
    result = subprocess.run(
        [sys.executable, "-m", "hir_sdk.cli.main", "synth"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "--out" in result.stderr


@pytest.mark.parametrize("argv", [["--version"], ["graph", "--help"]])
def test_help_and_version(argv, capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 0
    assert capsys.readouterr().out
