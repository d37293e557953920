"""Trained runs for the A/B tests: the tiny run (training window through the validation
start, as the interests tests have it) and `early_run`, an encoder trained on the first
16 days only that keeps its last checkpoint (a refresh run: it reads nothing after its
window, so rankers may fit on the days after it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes
from tests.hir_sdk.interests.conftest import tiny_run  # noqa: F401

EARLY = 1_768_608_000  # 2026-01-17, where early_run's training window ends
SMALL = TrainConfig(
    steps=4,
    batch_size=24,
    eval_every=2,
    checkpoint_every=2,
    eval_anchors=32,
    model=ModelSizes(dim=32, out_dim=16, prototypes=(4, 16, 64)),
    engagement=EngagementConfig(pairs=32),
    distill=DistillConfig(seed_rows=256),
)


@pytest.fixture(scope="session")
def early_run(tiny_world: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An encoder trained on the first 16 days only, its last checkpoint kept."""
    run = tmp_path_factory.mktemp("early") / "run"
    config = TrainConfig(**{**SMALL.__dict__, "train_until": "2026-01-17", "select": "last"})
    Trainer(tiny_world, run, config).fit(progress=False)
    return run
