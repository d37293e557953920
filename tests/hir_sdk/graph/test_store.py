"""Save / load round trip: memory-mapped arrays, fingerprint, clear errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.graph import build_graph_from_dir, load_graph, save_graph, summarize
from hir_sdk.graph.store import ARRAYS


@pytest.fixture(scope="module")
def graph(tiny_world):
    return build_graph_from_dir(tiny_world)


def test_round_trip_is_exact_and_memory_mapped(graph, tmp_path):
    save_graph(graph, tmp_path / "g")
    loaded = load_graph(tmp_path / "g")
    for name in ARRAYS:
        assert np.array_equal(getattr(loaded, name), getattr(graph, name)), name
    assert isinstance(loaded.out_eid, np.memmap)
    assert loaded.fingerprint == graph.fingerprint
    assert loaded.manifest == graph.manifest
    for ours, theirs in zip(loaded.node_ids, graph.node_ids, strict=True):
        assert np.array_equal(ours, theirs)
    node = int(graph.index("user", [3])[0])
    assert loaded.neighbors(node).edge.tolist() == graph.neighbors(node).edge.tolist()
    assert summarize(loaded) == summarize(graph)


def test_fingerprint_tracks_the_data(graph, tiny_world, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(tiny_world, copy)
    assert build_graph_from_dir(copy).fingerprint == graph.fingerprint
    manifest = (copy / "manifest.toml").read_text()
    (copy / "manifest.toml").write_text(
        manifest.replace("attribution_window_days = 7.0", "attribution_window_days = 14.0")
    )
    assert build_graph_from_dir(copy).fingerprint != graph.fingerprint


def test_save_refuses_to_overwrite(graph, tmp_path):
    save_graph(graph, tmp_path / "g")
    with pytest.raises(InputError, match="already exists"):
        save_graph(graph, tmp_path / "g")
    save_graph(graph, tmp_path / "g", overwrite=True)
    assert load_graph(tmp_path / "g").num_edges == graph.num_edges


def test_load_errors_are_clear(graph, tmp_path):
    with pytest.raises(InputError, match="not a saved graph"):
        load_graph(tmp_path)
    save_graph(graph, tmp_path / "g")
    meta = json.loads((tmp_path / "g" / "graph.json").read_text())
    meta["format_version"] = 99
    (tmp_path / "g" / "graph.json").write_text(json.dumps(meta))
    with pytest.raises(InputError, match="format 99 is not supported"):
        load_graph(tmp_path / "g")


def test_string_ids_round_trip(write_dataset, tmp_path):
    import polars as pl

    from tests.conftest import mini_tables

    t = mini_tables()
    nodes = t["nodes"].with_columns(pl.format("n{}", pl.col("node_id")).alias("node_id"))
    edges = t["edges"].with_columns(
        pl.format("n{}", pl.col("src_id")).alias("src_id"),
        pl.format("n{}", pl.col("dst_id")).alias("dst_id"),
    )
    content = t["content"].with_columns(pl.format("n{}", pl.col("node_id")).alias("node_id"))
    graph = build_graph_from_dir(write_dataset(nodes=nodes, edges=edges, content=content))
    save_graph(graph, tmp_path / "g")
    loaded = load_graph(tmp_path / "g")
    assert loaded.index("ad", ["n21"]).tolist() == [3]
    assert loaded.node_id(4) == ("advertiser", "n30")
