"""A tiny trained run and its snapshot, shared by the interests tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from hir_sdk.interests import EntityEmbeddings, embed_entities
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes

RUN_CONFIG = TrainConfig(
    steps=4,
    batch_size=24,
    eval_every=2,
    checkpoint_every=2,
    eval_anchors=32,
    use_content=True,
    model=ModelSizes(dim=32, out_dim=16, prototypes=(4, 16, 64), center_types=True),
    engagement=EngagementConfig(pairs=32),
    distill=DistillConfig(seed_rows=256),
)


@pytest.fixture(scope="session")
def tiny_run(tiny_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("interest_runs") / "run"
    Trainer(tiny_world, run, RUN_CONFIG).fit(progress=False)
    return run


@pytest.fixture(scope="session")
def snapshot(tiny_run: Path, tiny_world: Path) -> EntityEmbeddings:
    return embed_entities(tiny_run, tiny_world, "validation_start", codebooks=4, codewords=16)
