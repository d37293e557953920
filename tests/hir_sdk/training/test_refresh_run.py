"""Refresh runs (`select = "last"`): train until any time before the dataset's end, keep the
last checkpoint, and read nothing at or after `train_until`."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import polars as pl
import pytest
import torch

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import trained_until, training_graph
from hir_sdk.training.checkpoint import load_checkpoint
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes

REFRESH = TrainConfig(
    steps=2,
    batch_size=16,
    eval_every=1,
    checkpoint_every=1,
    eval_anchors=16,
    train_until="test_start",
    select="last",
    model=ModelSizes(dim=32, out_dim=16, prototypes=(4, 16, 64)),
    engagement=EngagementConfig(pairs=32),
    distill=DistillConfig(seed_rows=256),
)


def test_a_refresh_run_may_train_until_later(tiny_graph):
    t = tiny_graph.manifest.time
    assert trained_until("test_start", t, "last") == t.test_start
    assert trained_until("", t, "last") == t.validation_start
    for bad in (str(t.start), str(t.end - 1), "end"):
        with pytest.raises(InputError, match="of a refresh run must fall inside the dataset"):
            trained_until(bad, t, "last")
    with pytest.raises(InputError, match="a refresh run \\(hir fit --refresh\\) may train"):
        trained_until("test_start", t)
    g = training_graph(tiny_graph, "test_start", "last")
    assert g.window("train") == slice(0, tiny_graph.edges_before(t.test_start))
    assert g.manifest.time.test_start == t.test_start + 1  # a one-second validation window
    with pytest.raises(ValueError, match="select must be one of"):
        TrainConfig(select="best")


def _checkpoint(run):
    return load_checkpoint(run / "checkpoints" / "best.pt")


@pytest.fixture(scope="module")
def refresh_run(tiny_world, tmp_path_factory):
    run = tmp_path_factory.mktemp("refresh") / "run"
    Trainer(tiny_world, run, REFRESH).fit(progress=False)
    return run


def test_refresh_run_keeps_its_last_checkpoint_and_reads_nothing_later(
    tiny_world, tiny_graph, refresh_run, tmp_path
):
    trainer = Trainer(tiny_world, tmp_path / "unused", REFRESH)
    until = tiny_graph.manifest.time.test_start
    assert trainer.graph.manifest.time.validation_start == trainer.trained_until == until
    assert not hasattr(trainer, "val_anchors") and not hasattr(trainer, "engage_val")
    assert trainer.schedule.cutoffs.max() < until
    assert trainer.graph.ts[trainer.engage_train.edges].max() < until
    with pytest.raises(ValueError, match="reads no validation window"):
        trainer.validate()
    log = (refresh_run / "metrics.jsonl").read_text().splitlines()
    assert len(log) == 2 and all('"val_loss"' not in line for line in log)
    best = _checkpoint(refresh_run)
    last = load_checkpoint(refresh_run / "checkpoints" / "last.pt")
    assert best["step"] == last["step"] == 2 and best["best_validation"] == float("inf")
    for name, tensor in best["teacher"].items():
        assert torch.equal(tensor, last["teacher"][name]), name

    # edges dated at or after train_until (copies of real ones) change nothing
    later = tmp_path / "later"
    shutil.copytree(tiny_world, later)
    edges = pl.read_parquet(later / "edges.parquet")
    extra = edges.sample(n=2000, seed=1, with_replacement=True)
    ts = np.random.default_rng(0).integers(until, tiny_graph.manifest.time.end, len(extra))
    # never before the original edge's time, so never before its nodes' created_ts
    ts = np.maximum(ts, extra["ts"].cast(pl.Int64).to_numpy())
    extra = extra.with_columns(pl.Series("ts", ts).cast(edges["ts"].dtype))
    pl.concat([edges, extra]).write_parquet(later / "edges.parquet")
    Trainer(later, tmp_path / "again", REFRESH).fit(progress=False)
    again = _checkpoint(tmp_path / "again")
    assert again["fingerprint"] != best["fingerprint"]
    for part in ("teacher", "student", "scorer"):
        for name, tensor in best[part].items():
            assert torch.equal(tensor, again[part][name]), (part, name)


def test_cli_fit_refresh(tiny_world, tmp_path, capsys):
    config = tmp_path / "config.toml"
    config.write_text(dataclasses.replace(REFRESH, train_until="", select="validation").to_toml())
    out = tmp_path / "run"
    args = ["fit", "--data", str(tiny_world), "--out", str(out), "--config", str(config)]
    code = main([*args, "--until", "test_start", "--refresh", "--quiet"])
    assert code == 0
    assert "kept the last checkpoint (a refresh run)" in capsys.readouterr().out
    text = (out / "config.toml").read_text()
    assert 'select = "last"' in text and 'train_until = "test_start"' in text
    warm = tmp_path / "warm"
    warm_args = ["--until", "test_start", "--refresh", "--init-from", str(out), "--quiet"]
    code = main([*args[:4], str(warm), *args[5:], *warm_args])
    assert code == 0 and f'init_from = "{out}"' in (warm / "config.toml").read_text()
    # without --refresh the same --until is a user mistake: exit 2, no run written
    code = main([*args[:4], str(tmp_path / "plain"), *args[5:], "--until", "test_start"])
    assert code == 2 and not (tmp_path / "plain").exists()
    assert "hir fit --refresh" in capsys.readouterr().err


def test_warm_start_begins_with_the_earlier_runs_weights(tiny_world, refresh_run, tmp_path):
    earlier = _checkpoint(refresh_run)
    warm = Trainer(
        tiny_world, tmp_path / "warm", dataclasses.replace(REFRESH, init_from=str(refresh_run))
    )
    for part, module in (
        ("teacher", warm.teacher),
        ("student", warm.student),
        ("scorer", warm.scorer),
    ):
        for name, tensor in module.state_dict().items():
            assert torch.equal(tensor, earlier[part][name]), (part, name)
    cold = Trainer(tiny_world, tmp_path / "cold", REFRESH).teacher.state_dict()
    assert any(not torch.equal(cold[k], v) for k, v in warm.teacher.state_dict().items())
    warm.fit(progress=False)
    assert 'init_from = "' in (tmp_path / "warm" / "config.toml").read_text()


@pytest.mark.parametrize(
    ("warm", "shapes", "select", "steps"),
    [
        (False, True, "last", [1, 2]),
        (True, True, "last", [1, 2]),
        (False, False, "last", [2]),
        (True, False, "last", []),
        (False, False, "validation", [1, 2]),
    ],
)
def test_prototypes_are_seeded_where_the_seeding_counts(
    tiny_world, refresh_run, tmp_path, monkeypatch, warm, shapes, select, steps
):
    """Seeded at the shares 0.5 and 0.8 of 2 steps while the clusters shape the encoder.
    Without `shapes_encoder` the prototypes give the clusters only: a refresh run seeds
    once, at the last share (the last seeding re-seats them whatever came before), a warm
    start keeps those it starts from, and a run that selects its checkpoint on
    validation seeds at every share (its checkpoint may come from before the last)."""
    config = dataclasses.replace(
        REFRESH,
        objectives="as_configured",  # keep `shapes_encoder` as set, whatever the text says
        distill=dataclasses.replace(REFRESH.distill, shapes_encoder=shapes),
        init_from=str(refresh_run) if warm else "",
        select=select,
        train_until="test_start" if select == "last" else "",
    )
    seeded: list[int] = []
    monkeypatch.setattr(Trainer, "_seed_prototypes", lambda self: seeded.append(self.step))
    Trainer(tiny_world, tmp_path / "run", config).fit(progress=False)
    assert seeded == steps


def test_cluster_terms_start_where_their_training_is_kept():
    """Engagement settings' refresh run of 100 steps seeds at step 80 (the last share);
    the cluster terms start 4 steps before it, the steps whose 16 anchors each fill the
    queue of 64 (a warm start, which does not seed, starts them there too: the test
    below). Where they shape the encoder, or the run selects its checkpoint on
    validation, they run from the start."""
    reads = DistillConfig(shapes_encoder=False, queue=64)
    assert reads.clusters_from(100, 16, keeps_last=True) == 76
    assert reads.clusters_from(100, 15, keeps_last=True) == 75  # 5 steps fill it
    assert dataclasses.replace(reads, queue=4096).clusters_from(100, 16, keeps_last=True) == 0
    assert reads.clusters_from(100, 16) == 0  # selects on validation: seeds at every share
    assert DistillConfig(queue=64).clusters_from(100, 16, keeps_last=True) == 0
    assert dataclasses.replace(reads, seed_prototypes_at=()).clusters_from(100, 16) == 0


@pytest.mark.parametrize("warm", [False, True])
def test_steps_before_the_cluster_terms_skip_their_passes(
    tiny_world, refresh_run, tmp_path, monkeypatch, warm
):
    """10 steps of 16 anchors, queue 32, seeded after step 8: steps 1 to 6 train the
    engagement terms alone (no teacher pass, no cluster metrics), steps 7 and 8 fill the
    queue the seeding's targets are balanced over, and every step after has the terms. A
    warm start does not seed; its terms start at the same step, with the prototypes of
    the run it starts from."""
    config = dataclasses.replace(
        REFRESH,
        steps=10,
        checkpoint_every=10,
        objectives="as_configured",
        distill=dataclasses.replace(REFRESH.distill, shapes_encoder=False, queue=32),
        init_from=str(refresh_run) if warm else "",
    )
    filled: list[int] = []
    monkeypatch.setattr(
        Trainer,
        "_seed_prototypes",
        lambda self: filled.append(int((self.queue.types >= 0).sum())),
    )
    Trainer(tiny_world, tmp_path / "run", config).fit(progress=False)
    records = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == list(range(1, 11))
    assert [("distill" in r, "l0_usage_entropy" in r) for r in records] == [(False, False)] * 6 + [
        (True, True)
    ] * 4
    assert [r["teacher_tokens"] == 0 for r in records] == [True] * 6 + [False] * 4
    assert all(r["student_tokens"] > 0 and np.isfinite(r["loss"]) for r in records)
    assert filled == ([] if warm else [32])


def test_warm_start_refuses_runs_that_read_later_data_or_do_not_fit(
    tiny_world, refresh_run, tmp_path
):
    earlier = dataclasses.replace(
        REFRESH, train_until="validation_start", init_from=str(refresh_run)
    )
    with pytest.raises(InputError, match="init_from read the data until 2026-02-16"):
        Trainer(tiny_world, tmp_path / "a", earlier)
    wider = dataclasses.replace(
        REFRESH, model=ModelSizes(dim=48, out_dim=16, prototypes=(4, 16, 64))
    )
    with pytest.raises(InputError, match="init_from's model does not fit this run"):
        Trainer(tiny_world, tmp_path / "b", dataclasses.replace(wider, init_from=str(refresh_run)))
    not_a_run = tmp_path / "not_a_run"  # beside the run: a run never lies in an input
    not_a_run.mkdir()
    with pytest.raises(InputError, match="no config.toml"):
        Trainer(tiny_world, tmp_path / "c", dataclasses.replace(REFRESH, init_from=str(not_a_run)))


def test_what_a_run_read_is_its_own_window_not_the_datas_split(tiny_world, refresh_run, tmp_path):
    # the run trained until its data's test start, named by the split; a dataset whose
    # manifest splits earlier (a truncated copy) must not make it look trained earlier
    from hir_sdk.training.embedder import Embedder
    from hir_sdk.training.warm_start import read_until

    until = json.loads((refresh_run / "meta.json").read_text())["trained_until"]
    earlier = tmp_path / "earlier"
    shutil.copytree(tiny_world, earlier)
    manifest = (earlier / "manifest.toml").read_text()
    moved = manifest.replace("test_start = 2026-02-16", "test_start = 2026-02-09")
    assert moved != manifest
    (earlier / "manifest.toml").write_text(moved)
    embedder = Embedder(refresh_run, earlier, "test_start")
    assert embedder.trained_until == until
    assert read_until(refresh_run, embedder.graph.manifest.time) == until
    warm = dataclasses.replace(REFRESH, init_from=str(refresh_run))
    with pytest.raises(InputError, match="init_from read the data until 2026-02-16"):
        Trainer(earlier, tmp_path / "warm", warm)
