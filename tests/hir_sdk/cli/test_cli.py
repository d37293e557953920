"""The `hir` command line end to end: synth -> graph build -> graph info, and demo."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from hir_sdk.cli.demo import demo_settings
from hir_sdk.cli.main import build_parser, main
from hir_sdk.io.output_folder import marker_kind
from hir_sdk.schema import load_dataset
from hir_sdk.training import load_config
from hir_sdk.training.config import OptimConfig

RUNS = ("run", "run_validation", "run_test")  # the demo's encoder and its refreshes


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
    ads = info["nodes"]["ad"]
    assert info["attributes"] == {"price": info["nodes"]["product"], "bid": ads}
    assert main(["graph", "info", str(graph)]) == 0
    table = capsys.readouterr().out
    assert "(user, impression, ad)" in table and "conversion rate" in table
    assert f"bid {ads:,}" in table


def test_a_closed_pipe_ends_quietly(tiny_world, tmp_path):
    """`hir graph info GRAPH | head -1`: the reader is gone before the table is printed;
    the command ends with 141 (as SIGPIPE would) and prints no traceback."""
    import os

    graph = tmp_path / "graph"
    assert main(["graph", "build", "--data", str(tiny_world), "--out", str(graph)]) == 0
    read, write = os.pipe()
    os.close(read)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "hir_sdk.cli.main", "graph", "info", str(graph)],
            stdout=write,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write)
    assert result.returncode == 141
    assert result.stderr == ""


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


SMALL_ENCODER = """\
batch_size = 24
use_content = true
[model]
dim = 32
out_dim = 16
prototypes = [4, 16, 64]
[distill]
seed_rows = 256
"""


@pytest.mark.parametrize(
    ("dataset", "name", "truth"),
    [("synthetic", "synthetic-tiny", True), ("movielens-100k", "movielens-100k", False)],
)
def test_demo_writes_the_data_then_runs_the_job(
    dataset, name, truth, tmp_path, capsys, monkeypatch
):
    """`hir demo` is: write the built-in data into `--out/data`, then `hir run`'s job on
    it (`run_job`, tested end to end by tests/hir_sdk/cli/test_run.py; the whole demo by
    `test_demo_tiny`, in `make test-slow`)."""
    out, config = tmp_path / "demo", tmp_path / "encoder.toml"
    config.write_text(SMALL_ENCODER)
    calls = []

    def run_job(data, tmp, settings, *, progress, truth, final):
        dataset = load_dataset(data)  # the data is whole and valid when the job starts
        assert final == out  # the job's records name the folder it becomes
        calls.append((data.relative_to(tmp), truth and truth.relative_to(tmp), settings.encoder))
        return dataset.manifest.name

    monkeypatch.setattr("hir_sdk.cli.demo.run_job", run_job)
    monkeypatch.setattr("hir_sdk.cli.demo.print_results", lambda result, out: calls.append(result))
    argv = ["demo", "--out", str(out), "--dataset", dataset, "--scale", "tiny"]
    assert main([*argv, "--config", str(config)]) == 0
    [(data, truth_dir, base), shown] = calls
    assert data == Path("data") and shown == name
    assert truth_dir == (Path("data") / "truth" if truth else None)
    assert (base.model.dim, base.batch_size, base.use_content) == (32, 24, True)
    assert marker_kind(out) == "demo" and marker_kind(out / "data") == "dataset"
    assert "[1/7" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], (64, 120, 40, 64, 48, 4096)),  # the quick preset
        (["--steps", "90"], (64, 90, 30, 64, 48, 4096)),
        (["--scale", "small"], (128, 300, 100, 64, 96, 8192)),
        (["--dataset", "movielens-100k"], (128, 300, 100, 64, 96, 8192)),
        (["--config", "{mine}"], (32, 120, 40, 24, 48, 256)),  # its keys over the preset's
        (["--config", "{lr}", "--refresh-steps", "0"], (64, 120, 0, 64, 48, 4096)),
    ],
)
def test_the_demo_presets(argv, expected, tmp_path):
    """`hir demo` runs the quick world with a smaller encoder (width, views, seeding rows)
    and 120 steps unless told otherwise; the full run (`--scale small`, MovieLens-100K)
    has `hir run`'s defaults."""
    (tmp_path / "mine.toml").write_text(SMALL_ENCODER)
    (tmp_path / "lr.toml").write_text("[optim]\nlr = 0.001\n")
    argv = [a.format(mine=tmp_path / "mine.toml", lr=tmp_path / "lr.toml") for a in argv]
    settings = demo_settings(build_parser().parse_args(["demo", *argv]))
    encoder = settings.encoder
    assert (
        encoder.model.dim,
        settings.steps,
        settings.refresh,
        encoder.batch_size,
        encoder.sampler().teacher.max_nodes,
        encoder.distill.seed_rows,
    ) == expected
    assert encoder.use_content
    assert encoder.optim.lr == (0.001 if "lr.toml" in " ".join(argv) else OptimConfig().lr)


