"""The training settings that need no graph (`init_from`, `device`, `distill.seed_types`,
`use_content` without a content table) are refused by `hir fit` and `hir run` before the
data is read or the graph built, with the messages the places that use them give."""

from __future__ import annotations

import dataclasses
import shutil

import pytest
import torch

import hir_sdk.graph
import hir_sdk.schema
import hir_sdk.schema.dataset
import hir_sdk.training.trainer
from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import load_manifest
from hir_sdk.training.preflight import check_before_loading
from hir_sdk.training.prototype_seeding import seeding_type_codes
from hir_sdk.training.warm_start import warm_start_state


@pytest.fixture
def no_loading(monkeypatch):
    """Reading the tables or building the graph fails the test: the checks come first."""

    def loaded(*args, **kwargs):
        raise AssertionError("the data was read before the settings were checked")

    for module, name in (
        (hir_sdk.training.trainer, "load_dataset"),
        (hir_sdk.training.trainer, "build_graph"),
        (hir_sdk.schema.dataset, "load_dataset"),
        (hir_sdk.schema, "load_dataset"),
        (hir_sdk.graph, "build_graph"),
        (hir_sdk.graph, "build_graph_from_dir"),
    ):
        monkeypatch.setattr(module, name, loaded)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # a GPU machine too


def _problems(tmp_path, node_types):
    missing = tmp_path / "no_such_run"
    return {
        "init_from": (
            f'init_from = "{missing}"\n',
            f"{missing}: init_from is not a training run (no config.toml)",
        ),
        "device": (
            'device = "cuda"\n',
            "device = 'cuda' but this machine has no visible CUDA device",
        ),
        "seed_types": (
            '[distill]\nseed_types = ["ad", "nope"]\n',
            f"distill.seed_types ['nope'] are not node types of the dataset {node_types}",
        ),
    }


@pytest.mark.parametrize("command", ["fit", "run"])
@pytest.mark.parametrize("problem", ["init_from", "device", "seed_types"])
def test_refused_before_the_data_is_read(
    command, problem, tiny_world, tmp_path, capsys, no_loading
):
    node_types = list(load_manifest(tiny_world / "manifest.toml").node_types)
    text, message = _problems(tmp_path, node_types)[problem]
    config, out = tmp_path / "train.toml", tmp_path / "out"
    config.write_text(text)
    argv = [command, "--data", str(tiny_world), "--out", str(out), "--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == f"hir {command}: error: {message}\n"
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["train.toml"]


def test_the_places_that_use_the_settings_give_the_same_messages(tiny_graph, tmp_path):
    node_types = list(tiny_graph.manifest.node_types)
    problems = _problems(tmp_path, node_types)
    with pytest.raises(InputError) as late:
        warm_start_state(tmp_path / "no_such_run", tiny_graph.manifest.time, 0)
    assert str(late.value) == problems["init_from"][1]
    with pytest.raises(InputError) as late:
        seeding_type_codes(tiny_graph, ("ad", "nope"))
    assert str(late.value) == problems["seed_types"][1]


def test_the_job_checks_them_before_the_graph_for_its_library_callers(
    tiny_world, tmp_path, no_loading
):
    from hir_sdk.pipeline import JobSettings, run_job

    config = tmp_path / "train.toml"
    config.write_text('[distill]\nseed_types = ["nope"]\n')
    settings = JobSettings.for_data(tiny_world, config, steps=3)
    (tmp_path / "out").mkdir()
    with pytest.raises(InputError, match=r"distill.seed_types \['nope'\]"):
        run_job(tiny_world, tmp_path / "out", settings)
    assert not any((tmp_path / "out").iterdir())  # not even job.toml


@pytest.fixture
def no_content(tiny_world, tmp_path):
    """The tiny world without its content table."""
    bare = tmp_path / "bare"
    bare.mkdir()
    for name in ("manifest.toml", "nodes.parquet", "edges.parquet"):
        shutil.copy(tiny_world / name, bare / name)
    return bare


@pytest.mark.parametrize("command", ["fit", "run"])
def test_use_content_without_a_content_table_is_refused(
    command, no_content, tmp_path, capsys, no_loading
):
    config, out = tmp_path / "train.toml", tmp_path / "out"
    config.write_text("use_content = true\n")
    argv = [command, "--data", str(no_content), "--out", str(out), "--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err == (
        f"hir {command}: error: {no_content / 'content.parquet'}: use_content = true, but the "
        "dataset has no content table: add it, or set use_content = false to train without "
        "text\n"
    )
    assert not out.exists()


def test_the_defaults_train_without_text_on_data_without_content(no_content):
    from hir_sdk.pipeline import JobSettings
    from hir_sdk.training import TrainConfig

    job = JobSettings.for_data(no_content).first_run()
    for config in (TrainConfig(), job):  # hir fit's defaults, hir run's
        assert not config.use_content
        check_before_loading(config, no_content)  # no error
    with pytest.raises(InputError, match="use_content = true, but the dataset has no content"):
        check_before_loading(dataclasses.replace(job, use_content=True), no_content)
