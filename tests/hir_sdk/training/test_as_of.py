"""`train_until`: the encoder's training window ends early, and nothing after it is used."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import DAY
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.as_of import (
    first_window_end,
    trained_until,
    training_graph,
    training_midpoint,
)
from hir_sdk.training.config import DistillConfig, EngagementConfig


def test_trained_until_defaults_to_the_validation_start_and_checks_range(tiny_graph):
    t = tiny_graph.manifest.time
    assert trained_until("", t) == t.validation_start
    assert trained_until(str(t.start + 3 * DAY), t) == t.start + 3 * DAY
    for bad in (str(t.start), str(t.validation_start + 1), "test_start"):
        with pytest.raises(InputError, match="must fall inside the training window"):
            trained_until(bad, t)
    with pytest.raises(InputError, match="train_until 'soon' is not a time"):
        trained_until("soon", t)


def test_training_graph_moves_the_windows(tiny_graph):
    t = tiny_graph.manifest.time
    until = t.start + 10 * DAY
    g = training_graph(tiny_graph, str(until))
    assert g.manifest.time.validation_start == until
    assert g.manifest.time.test_start == t.test_start
    assert g.window("train") == slice(0, tiny_graph.edges_before(until))
    assert g.window("validation").stop == tiny_graph.edges_before(t.test_start)
    assert training_graph(tiny_graph, "") is tiny_graph


def test_trainer_learns_only_from_edges_before_train_until(tiny_world, tmp_path):
    base = TrainConfig(
        steps=2,
        batch_size=16,
        eval_every=2,
        checkpoint_every=2,
        eval_anchors=16,
        engagement=EngagementConfig(pairs=32),
        distill=DistillConfig(seed_rows=256),
    )
    t0 = Trainer(tiny_world, tmp_path / "full", base).graph.manifest.time
    until = t0.start + 12 * DAY
    config = TrainConfig(**{**base.__dict__, "train_until": str(until)})
    trainer = Trainer(tiny_world, tmp_path / "early", config)
    assert trainer.schedule.cutoffs.max() < until
    assert trainer.graph.ts[trainer.engage_train.edges].max() < until
    assert trainer.val_cutoffs.min() >= until
    trainer.fit(progress=False)
    meta = json.loads((tmp_path / "early" / "meta.json").read_text())
    assert meta["trained_until"] == until
    assert 'train_until = "' in (tmp_path / "early" / "config.toml").read_text()
    assert np.isfinite(trainer.best_validation)


def test_training_midpoint_starts_at_the_first_edge():
    from hir_sdk.schema.manifest import TimeSplits

    t = TimeSplits(start=0, validation_start=100, test_start=150, end=200)
    assert training_midpoint(t) == 50
    assert training_midpoint(t, 0) == 50
    assert training_midpoint(t, 40) == 70  # a start before the log: the log's half
    assert training_midpoint(t, 100) == 50  # no edge in the training window: the manifest's


def test_the_first_window_ends_half_way_from_the_graphs_first_edge(tiny_graph):
    t = tiny_graph.manifest.time
    first = int(tiny_graph.ts.min())
    assert first_window_end(tiny_graph) == training_midpoint(t, first)
    early = dataclasses.replace(t, start=t.start - 3 * 365 * DAY)  # a round date long before
    moved = dataclasses.replace(
        tiny_graph, manifest=dataclasses.replace(tiny_graph.manifest, time=early)
    )
    assert first_window_end(moved) == first_window_end(tiny_graph) > first
