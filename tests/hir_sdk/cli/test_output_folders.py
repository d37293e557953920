"""The output-folder rule on the command line: a command replaces only a folder that
hir-sdk wrote itself (of the same kind), never an input or a folder holding one, and it
checks its output before any work."""

from __future__ import annotations

import importlib
import shutil
from pathlib import Path

import pytest

from hir_sdk.cli.main import main


@pytest.fixture
def data(tiny_world, tmp_path) -> Path:
    """A private copy of the tiny world (tests here try to destroy it)."""
    copy = tmp_path / "data"
    shutil.copytree(tiny_world, copy)
    return copy


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def _no_work(monkeypatch, *targets: str) -> None:
    """Make each long-running step fail the test if a command reaches it."""

    def forbidden(*args, **kwargs):
        raise AssertionError("the command started its work before checking its output")

    for target in targets:
        module, name = target.rsplit(".", 1)
        monkeypatch.setattr(importlib.import_module(module), name, forbidden)


def test_ab_never_writes_over_its_own_data(data, monkeypatch, capsys):
    before = _files(data)
    _no_work(monkeypatch, "hir_sdk.evaluation.pipeline.run_ab")
    argv = ["ab", "--data", str(data), "--out", str(data), "--overwrite", "--bootstrap", "5"]
    assert main(argv) == 2
    assert "is the input" in capsys.readouterr().err
    assert _files(data) == before


def test_graph_build_never_replaces_a_folder_holding_its_input(data, tmp_path, capsys):
    parent = tmp_path / "parent"
    parent.mkdir()
    data = data.rename(parent / "data")
    (parent / "keep").mkdir()
    (parent / "keep" / "notes.txt").write_text("mine")
    before = _files(parent)
    argv = ["graph", "build", "--data", str(data), "--out", str(parent), "--overwrite"]
    assert main(argv) == 2
    assert "contains the input" in capsys.readouterr().err
    assert _files(parent) == before


def test_output_inside_an_input_or_linked_to_it_is_refused(data, tmp_path, capsys):
    assert main(["graph", "build", "--data", str(data), "--out", str(data / "graph")]) == 2
    assert "lies inside the input" in capsys.readouterr().err
    link = tmp_path / "link"
    link.symlink_to(data, target_is_directory=True)
    assert main(["graph", "build", "--data", str(data), "--out", str(link), "--overwrite"]) == 2
    assert "is the input" in capsys.readouterr().err
    assert not (data / "graph").exists() and link.is_symlink()


