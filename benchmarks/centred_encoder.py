"""What the interest-hierarchy and retrieval benchmarks train on: a synthetic world and
an encoder with world knowledge on and per-type centred embeddings (the hierarchy needs
them), `steps` steps of the built-in config, no evaluation in between."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hir_sdk.synth import SCALES, generate_world, write_world
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.config import ModelSizes


def train_centred_encoder(scale: str, steps: int, work: Path) -> tuple[Path, Trainer]:
    """Write `hir synth --scale SCALE --seed 0` to `work/world`, train into `work/run`;
    return the dataset folder and the trainer."""
    config = dataclasses.replace(
        TrainConfig(),
        steps=steps,
        eval_every=steps,
        use_content=True,
        model=dataclasses.replace(ModelSizes(), center_types=True),
    )
    data = write_world(generate_world(SCALES[scale], 0), work / "world")
    trainer = Trainer(data, work / "run", config)
    trainer.fit(progress=False)
    return data, trainer
