"""The sampled views are part of a run's settings: written to its config.toml, used by
training, and read back by every embedding of the run."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.sampling import SamplerConfig, ViewConfig
from hir_sdk.sampling.loader import BatchBuilder, anchors_from_events
from hir_sdk.training import TrainConfig, Trainer, load_config
from hir_sdk.training.config import config_from_dict
from hir_sdk.training.embedder import Embedder
from tests.hir_sdk.training.test_trainer import CONFIG as TRAINER_CONFIG

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

NARROW = ViewConfig(fanout=(4, 2), max_nodes=9, edge_types=("impression", "click", "purchase"))


def test_the_default_views_are_the_samplers():
    config = TrainConfig(seed=5)
    assert config.sampler() == SamplerConfig(seed=5)


def test_views_round_trip_through_toml():
    config = TrainConfig(teacher_view=NARROW, student_view=ViewConfig(fanout=(3,), max_nodes=5))
    text = config.to_toml()
    assert "edge_types = [" in text and "null" not in text.lower()
    assert config_from_dict(tomllib.loads(text)) == config
    default = TrainConfig().to_toml()  # a view that follows every relation leaves the key out
    assert "edge_types" not in default
    assert config_from_dict(tomllib.loads(default)) == TrainConfig()


def test_a_student_wider_than_its_teacher_is_refused():
    with pytest.raises(InputError, match="student view cannot be larger"):
        config_from_dict({"teacher_view": {"max_nodes": 8}, "student_view": {"max_nodes": 9}})
    with pytest.raises(InputError, match="edge_types"):
        config_from_dict({"teacher_view": {"edge_types": "click"}})


def test_a_run_embeds_with_the_views_it_trained_with(tiny_world, tmp_path):
    config = dataclasses.replace(
        TRAINER_CONFIG,
        steps=2,
        eval_every=2,
        checkpoint_every=2,
        num_workers=0,
        teacher_view=NARROW,
        student_view=ViewConfig(fanout=(2,), max_nodes=4),
    )
    run = tmp_path / "run"
    trainer = Trainer(tiny_world, run, config)
    assert trainer.sampler_config == config.sampler()
    trainer.fit(progress=False)
    assert load_config(run / "config.toml").teacher_view == NARROW
    embedder = Embedder(run, tiny_world, "validation_start")
    assert embedder.sampler_config == config.sampler()
    anchors, cutoffs = anchors_from_events(embedder.graph, "train")
    batch = embedder.builder.build(anchors[:40], cutoffs[:40])
    sizes = np.diff(batch.teacher.offsets)
    assert sizes.max() <= NARROW.max_nodes
    # the default views of the same anchors are wider: the bound above is the run's
    default = BatchBuilder(embedder.graph, SamplerConfig(), featurizer=embedder.builder.featurizer)
    assert np.diff(default.build(anchors[:40], cutoffs[:40]).teacher.offsets).max() > 9
