"""A run that selects on validation trains its weights on nothing at or after its
`train_until` and chooses its checkpoint on nothing at or after the test start: later
edges, and the attributes and text of nodes created later, change neither."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import torch

from hir_sdk.graph import TemporalGraph
from hir_sdk.training import TrainConfig, Trainer
from hir_sdk.training.checkpoint import load_checkpoint
from hir_sdk.training.config import DistillConfig, EngagementConfig, ModelSizes

CONFIG = TrainConfig(
    steps=3,
    batch_size=16,
    eval_every=1,
    checkpoint_every=1,
    eval_anchors=16,
    use_content=True,
    model=ModelSizes(dim=32, out_dim=16, prototypes=(4, 16, 64)),
    engagement=EngagementConfig(pairs=32),
    distill=DistillConfig(seed_rows=256),
)
PARTS = ("student", "teacher", "scorer")


def _changed_from(world: Path, graph: TemporalGraph, at: int, out: Path) -> Path:
    """A copy of `world` with copies of its edges dated from `at` on (never before the
    original), and other attributes and text for the nodes created at or after `at`."""
    shutil.copytree(world, out)
    edges = pl.read_parquet(out / "edges.parquet")
    extra = edges.sample(n=2000, seed=1, with_replacement=True)
    ts = np.random.default_rng(0).integers(at, graph.manifest.time.end, len(extra))
    ts = np.maximum(ts, extra["ts"].cast(pl.Int64).to_numpy())
    extra = extra.with_columns(pl.Series("ts", ts).cast(edges["ts"].dtype))
    pl.concat([edges, extra]).write_parquet(out / "edges.parquet")
    nodes = pl.read_parquet(out / "nodes.parquet")
    late = pl.col("created_ts") >= at
    nodes = nodes.with_columns(
        pl.when(late).then(pl.col(c) * 7 + 1).otherwise(pl.col(c)).alias(c)
        for c in ("price", "bid")
    )
    nodes.write_parquet(out / "nodes.parquet")
    late_ids = nodes.filter(late).select("node_type", "node_id")
    content = pl.read_parquet(out / "content.parquet")
    relabel = content.join(late_ids, on=["node_type", "node_id"], how="semi")
    assert relabel.height > 0
    keys = pl.struct("node_type", "node_id")
    content = content.with_columns(
        pl.when(keys.is_in(relabel.select(keys).to_series()))
        .then(pl.lit("an unrelated late text about garden furniture"))
        .otherwise(pl.col("text"))
        .alias("text")
    )
    content.write_parquet(out / "content.parquet")
    return out


def _parts(run: Path, name: str) -> dict[str, dict[str, torch.Tensor]]:
    state = load_checkpoint(run / "checkpoints" / f"{name}.pt")
    return {part: state[part] for part in PARTS}


def _agreement(run: Path) -> dict:
    return json.loads((run / "meta.json").read_text())["content_agreement"]


def _same(a, b) -> None:
    for part in PARTS:
        for name, tensor in a[part].items():
            assert torch.equal(tensor, b[part][name]), (part, name)


@pytest.fixture(scope="module")
def base_run(tiny_world, tmp_path_factory):
    run = tmp_path_factory.mktemp("window") / "run"
    Trainer(tiny_world, run, CONFIG).fit(progress=False)
    return run


def test_later_data_changes_neither_the_weights_nor_the_choice(
    tiny_world, tiny_graph, base_run, tmp_path
):
    t = tiny_graph.manifest.time
    after_test = _changed_from(tiny_world, tiny_graph, t.test_start, tmp_path / "a")
    Trainer(after_test, tmp_path / "run_a", CONFIG).fit(progress=False)
    for name in ("best", "last"):
        _same(_parts(base_run, name), _parts(tmp_path / "run_a", name))
    assert _agreement(tmp_path / "run_a") == _agreement(base_run)
    # the validation window only chooses among the checkpoints: the weights trained
    # until its start are the same
    in_validation = _changed_from(tiny_world, tiny_graph, t.validation_start, tmp_path / "b")
    Trainer(in_validation, tmp_path / "run_b", CONFIG).fit(progress=False)
    _same(_parts(base_run, "last"), _parts(tmp_path / "run_b", "last"))
    assert _agreement(tmp_path / "run_b") == _agreement(base_run)
