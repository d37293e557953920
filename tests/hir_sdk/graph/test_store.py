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
    assert loaded.attribute_names == graph.attribute_names == ("price", "bid")
    np.testing.assert_array_equal(loaded.attributes, graph.attributes)  # NaN where none
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


def _edit_meta(change):
    def edit(g):
        meta = json.loads((g / "graph.json").read_text())
        (g / "graph.json").write_text(json.dumps(change(meta)))

    return edit


def _edit_array(name, change):
    def edit(g):
        file = g / "arrays" / f"{name}.npy"
        array = np.load(file)
        np.save(file, change(array.copy()))

    return edit


def _set(index, value):
    def change(a):
        a[index] = value
        return a

    return change


CORRUPT = {
    # each was a traceback (AttributeError, KeyError) from `hir graph info`
    "graph.json is a list": (lambda g: (g / "graph.json").write_text("[]"), "JSON object"),
    "graph.json without fingerprint": (
        _edit_meta(lambda m: {k: v for k, v in m.items() if k != "fingerprint"}),
        "lacks a valid 'fingerprint'",
    ),
    "num_edges is text": (_edit_meta(lambda m: m | {"num_edges": "6"}), "'num_edges'"),
    # each loaded silently and answered from the wrong edges
    "out_ptr does not start at 0": (
        _edit_array("out_ptr", _set(0, 1)),
        "out_ptr must start at 0 and end at 6",
    ),
    "out_ptr decreases": (_edit_array("out_ptr", _set(2, 2)), "out_ptr is not non-decreasing"),
    "out_ptr ends early": (_edit_array("out_ptr", _set(-1, 5)), "end at 6"),
    "out_ptr one entry short": (
        _edit_array("out_ptr", lambda a: a[:-1]),
        "out_ptr has 5 entries, expected 6",
    ),
    "out_ptr moved inside its range": (
        _edit_array("out_ptr", _set(1, 1)),
        "out_ptr does not match the edges' endpoints",
    ),
    "in_ptr not monotone": (_edit_array("in_ptr", _set(4, 2)), "in_ptr is not non-decreasing"),
    "out_eid out of range": (_edit_array("out_eid", _set(0, 99)), "out_eid holds values outside"),
    "dst out of range": (_edit_array("dst", _set(2, -1)), "dst holds values outside [0, 5)"),
    "etype out of range": (_edit_array("etype", _set(0, 3)), "etype holds values outside [0, 3)"),
    "ts out of order": (_edit_array("ts", lambda a: a[::-1]), "ts is not in time order"),
    "weight as integers": (_edit_array("weight", lambda a: a.astype(np.int64)), "1-d float"),
    "type_offsets shifted": (_edit_array("type_offsets", _set(0, 1)), "type_offsets must start"),
    "node ids unsorted": (
        _edit_array("node_ids_ad", lambda a: a[::-1]),
        "node_ids_ad ids are not sorted and unique",
    ),
    "created_ts truncated": (_edit_array("created_ts", lambda a: a[:-1]), "created_ts has 4"),
    "attribute_names is text": (
        _edit_meta(lambda m: m | {"attribute_names": "bid"}),
        "'attribute_names' is not a list",
    ),
    "attribute_names repeated": (
        _edit_meta(lambda m: m | {"attribute_names": ["bid", "bid"]}),
        "not a list of distinct names",
    ),
    # a graph saved before the attributes (format 1) would load as having none
    "attribute_names missing": (
        _edit_meta(lambda m: {k: v for k, v in m.items() if k != "attribute_names"}),
        "'attribute_names' is not a list",
    ),
    "attributes one row short": (
        _edit_array("attributes", lambda a: a[:-1]),
        "attributes must be a (5, 1) float64 array",
    ),
}


@pytest.fixture(scope="module")
def mini_graph_dir(tmp_path_factory):
    from tests.conftest import mini_manifest, mini_tables

    data = tmp_path_factory.mktemp("mini") / "data"
    data.mkdir()
    (data / "manifest.toml").write_text(mini_manifest().to_toml())
    for name, frame in mini_tables().items():
        frame.write_parquet(data / f"{name}.parquet")
    out = data.parent / "graph"
    save_graph(build_graph_from_dir(data), out)
    return out


@pytest.mark.parametrize("case", sorted(CORRUPT))
def test_a_corrupt_graph_is_refused_with_exit_2(case, mini_graph_dir, tmp_path, capsys):
    import shutil

    from hir_sdk.cli.main import main

    edit, fragment = CORRUPT[case]
    graph = tmp_path / "g"
    shutil.copytree(mini_graph_dir, graph)
    assert main(["graph", "info", str(graph)]) == 0  # the copy itself is fine
    capsys.readouterr()
    edit(graph)
    assert main(["graph", "info", str(graph)]) == 2
    err = capsys.readouterr().err
    assert fragment in err, f"{case}: {fragment!r} not in {err!r}"
    assert "Traceback" not in err and err.count("\n") == 1
