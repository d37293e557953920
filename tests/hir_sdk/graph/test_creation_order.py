"""`check_creation_order`: an edge dated before one of its nodes was created is refused,
with the nodes named."""

from __future__ import annotations

import shutil

import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.graph.creation_order import check_creation_order
from hir_sdk.schema.dataset import EDGES_FILE, NODES_FILE
from hir_sdk.training import Trainer


def test_the_synthetic_world_is_in_order(tiny_graph):
    check_creation_order(tiny_graph)


def test_a_node_created_after_its_first_edge_is_named(tiny_world, tmp_path):
    data = tmp_path / "data"
    shutil.copytree(tiny_world, data)
    edges = pl.read_parquet(data / EDGES_FILE)
    ad = edges.filter(pl.col("dst_type") == "ad").sort("ts").row(0, named=True)
    late = ad["ts"] + 3600  # an hour after its first edge
    nodes = pl.read_parquet(data / NODES_FILE)
    nodes = nodes.with_columns(
        pl.when((pl.col("node_type") == "ad") & (pl.col("node_id") == ad["dst_id"]))
        .then(pl.lit(late, dtype=nodes["created_ts"].dtype))
        .otherwise(pl.col("created_ts"))
        .alias("created_ts")
    )
    nodes.write_parquet(data / NODES_FILE)
    graph = build_graph_from_dir(data)
    with pytest.raises(InputError, match="created_ts comes after an edge") as caught:
        check_creation_order(graph, data)
    message = str(caught.value)
    assert f"ad {ad['dst_id']!r}: created_ts {late}, an edge at {ad['ts']}" in message
    assert str(data / NODES_FILE) in message and caught.value.exit_code == 2
    # the trainer (hir fit) refuses the same data before it samples anything
    with pytest.raises(InputError, match="created_ts comes after an edge"):
        Trainer(data, tmp_path / "run")
    assert not (tmp_path / "run").exists()
