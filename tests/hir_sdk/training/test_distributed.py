"""Two CPU ranks under torchrun (gloo) finish and agree with the one-rank run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hir_sdk.training.checkpoint import load_checkpoint
from tests.hir_sdk.training.test_trainer import CONFIG

STEPS = 3


def _fit(tiny_world: Path, out: Path, config: Path, ranks: int) -> None:
    torchrun = Path(sys.executable).with_name("torchrun")
    command = [
        str(torchrun),
        "--standalone",
        f"--nproc_per_node={ranks}",
        "-m",
        "hir_sdk.cli.main",
        "fit",
        "--data",
        str(tiny_world),
        "--out",
        str(out),
        "--config",
        str(config),
        "--quiet",
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        command, capture_output=True, text=True, env=env, timeout=600, check=False
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"trained {STEPS} steps on {ranks} rank(s)" in done.stdout


def test_two_ranks_agree_with_one(tiny_world, tmp_path):
    config = tmp_path / "train.toml"
    text = CONFIG.to_toml().replace("steps = 6", f"steps = {STEPS}")
    # no prototype seeding: k-means is discrete, so the two runs' slightly different
    # teachers may seed different prototypes
    text = text.replace("seed_prototypes_at = [0.5, 0.8]", "seed_prototypes_at = []")
    assert "seed_prototypes_at = []" in text
    config.write_text(text.replace("center_types = false", "center_types = true"))
    for ranks in (1, 2):
        _fit(tiny_world, tmp_path / f"r{ranks}", config, ranks)
    one = load_checkpoint(tmp_path / "r1" / "checkpoints" / "last.pt")["student"]
    two = load_checkpoint(tmp_path / "r2" / "checkpoints" / "last.pt")["student"]
    import dataclasses

    from hir_sdk.training import Trainer

    centred = dataclasses.replace(CONFIG.model, center_types=True)
    start = Trainer(
        tiny_world,
        tmp_path / "init",
        dataclasses.replace(
            CONFIG,
            steps=STEPS,
            model=centred,
            distill=dataclasses.replace(CONFIG.distill, seed_prototypes_at=()),
        ),
    ).student.state_dict()
    weights = [k for k in one if one[k].is_floating_point()]
    moved = sum(float((one[k] - start[k]).square().sum()) for k in weights) ** 0.5
    apart = sum(float((one[k] - two[k]).square().sum()) for k in weights) ** 0.5
    assert moved > 0
    assert apart > 0  # each rank really trained on its half of every batch
    # same global batches, gradients averaged over two halves: the update agrees up to the
    # batch-coupled Sinkhorn targets, which each rank balances over its half
    assert apart < 0.35 * moved, (apart, moved)
    # the per-type centres are tracked (and averaged over the ranks) in the two-rank run
    centres = load_checkpoint(tmp_path / "r2" / "checkpoints" / "last.pt")["student"]
    assert centres["project.centers"].abs().sum() > 0
    meta = (tmp_path / "r2" / "meta.json").read_text()
    assert '"world_size": 2' in meta
