"""Every bad-input class gives one clear message, exit code 2, and no output left behind."""

from __future__ import annotations

import json
import shutil
import threading
from dataclasses import replace
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.schema import EdgeTypeSpec, load_dataset
from hir_sdk.schema.columns import read_table
from hir_sdk.schema.dataset import TYPE_COLUMNS
from hir_sdk.schema.manifest import MAX_EDGE_TYPES
from hir_sdk.schema.tables import validate_edges, validate_nodes
from tests.conftest import DAY, T0, mini_manifest, mini_tables

EDGES = mini_tables()["edges"]
NODES = mini_tables()["nodes"]
CONTENT = mini_tables()["content"]


def _run_build(data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    out = tmp_path / "graph_out"
    code = main(["graph", "build", "--data", str(data), "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert not out.exists(), "a failed build must leave nothing behind"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".graph_out")]
    assert err.count("\n") <= 8 and "Traceback" not in err
    return err


CASES = {
    "missing column": (
        {"edges": EDGES.drop("ts")},
        ["edges.parquet", "column 'ts'", "missing required"],
    ),
    "mistyped id column": (
        {"edges": EDGES.with_columns(pl.col("src_id").cast(pl.Float64))},
        ["edges.parquet", "column 'src_id'", "mistyped", "Float64"],
    ),
    "mistyped ts column": (
        {"edges": EDGES.with_columns(pl.col("ts").cast(pl.String))},
        ["column 'ts'", "mistyped", "timestamps"],
    ),
    "mistyped node feature": (
        {"nodes": NODES.with_columns(pl.lit("x").alias("bid"))},
        ["nodes.parquet", "column 'bid'", "mistyped", "numeric"],
    ),
    "null timestamp": (
        {
            "edges": EDGES.with_columns(
                pl.when(pl.int_range(pl.len()) == 3).then(None).otherwise(pl.col("ts")).alias("ts")
            )
        },
        ["column 'ts'", "null timestamps", "row 3:"],
    ),
    "non-finite timestamp": (
        {
            "edges": EDGES.with_columns(
                pl.Series(
                    "ts", [float(T0), T0 + 1.0, float("inf"), float("nan"), T0 + 2.0, T0 + 3.0]
                )
            )
        },
        ["column 'ts'", "non-finite timestamps", "row 2:", "row 3:"],
    ),
    "negative timestamp": (
        {"edges": EDGES.with_columns(pl.Series("ts", [T0, T0, -5, T0, T0, T0]))},
        ["column 'ts'", "negative timestamps", "row 2:"],
    ),
    "timestamp outside time range": (
        {"edges": EDGES.with_columns(pl.Series("ts", [T0, T0, T0 + 11 * DAY, T0, T0, T0]))},
        ["column 'ts'", "outside the manifest's time range", "row 2:"],
    ),
    "unknown node type": (
        {
            "nodes": NODES.with_columns(
                pl.Series("node_type", ["user", "user", "ad", "ad", "store"])
            )
        },
        ["nodes.parquet", "column 'node_type'", "unknown node types ['store']", "row 4:"],
    ),
    "unknown edge type": (
        {
            "edges": EDGES.with_columns(
                pl.Series(
                    "edge_type", ["creates", "creates", "view", "impression", "impression", "click"]
                )
            )
        },
        ["column 'edge_type'", "unknown edge types ['view']", "row 2:"],
    ),
    "undeclared edge triple": (
        {
            "edges": EDGES.with_columns(
                pl.Series(
                    "edge_type",
                    ["click", "creates", "impression", "impression", "impression", "click"],
                )
            )
        },
        ["undeclared edge types", "row 0:", "'advertiser'"],
    ),
    "dangling endpoint": (
        {"edges": EDGES.with_columns(pl.Series("dst_id", [20, 21, 20, 99, 21, 20]))},
        ["column 'dst_id'", "not found in nodes", "row 3:", "dst_id=99"],
    ),
    "duplicate node ids": (
        {"nodes": NODES.with_columns(pl.Series("node_id", [10, 11, 20, 20, 30]))},
        ["nodes.parquet", "duplicate node ids", "node_id=20"],
    ),
    "empty table": ({"edges": EDGES.clear()}, ["edges.parquet", "table is empty"]),
    "duplicate content": (
        {"content": pl.concat([CONTENT, CONTENT.head(1)])},
        ["content.parquet", "duplicate content rows"],
    ),
    "dangling content": (
        {"content": CONTENT.with_columns(pl.Series("node_id", [20, 77]))},
        ["content.parquet", "not in nodes", "node_id=77"],
    ),
    "null content text": (
        {"content": CONTENT.with_columns(pl.Series("text", ["a", None]))},
        ["content.parquet", "column 'text'", "null values", "row 1:"],
    ),
    "ids of another kind": (
        {"edges": EDGES.with_columns(pl.col("src_id").cast(pl.String))},
        ["column 'src_id'", "same kind as nodes.node_id"],
    ),
    "unknown node type in a dictionary column": (
        {
            "edges": EDGES.with_columns(
                pl.Series("dst_type", ["ad", "ad", "ad", "store", "ad", "ad"], dtype=pl.Categorical)
            )
        },
        ["column 'dst_type'", "unknown node types ['store']", "row 3:"],
    ),
    "NaN weight": (
        {"edges": EDGES.with_columns(pl.Series("weight", [1.0, 1, 1, 1, 1, float("nan")]))},
        ["column 'weight'", "non-finite values", "row 5:"],
    ),
    "duplicate string node ids": (
        {
            "nodes": NODES.with_columns(pl.Series("node_id", ["b", "b", "x", "y", "z"])),
            "content": CONTENT.with_columns(pl.Series("node_id", ["x", "b"])),
        },
        ["nodes.parquet", "duplicate node ids", "node_id='b'", "row 1:"],
    ),
    "infinite weight": (
        {"edges": EDGES.with_columns(pl.Series("weight", [1.0, 1, float("inf"), 1, 1, 1]))},
        ["column 'weight'", "non-finite values", "row 2:"],
    ),
    "negative weight": (
        {"edges": EDGES.with_columns(pl.Series("weight", [1.0, -1.0, 1, 1, 1, 1]))},
        ["column 'weight'", "negative values", "row 1:"],
    ),
    # was a traceback: the cast of UInt64 ids to Int64 failed
    "unsigned ids of 2**63 and more": (
        {
            "nodes": NODES.with_columns(
                pl.Series("node_id", [10, 11, 20, 21, 2**63], dtype=pl.UInt64)
            ),
            "edges": EDGES.with_columns(pl.col("src_id", "dst_id").cast(pl.UInt64)),
            "content": CONTENT.with_columns(pl.col("node_id").cast(pl.UInt64)),
        },
        ["nodes.parquet", "column 'node_id'", "below 2**63", "row 4:"],
    ),
    # was a traceback: the cast of float seconds to Int64 failed
    "float timestamp of 1e30": (
        {"edges": EDGES.with_columns(pl.Series("ts", [float(T0)] * 5 + [1e30]))},
        ["column 'ts'", "after 9999-12-31T23:59:59Z", "row 5:"],
    ),
    "unsigned timestamp of 2**63": (
        {"edges": EDGES.with_columns(pl.Series("ts", [T0] * 5 + [2**63], dtype=pl.UInt64))},
        ["column 'ts'", "after 9999-12-31T23:59:59Z", "row 5:"],
    ),
    # milliseconds read as seconds lie tens of thousands of years ahead
    "millisecond timestamps": (
        {"edges": EDGES.with_columns(pl.Series("ts", [T0] * 5 + [T0 * 1000]))},
        ["column 'ts'", "after 9999-12-31T23:59:59Z", "milliseconds must be divided", "row 5:"],
    ),
    "creation time after year 9999": (
        {"nodes": NODES.with_columns(pl.Series("created_ts", [None, T0, T0, T0, 2**62]))},
        ["nodes.parquet", "column 'created_ts'", "after 9999-12-31", "row 4:"],
    ),
    # was silent: 1e300 became inf in the graph's float32 weights
    "weight beyond float32": (
        {"edges": EDGES.with_columns(pl.Series("weight", [1e300, 1, 1, 1, 1, 1.0]))},
        ["column 'weight'", "too large for float32", "row 0:"],
    ),
    # was silent: "n0" and "n0\0" became the same id in the graph's numpy string arrays
    "string ids with a NUL character": (
        {
            "nodes": NODES.with_columns(pl.Series("node_id", ["n0", "n0\0", "a", "b", "c"])),
            "edges": EDGES.with_columns(
                pl.Series("src_id", ["c", "c", "n0", "n0\0", "n0", "n0"]),
                pl.Series("dst_id", ["a", "b", "a", "b", "b", "a"]),
            ),
            "content": CONTENT.with_columns(pl.Series("node_id", ["a", "c"])),
        },
        ["nodes.parquet", "column 'node_id'", "NUL", "row 1:"],
    ),
    # an edge id with a NUL is one no node has: named for the NUL, not as "not found"
    "an edge id with a NUL character": (
        {
            "nodes": NODES.with_columns(pl.Series("node_id", ["u0", "u1", "a", "b", "c"])),
            "edges": EDGES.with_columns(
                pl.Series("src_id", ["c", "c", "u0", "u1\0", "u0", "u0"]),
                pl.Series("dst_id", ["a", "b", "a", "b", "b", "a"]),
            ),
            "content": CONTENT.with_columns(pl.Series("node_id", ["a", "c"])),
        },
        ["edges.parquet", "column 'src_id'", "NUL", "row 3:"],
    ),
    # was silent until `hir fit`: NaN inside a content vector passed validation
    "NaN inside a content vector": (
        {"content": CONTENT.with_columns(pl.Series("image", [[0.5, float("nan")], [1.0, 0.0]]))},
        ["content.parquet", "column 'image'", "non-finite numbers inside vectors", "row 0:"],
    ),
    "null inside a fixed-size content vector": (
        {
            "content": CONTENT.with_columns(
                pl.Series("image", [[0.5, 1.0], [None, 0.0]], dtype=pl.Array(pl.Float32, 2))
            )
        },
        ["content.parquet", "column 'image'", "null or non-finite", "node_id=30"],
    ),
    # were tracebacks (polars DuplicateError): the validator's own column names
    "a pandas index column in nodes": (
        {"nodes": NODES.with_columns(pl.Series("index", range(5)))},
        ["nodes.parquet", "column 'index'", "is reserved", "rename or drop"],
    ),
    "a type_code column in nodes": (
        {"nodes": NODES.with_columns(pl.Series("type_code", range(5)))},
        ["nodes.parquet", "column 'type_code'", "is reserved"],
    ),
    "a __row column in edges": (
        {"edges": EDGES.with_columns(pl.Series("__row", range(6)))},
        ["edges.parquet", "column '__row'", "is reserved"],
    ),
    "an index vector column in content": (
        {"content": CONTENT.with_columns(pl.Series("index", [[0.5, 1.0], [1.0, 0.0]]))},
        ["content.parquet", "column 'index'", "is reserved"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_table_gives_one_message_and_exit_2(case, write_dataset, tmp_path, capsys):
    tables, expected = CASES[case]
    err = _run_build(write_dataset(**tables), tmp_path, capsys)
    for fragment in expected:
        assert fragment in err, f"{case}: {fragment!r} not in {err!r}"


# several problems in one edges table: the message is the first in the documented order
# (source end, destination end, edge types, times, weights, endpoints missing from nodes),
# whichever of the threads that check them finishes first
SEVERAL = {
    "destination type before weights and missing ends": (
        EDGES.with_columns(
            pl.Series("dst_type", ["ad", "ad", "ad", "store", "ad", "ad"]),
            pl.Series("weight", [-1.0] * 6),
            pl.Series("src_id", [99] * 6),
        ),
        "unknown node types ['store']",
    ),
    "times before weights and missing ends": (
        EDGES.with_columns(
            pl.Series("ts", [T0, T0, T0 + 11 * DAY, T0, T0, T0]),
            pl.Series("weight", [-1.0] * 6),
            pl.Series("dst_id", [99] * 6),
        ),
        "outside the manifest's time range",
    ),
    "weights before missing ends": (
        EDGES.with_columns(pl.Series("weight", [-1.0] * 6), pl.Series("dst_id", [99] * 6)),
        "negative values",
    ),
    "missing sources before missing destinations": (
        EDGES.with_columns(pl.Series("src_id", [99] * 6), pl.Series("dst_id", [99] * 6)),
        "(src_type, src_id)",
    ),
}


@pytest.mark.parametrize("case", sorted(SEVERAL))
def test_several_problems_give_the_first_message_in_order(case, write_dataset, tmp_path, capsys):
    edges, expected = SEVERAL[case]
    err = _run_build(write_dataset(edges=edges), tmp_path, capsys)
    assert expected in err, err


def test_a_nodes_problem_does_not_wait_for_the_edges_read(write_dataset, monkeypatch):
    """The edges are read on a thread while the nodes are checked; a problem in the
    nodes is reported while that read is still going (a large file could take minutes,
    or memory the machine lacks)."""
    from hir_sdk.schema import dataset

    released, read, real = threading.Event(), threading.Event(), dataset.read_table

    def held(path, categories=()):
        if path.name == "edges.parquet":
            released.wait(timeout=10)  # what waited for the read waits this long
            read.set()
        return real(path, categories)

    monkeypatch.setattr(dataset, "read_table", held)
    bad_nodes = NODES.with_columns(pl.Series("node_type", ["user", "user", "ad", "ad", "x"]))
    root = write_dataset(nodes=bad_nodes)
    try:
        with pytest.raises(InputError, match="unknown node types"):
            load_dataset(root)
        assert not read.is_set()  # reported while the edges read was still held
    finally:
        released.set()


def test_times_after_the_year_9999_are_quoted_and_do_not_hide_earlier_problems(
    write_dataset, tmp_path, capsys
):
    """A Datetime after 9999-12-31 (which parquet holds and Python's datetime cannot) is
    quoted as polars prints it; beside an unknown node type, the type is reported first,
    as the order says."""
    late = EDGES["ts"].to_list()[:-1] + [253_402_300_800]  # 10000-01-01T00:00:00Z
    edges = EDGES.with_columns((pl.Series("ts", late) * 1_000_000).cast(pl.Datetime("us")))
    err = _run_build(write_dataset(edges=edges), tmp_path, capsys)
    assert "timestamps after 9999-12-31" in err and "10000-01-01" in err
    unknown = edges.with_columns(pl.Series("src_type", ["store", *EDGES["src_type"][1:]]))
    err = _run_build(write_dataset(edges=unknown), tmp_path, capsys)
    assert "unknown node types ['store']" in err


def test_an_empty_edges_frame_and_named_categories_validate():
    """The validator called directly: a frame of no edges gives no edges, and type
    columns of a categorical with its own category mapping read as categoricals."""
    manifest, path = mini_manifest(), Path("edges.parquet")
    nodes = validate_nodes(NODES.with_row_index("__row"), manifest, Path("nodes.parquet"))
    empty = validate_edges(EDGES.clear().with_row_index("__row"), manifest, nodes, path)
    assert empty.height == 0 and empty.columns == ["src", "dst", "etype", "ts", "weight"]
    named = pl.Categorical(pl.Categories("hir_sdk_test_types"))
    frame = EDGES.with_columns(pl.col(c).cast(named) for c in TYPE_COLUMNS)
    got = validate_edges(frame.with_row_index("__row"), manifest, nodes, path)
    assert got.equals(validate_edges(EDGES.with_row_index("__row"), manifest, nodes, path))


def test_tables_are_reported_in_order_nodes_edges_content(write_dataset, tmp_path, capsys):
    """The edges are read, and the content checked, beside the nodes and the edges; a
    dataset broken in several tables still gets the first table's message."""
    bad_nodes = NODES.with_columns(pl.Series("node_type", ["user", "user", "ad", "ad", "x"]))
    bad_edges = EDGES.with_columns(pl.Series("weight", [-1.0] * 6))
    bad_content = CONTENT.with_columns(pl.Series("node_id", [99, 30]))
    cases = [
        ({"nodes": bad_nodes, "edges": bad_edges, "content": bad_content}, "nodes.parquet"),
        ({"edges": bad_edges, "content": bad_content}, "edges.parquet"),
        ({"content": bad_content}, "content.parquet"),
        ({"nodes": bad_nodes, "edges": None}, "nodes.parquet"),  # the edges file missing
    ]
    for tables, file in cases:
        err = _run_build(write_dataset(**tables), tmp_path, capsys)
        assert file in err.splitlines()[0], err


def test_missing_nodes_file(write_dataset, tmp_path, capsys):
    err = _run_build(write_dataset(nodes=None), tmp_path, capsys)
    assert "nodes.parquet: file not found" in err


def test_unreadable_parquet(write_dataset, tmp_path, capsys):
    data = write_dataset()
    (data / "edges.parquet").write_bytes(b"PAR1 this is not parquet")
    err = _run_build(data, tmp_path, capsys)
    assert "edges.parquet: cannot read parquet" in err


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("name = \n", "cannot read manifest"),
        ('name = "x"\nnode_types = ["user"]\n', "missing key 'time'"),
        (
            'name = "x"\nnode_types = ["user"]\nedge_types = []\n[time]\nstart = 5\n',
            "missing key 'time.validation_start'",
        ),
    ],
)
def test_bad_manifest(text, fragment, write_dataset, tmp_path, capsys):
    err = _run_build(write_dataset(manifest=text), tmp_path, capsys)
    assert "manifest.toml" in err and fragment in err


MANIFEST_CASES = {
    # each was a traceback (a node type names a file of the saved graph)
    "node type with a slash": (
        ('"advertiser"', '"adv/ertiser"'),
        ["node type 'adv/ertiser'", "path separator"],
    ),
    "node type with a NUL byte": (
        ('"advertiser"', '"adv\\u0000"'),
        ["node type 'adv\\x00'", "control character"],
    ),
    # was silent until `hir graph info` could not read the graph's manifest back
    "node type with a newline": (
        ('"advertiser"', '"adv\\nertiser"'),
        ["node type 'adv\\nertiser'", "control character"],
    ),
    "relation name with a tab": (
        ('"creates"', '"cre\\tates"'),
        ["edge_types[2]", "rel 'cre\\tates'", "control character"],
    ),
    # was a traceback (OSError) when the graph's manifest was written
    "end of 2**63 - 1": (
        ("end = 2026-01-11 00:00:00+00:00", "end = 9223372036854775807"),
        ["time: end 9223372036854775807 is after 9999-12-31T23:59:59Z"],
    ),
    # inf was accepted, then overflowed in `hir ab`; NaN and negative windows are refused too
    "infinite attribution window": (
        ("attribution_window_days = 7.0", "attribution_window_days = inf"),
        ["funnel.attribution_window_days must be > 0 and <= 36500 days, got inf"],
    ),
    "NaN attribution window": (
        ("attribution_window_days = 7.0", "attribution_window_days = nan"),
        ["funnel.attribution_window_days", "got nan"],
    ),
    "negative attribution window": (
        ("attribution_window_days = 7.0", "attribution_window_days = -2.0"),
        ["funnel.attribution_window_days", "got -2.0"],
    ),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_CASES))
def test_bad_manifest_value_gives_one_message_and_exit_2(case, write_dataset, tmp_path, capsys):
    (old, new), expected = MANIFEST_CASES[case]
    text = mini_manifest().to_toml()
    assert old in text, f"{case}: {old!r} not in the manifest"
    err = _run_build(write_dataset(manifest=text.replace(old, new)), tmp_path, capsys)
    assert "manifest.toml" in err
    for fragment in expected:
        assert fragment in err, f"{case}: {fragment!r} not in {err!r}"


def test_more_edge_types_than_int16_codes_is_refused():
    manifest = mini_manifest()
    many = tuple(EdgeTypeSpec("user", f"r{i}", "ad") for i in range(MAX_EDGE_TYPES + 1))
    with pytest.raises(ValueError, match="32,768 edge types declared; at most 32,767"):
        replace(manifest, edge_types=many)
    assert len(replace(manifest, edge_types=many[:-1]).edge_types) == MAX_EDGE_TYPES


def test_manifest_with_unknown_endpoint_type(write_dataset, tmp_path, capsys):
    text = (
        (Path(write_dataset()) / "manifest.toml")
        .read_text()
        .replace('src = "advertiser"', 'src = "store"')
    )
    err = _run_build(write_dataset(manifest=text), tmp_path, capsys)
    assert "node type 'store' not declared" in err


def test_shown_rows_are_capped_at_five(write_dataset, tmp_path, capsys):
    many = pl.concat([EDGES] * 3).with_columns(pl.lit(-1).alias("ts"))
    err = _run_build(write_dataset(edges=many), tmp_path, capsys)
    assert "showing 5 of 18" in err
    assert err.count("  row ") == 5


def test_valid_dataset_normalizes(write_dataset):
    ds = load_dataset(write_dataset())
    assert ds.nodes["node_type"].to_list() == ["user", "user", "ad", "ad", "advertiser"]
    assert ds.nodes["index"].to_list() == [0, 1, 2, 3, 4]
    assert ds.edges["ts"].is_sorted()
    # edges sorted by time, ties in file order: file rows 0, 1, 2, 5, 3, 4
    assert ds.edges["src"].to_list() == [4, 4, 0, 0, 1, 0]
    assert ds.edges["dst"].to_list() == [2, 3, 2, 2, 3, 3]
    assert ds.edges["etype"].to_list() == [2, 2, 0, 1, 0, 0]
    assert ds.content is not None and ds.content["index"].to_list() == [2, 4]


def _as_pandas_writes_it(path: Path, index: list[str], labels: pa.Array | None = None) -> None:
    """Rewrite a parquet file as pandas' `to_parquet` writes a frame whose index is not a
    plain range (a filtered frame): the index as columns, listed in the pandas metadata."""
    table = pq.read_table(path)
    if labels is not None:
        table = table.append_column(index[0], labels)
    meta = json.dumps({"index_columns": index, "column_indexes": [], "columns": []})
    pq.write_table(table.replace_schema_metadata({b"pandas": meta.encode()}), path)


def test_a_pandas_index_is_not_data(write_dataset):
    """A frame filtered in pandas keeps its row labels, and `to_parquet` writes them as an
    `__index_level_0__` column: they are not a node attribute (nor a content vector, nor
    an edge column). A named index (`set_index("node_id")`) is a column like any other."""
    from hir_sdk.schema.tables import node_feature_columns

    root = write_dataset()
    for name in ("nodes", "edges", "content"):
        rows = pq.read_metadata(root / f"{name}.parquet").num_rows
        labels = pa.array([3 * i + 7 for i in range(rows)], pa.int64())
        _as_pandas_writes_it(root / f"{name}.parquet", ["__index_level_0__"], labels)
    ds = load_dataset(root)
    assert node_feature_columns(ds.nodes) == ["bid"]
    assert ds.content is not None and ds.content["index"].to_list() == [2, 4]
    _as_pandas_writes_it(root / "nodes.parquet", ["node_id"])
    assert load_dataset(root).nodes["node_id"].to_list() == NODES["node_id"].to_list()


def test_type_columns_read_as_dictionaries_give_the_same_dataset(write_dataset):
    """Type names stored as plain strings (what pandas writes) or string views are read
    as dictionaries; the dataset equals the one read from dictionary-encoded columns,
    and a column that is not a string (a mistyped one) is left for the validator to
    name."""
    root = write_dataset()
    frame = read_table(root / "edges.parquet", TYPE_COLUMNS)
    assert not pa.types.is_dictionary(pq.read_schema(root / "edges.parquet").field("src_type").type)
    assert all(frame[c].dtype == pl.Categorical for c in TYPE_COLUMNS)
    assert frame["dst_type"].cast(pl.String).to_list() == EDGES["dst_type"].to_list()
    stored = write_dataset(
        edges=EDGES.with_columns(pl.col(c).cast(pl.Categorical) for c in TYPE_COLUMNS),
        nodes=NODES.with_columns(pl.col("node_type").cast(pl.Categorical)),
    )
    assert pa.types.is_dictionary(pq.read_schema(stored / "edges.parquet").field("src_type").type)
    plain, dictionary = load_dataset(root), load_dataset(stored)
    assert plain.edges.equals(dictionary.edges)
    assert plain.nodes.equals(dictionary.nodes)
    views = root.parent / "views"  # string_view columns, as other arrow writers may store
    shutil.copytree(root, views)
    for name in ("nodes.parquet", "edges.parquet", "content.parquet"):
        table = pq.read_table(views / name)
        for i, field in enumerate(table.schema):
            if field.name in (*TYPE_COLUMNS, "node_type"):
                table = table.set_column(i, field.name, table[i].cast(pa.string_view()))
        pq.write_table(table, views / name)
    assert pa.types.is_string_view(pq.read_schema(views / "edges.parquet").field("src_type").type)
    frame = read_table(views / "edges.parquet", TYPE_COLUMNS)
    assert all(frame[c].dtype == pl.Categorical for c in TYPE_COLUMNS)
    assert read_table(views / "nodes.parquet", ("node_type",))["node_type"].dtype == pl.Categorical
    viewed = load_dataset(views)
    assert plain.edges.equals(viewed.edges) and plain.nodes.equals(viewed.nodes)
    numbers = write_dataset(edges=EDGES.with_columns(pl.lit(1).alias("edge_type")))
    assert read_table(numbers / "edges.parquet", TYPE_COLUMNS)["edge_type"].dtype == pl.Int32
    with pytest.raises(InputError, match="mistyped column: expected string"):
        load_dataset(numbers)


def test_string_ids_and_datetime_timestamps(write_dataset):
    nodes = NODES.with_columns(pl.col("node_id").cast(pl.String))
    edges = EDGES.with_columns(
        pl.col("src_id").cast(pl.String),
        pl.col("dst_id").cast(pl.String),
        pl.from_epoch("ts", time_unit="s").alias("ts"),
    )
    content = CONTENT.with_columns(pl.col("node_id").cast(pl.String))
    ds = load_dataset(write_dataset(nodes=nodes, edges=edges, content=content))
    assert ds.edges["ts"].to_list() == sorted(EDGES["ts"].to_list())
    assert ds.edges["src"].to_list() == [4, 4, 0, 0, 1, 0]


def test_sparse_integer_ids_resolve(write_dataset):
    big = 10**15
    nodes = NODES.with_columns((pl.col("node_id") * big).alias("node_id"))
    edges = EDGES.with_columns(pl.col("src_id") * big, pl.col("dst_id") * big)
    content = CONTENT.with_columns(pl.col("node_id") * big)
    ds = load_dataset(write_dataset(nodes=nodes, edges=edges, content=content))
    assert ds.edges["dst"].to_list() == [2, 3, 2, 2, 3, 3]


def test_ids_spanning_the_whole_int64_range_resolve(write_dataset):
    # the id span overflowed int64 and every edge of such a user was "not found in nodes"
    low, high = -(2**63), 2**63 - 1
    nodes = NODES.with_columns(pl.Series("node_id", [low, high, 20, 21, 30]))
    edges = EDGES.with_columns(pl.Series("src_id", [30, 30, low, high, low, low]))
    ds = load_dataset(write_dataset(nodes=nodes, edges=edges))
    assert ds.nodes["node_id"].to_list()[:2] == [low, high]
    assert ds.edges["src"].to_list() == [4, 4, 0, 0, 1, 0]
    assert ds.edges["dst"].to_list() == [2, 3, 2, 2, 3, 3]


def test_a_manifest_in_another_encoding(write_dataset, tmp_path, capsys):
    """A byte-order mark ("UTF-8 with BOM") is read as if absent; latin-1 is refused by
    name instead of a TOML parse error at line 1."""
    data = write_dataset()
    text = (data / "manifest.toml").read_text()
    (data / "manifest.toml").write_text(text, encoding="utf-8-sig")
    assert main(["graph", "build", "--data", str(data), "--out", str(tmp_path / "g")]) == 0
    (data / "manifest.toml").write_bytes(("# caf\xe9\n" + text).encode("latin-1"))
    err = _run_build(data, tmp_path, capsys)
    assert "manifest.toml: cannot read manifest: it is not UTF-8" in err