def test_overwrite_replaces_only_a_folder_of_the_same_kind(data, tmp_path, capsys):
    graph = tmp_path / "graph"
    assert main(["graph", "build", "--data", str(data), "--out", str(graph)]) == 0
    assert main(["graph", "build", "--data", str(data), "--out", str(graph)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["graph", "build", "--data", str(data), "--out", str(graph), "--overwrite"]) == 0
    capsys.readouterr()
    # a dataset is not a graph: never replaced by one, --overwrite or not
    other = tmp_path / "other"
    assert main(["synth", "--out", str(other), "--scale", "tiny"]) == 0
    before = _files(other)
    assert main(["graph", "build", "--data", str(data), "--out", str(other), "--overwrite"]) == 2
    assert "holds a hir-sdk dataset, not a graph" in capsys.readouterr().err
    assert _files(other) == before


def test_overwrite_never_takes_a_users_file_with_the_output(data, tmp_path, capsys):
    graph = tmp_path / "graph"
    assert main(["graph", "build", "--data", str(data), "--out", str(graph)]) == 0
    (graph / "notes.md").write_text("what I found in this graph")
    before = _files(graph)
    assert main(["graph", "build", "--data", str(data), "--out", str(graph), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "did not write (notes.md)" in err and str(graph) in err
    assert _files(graph) == before


def test_a_folder_hir_did_not_write_is_never_replaced(data, tmp_path, capsys):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    for argv in (
        ["synth", "--out", str(mine), "--scale", "tiny", "--overwrite"],
        ["graph", "build", "--data", str(data), "--out", str(mine), "--overwrite"],
        ["demo", "--out", str(mine), "--overwrite"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "was not written by hir-sdk" in err and "even with --overwrite" in err
    assert _files(mine) == {"thesis.tex": b"years of work"}


def test_demo_replaces_nothing_without_overwrite(tmp_path, monkeypatch, capsys):
    out = tmp_path / "demo_out"
    out.mkdir()
    (out / "earlier.txt").write_text("an earlier result")
    _no_work(monkeypatch, "hir_sdk.synth.world.generate_world")
    assert main(["demo", "--out", str(out), "--scale", "tiny"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert (out / "earlier.txt").read_text() == "an earlier result"


@pytest.mark.parametrize(
    ("command", "work"),
    [
        (["synth", "--scale", "tiny"], "hir_sdk.synth.world.generate_world"),
        (["dataset", "movielens-100k"], "hir_sdk.datasets.movielens_100k"),
        (["graph", "build", "--data", "{data}"], "hir_sdk.graph.build_graph_from_dir"),
        (["ab", "--data", "{data}"], "hir_sdk.evaluation.pipeline.run_ab"),
        (
            ["embed", "--run", "{run}", "--data", "{data}", "--as-of", "test_start"],
            "hir_sdk.interests.embed_entities",
        ),
        (
            ["export", "--run", "{run}", "--data", "{data}"],
            "hir_sdk.export.export_run.Embedder",
        ),
        (["fit", "--data", "{data}"], "hir_sdk.training.Trainer"),
    ],
)
def test_every_command_checks_its_output_before_any_work(
    command, work, tiny_world, tmp_path, monkeypatch, capsys
):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    _no_work(monkeypatch, work)
    fill = {"data": str(tiny_world), "run": str(tmp_path / "run")}
    argv = [part.format(**fill) for part in command] + ["--out", str(out)]
    assert main(argv) == 2
    assert "already exists" in capsys.readouterr().err
    assert _files(out) == {"notes.txt": b"mine"}


def test_fit_refuses_an_existing_run_without_resume(tiny_world, tmp_path, monkeypatch, capsys):
    """Fitting into a finished run would mix two runs; --resume needs a run to continue."""
    run = tmp_path / "run"
    run.mkdir()
    (run / ".hir-output.json").write_text('{"written_by": "hir-sdk", "kind": "run"}\n')
    (run / "metrics.jsonl").write_text('{"step": 1}\n')
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "last.pt").write_bytes(b"a finished run's last checkpoint")
    _no_work(monkeypatch, "hir_sdk.training.Trainer")
    assert main(["fit", "--data", str(tiny_world), "--out", str(run)]) == 2
    assert "pass --resume to continue it" in capsys.readouterr().err
    assert (run / "metrics.jsonl").read_text() == '{"step": 1}\n'
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "notes.txt").write_text("mine")
    for folder in (tmp_path / "absent", notes):
        argv = ["fit", "--data", str(tiny_world), "--out", str(folder), "--resume"]
        assert main(argv) == 2
        assert "not a training run written by hir-sdk" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "work", "message"),
    [
        (
            ["embed", "--run", "{run}", "--data", "{data}", "--as-of", "test_start"]
            + ["--codebooks", "100000"],
            "hir_sdk.interests.embed_entities",
            "at most 64 codebooks",
        ),
        (
            ["ab", "--data", "{data}", "--bootstrap", "100000000"],
            "hir_sdk.evaluation.pipeline.run_ab",
            "bootstrap resamples must be between",
        ),
        (
            ["demo", "--scale", "tiny", "--bootstrap", "100000000"],
            "hir_sdk.synth.world.generate_world",
            "bootstrap resamples must be between",
        ),
        (
            ["run", "--data", "{data}", "--bootstrap", "100000000"],
            "hir_sdk.cli.run.run_job",
            "bootstrap resamples must be between",
        ),
    ],
)
def test_settings_out_of_bounds_stop_before_any_work(
    command, work, message, tiny_world, tmp_path, monkeypatch, capsys
):
    """A typo in a size (codebooks, bootstrap resamples) is refused up front, not after
    minutes of embedding or training."""
    _no_work(monkeypatch, work)
    fill = {"data": str(tiny_world), "run": str(tmp_path / "run")}
    out = tmp_path / "out"
    argv = [part.format(**fill) for part in command] + ["--out", str(out)]
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def _parsers(parser):
    """`parser` and every subcommand parser below it."""
    yield parser
    for action in parser._actions:
        if isinstance(action.choices, dict):
            for sub in action.choices.values():
                yield from _parsers(sub)


def test_every_overwrite_flag_states_the_rule():
    """Each writing command's `--overwrite` help says it never replaces the user's files."""
    from hir_sdk.cli.main import build_parser

    helps = {
        p.prog: a.help
        for p in _parsers(build_parser())
        for a in p._actions
        if "--overwrite" in a.option_strings
    }
    writers = {"run", "demo", "ab", "embed", "export", "synth", "dataset", "graph build"}
    assert set(helps) == {f"hir {name}" for name in writers}
    for prog, text in helps.items():
        assert "never your files" in text, prog


@pytest.mark.parametrize("command", ["graph", "fit"])
def test_an_output_that_cannot_be_created_is_refused_before_the_work(
    command, data, tmp_path, monkeypatch, capsys
):
    """An `--out` below a file, or in a folder this process may not write (a read-only
    file system; permissions do not stop root), fails in a second with exit code 2, not
    with a traceback after the work."""
    import tempfile

    _no_work(
        monkeypatch, "hir_sdk.graph.build_graph_from_dir", "hir_sdk.training.trainer.load_dataset"
    )
    blocker = tmp_path / "results"
    blocker.write_text("a file where a folder was meant")
    argv = {
        "graph": ["graph", "build", "--data", str(data), "--out"],
        "fit": ["fit", "--data", str(data), "--out"],
    }[command]
    assert main([*argv, str(blocker / "out")]) == 2
    assert f"{blocker} is a file, not a folder" in capsys.readouterr().err
    assert blocker.read_text() == "a file where a folder was meant"

    def read_only(*args, **kwargs):
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(tempfile, "mkdtemp", read_only)
    assert main([*argv, str(tmp_path / "new" / "out")]) == 2
    err = capsys.readouterr().err
    assert f"may not write in {tmp_path} (Operation not permitted)" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "results"]


def test_a_run_stopped_before_its_first_checkpoint_says_what_to_do(data, tmp_path, capsys):
    """A `hir fit` interrupted before its first checkpoint leaves a run folder without
    one: the same command and `--resume` each say to remove it, instead of pointing to
    each other."""
    from hir_sdk.io.output_folder import claim_dir

    run = tmp_path / "run"
    claim_dir(run, kind="run")  # what the interrupted fit left: marker, no checkpoints/
    (run / "config.toml").write_text("")
    for extra in ([], ["--resume"]):
        assert main(["fit", "--data", str(data), "--out", str(run), *extra]) == 2
        err = capsys.readouterr().err
        assert "stopped before its first checkpoint" in err and "remove the folder" in err
    assert sorted(p.name for p in run.iterdir()) == [".hir-output.json", "config.toml"]