@pytest.mark.slow  # the whole demo; `hir run`'s job is tested end to end in test_run.py
def test_demo_tiny(tmp_path, capsys):
    """The whole demo: the world written, then `hir run`'s stages on it, with content
    features; a small encoder from `--config`."""
    out, config = tmp_path / "demo", tmp_path / "encoder.toml"
    config.write_text(SMALL_ENCODER)
    argv = ["demo", "--out", str(out), "--scale", "tiny", "--steps", "3", "--bootstrap", "20"]
    argv += ["--config", str(config)]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "conversion rate" in printed and "synthetic-tiny" in printed
    assert "refreshed it until the validation and the test start (1 warm-started" in printed
    # the encoders' schedule and which encoder embedded and exported what: test_run.py
    runs = {name: load_config(out / name / "config.toml") for name in RUNS}
    assert {(c.model.dim, c.batch_size, c.use_content) for c in runs.values()} == {(32, 24, True)}
    # the data lies inside the output: job.toml names it by its path there
    assert 'data = "data"' in (out / "job.toml").read_text().splitlines()
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
    # each part is marked with its kind; a second demo replaces it only with --overwrite
    kinds = {name: marker_kind(out / name) for name in ("data", "graph", "run", "ab", "onnx")}
    assert marker_kind(out) == "demo" and kinds == {
        "data": "dataset",
        "graph": "graph",
        "run": "run",
        "ab": "report",
        "onnx": "onnx",
    }
    assert main(argv) == 2
    assert "pass --overwrite to replace it" in capsys.readouterr().err


@pytest.mark.slow  # the pipeline of test_demo_tiny on MovieLens-100K: `make test-slow`
def test_demo_movielens(tmp_path, capsys):
    """The same pipeline on MovieLens-100K read from the installed recbole files: no truth
    folder, every movie its own owner, retrieval leaves out what users already rated."""
    out = tmp_path / "ml"
    argv = ["demo", "--dataset", "movielens-100k", "--out", str(out), "--steps", "4"]
    assert main([*argv, "--bootstrap", "20", "--refresh-steps", "0"]) == 0
    printed = capsys.readouterr().out
    assert "refreshed" not in printed  # one encoder, its last checkpoint (a refresh run)
    assert load_config(out / "run" / "config.toml").select == "last"
    assert not any((out / name).exists() for name in RUNS[1:])
    assert "read movielens-100k from the recbole package: 202,518 events" in printed
    assert "xgboost+hir vs xgboost on movielens-100k" in printed
    assert "1,637 ads in the index" in printed  # movies rated before the test start
    assert printed.count(" ok\n") == 3
    assert not (out / "data" / "truth").exists()
    assert (out / "ab" / "report.html").exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--steps", "0"], "must be >= 1, got 0"),
        (["demo", "--refresh-steps", "x"], "not an integer: 'x'"),
        (["demo", "--refresh-steps", "-1"], "must be >= 0, got -1"),
        (["demo", "--bootstrap", "0"], "must be >= 1, got 0"),
        (["fit", "--max-steps", "0"], "must be >= 1, got 0"),
        (["ab", "--bootstrap", "0"], "must be >= 1, got 0"),
        (["embed", "--codebooks", "0"], "must be >= 1, got 0"),
        (["embed", "--codewords", "1.5"], "not an integer: '1.5'"),
        (["export", "--check-nodes", "0"], "must be >= 1, got 0"),
    ],
)
def test_integer_options_are_checked(argv, message, capsys):
    """Out-of-range counts are usage errors (exit 2) before any work starts."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and f"argument {argv[1]}" in err


def test_demo_refuses_a_bad_config_before_any_work(tmp_path, capsys):
    config, out = tmp_path / "encoder.toml", tmp_path / "demo"
    config.write_text("[model]\ndim = 0\n")
    assert main(["demo", "--out", str(out), "--scale", "tiny", "--config", str(config)]) == 2
    assert str(config) in capsys.readouterr().err
    assert not out.exists()
    assert main(["demo", "--out", str(out), "--config", str(tmp_path / "absent.toml")]) == 2
    assert "config file not found" in capsys.readouterr().err and not out.exists()


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


def test_ctrl_c_ends_a_command_with_one_line_and_nothing_half_written(tmp_path):
    """Ctrl-C (SIGINT, here from a timer in the process) ends `hir synth` with 130, as
    the signal would, one line instead of a traceback, and no output folder."""
    out = tmp_path / "world"
    code = (
        "import os, signal, sys, threading\n"
        "from hir_sdk.cli.main import main\n"
        "threading.Timer(1.0, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        f"sys.exit(main(['synth', '--out', {str(out)!r}, '--scale', 'medium']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300
    )
    assert result.returncode == 130, result.stderr
    assert "hir synth: interrupted" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists()
