"""Every bad-input class gives one clear message, exit code 2, and no output left behind."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from hir_sdk.cli.main import main
from hir_sdk.schema import load_dataset
from tests.conftest import DAY, T0, mini_tables

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
    "negative weight": (
        {"edges": EDGES.with_columns(pl.Series("weight", [1.0, -1.0, 1, 1, 1, 1]))},
        ["column 'weight'", "negative values", "row 1:"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_table_gives_one_message_and_exit_2(case, write_dataset, tmp_path, capsys):
    tables, expected = CASES[case]
    err = _run_build(write_dataset(**tables), tmp_path, capsys)
    for fragment in expected:
        assert fragment in err, f"{case}: {fragment!r} not in {err!r}"


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
