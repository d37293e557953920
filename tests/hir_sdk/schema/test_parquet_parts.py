"""Tables stored as folders of part files (Spark's output) are read as one table: the
same graph as from single files, a fingerprint over every part in sorted order, and
messages that name the part holding a bad value or a mismatched schema."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from hir_sdk.cli.main import main
from hir_sdk.errors import InputError
from hir_sdk.graph import build_graph
from hir_sdk.io.fingerprint import fingerprint_files
from hir_sdk.schema import load_dataset
from hir_sdk.schema.parquet_parts import partition_type, read_parts, read_schema


def _split(path: Path, cuts: list[int]) -> list[Path]:
    """Replace the parquet file `path` by a Spark-style folder of the same name: parts cut
    at the rows `cuts`, written in reverse name order (listing order is not name order),
    a `_SUCCESS` marker and `.crc` checksums, which are not read."""
    table = pq.read_table(path)
    path.unlink()
    path.mkdir()
    bounds = [0, *cuts, table.num_rows]
    parts = [path / f"part-{i:05d}-c0ffee.snappy.parquet" for i in range(len(bounds) - 1)]
    for i in reversed(range(len(parts))):
        pq.write_table(table.slice(bounds[i], bounds[i + 1] - bounds[i]), parts[i])
        (path / f".{parts[i].name}.crc").write_bytes(b"checksum")
    (path / "_SUCCESS").write_bytes(b"")
    return parts


@pytest.fixture
def spark_world(tiny_world, tmp_path) -> Path:
    """The tiny world with each table a folder of parts (one part left empty, as Spark
    writes for an empty partition)."""
    root = tmp_path / "spark"
    root.mkdir()
    for name in ("manifest.toml", "nodes.parquet", "edges.parquet", "content.parquet"):
        shutil.copy(tiny_world / name, root / name)
    _split(root / "nodes.parquet", [500, 500, 1500])
    _split(root / "edges.parquet", [10_000, 25_000])
    _split(root / "content.parquet", [300])
    return root


def test_a_folder_of_parts_gives_the_graph_of_the_single_files(tiny_world, spark_world):
    single, parts = load_dataset(tiny_world), load_dataset(spark_world)
    for name in ("nodes", "edges", "content"):
        assert getattr(parts, name).equals(getattr(single, name)), name
    a, b = build_graph(single), build_graph(parts)
    assert (a.num_nodes, a.num_edges) == (b.num_nodes, b.num_edges)
    for name in ("src", "dst", "etype", "ts", "weight", "created_ts"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    for ids_a, ids_b in zip(a.node_ids, b.node_ids, strict=True):
        np.testing.assert_array_equal(ids_a, ids_b)


def test_the_fingerprint_covers_every_part_in_sorted_order(spark_world):
    tables = ("nodes.parquet", "edges.parquet", "content.parquet")
    parts = [
        sorted(p for p in (spark_world / t).iterdir() if p.name.startswith("part-")) for t in tables
    ]
    files = [spark_world / "manifest.toml", *(p for table in parts for p in table)]
    first = load_dataset(spark_world).fingerprint
    assert first == fingerprint_files(files, root=spark_world)
    assert first == load_dataset(spark_world).fingerprint
    (spark_world / "edges.parquet" / "_SUCCESS").write_bytes(b"not read")
    assert load_dataset(spark_world).fingerprint == first  # markers are not data
    last = parts[1][-1]
    table = pq.read_table(last)
    weight = pa.array(np.r_[2.0, table["weight"].to_numpy()[1:]])
    pq.write_table(table.set_column(table.schema.get_field_index("weight"), "weight", weight), last)
    assert load_dataset(spark_world).fingerprint != first  # one changed value in the last part


def _null_ts(part, row: int) -> None:
    """Rewrite the part file with a null `ts` in its row `row`."""
    frame = pl.read_parquet(part)
    frame.with_columns(
        pl.when(pl.int_range(pl.len()) == row).then(None).otherwise(pl.col("ts")).alias("ts")
    ).write_parquet(part)


def test_a_bad_value_in_one_part_names_that_part(spark_world):
    parts = sorted((spark_world / "edges.parquet").glob("part-*"))
    _null_ts(parts[1], 3)
    with pytest.raises(InputError) as refused:
        load_dataset(spark_world)
    message = str(refused.value)
    assert message.startswith(f"{parts[1]}: column 'ts': null timestamps\noffending rows:\n")
    assert "\n  row 3: " in message

    # in two parts: the folder, and each row's part
    _null_ts(parts[2], 0)
    with pytest.raises(InputError) as refused:
        load_dataset(spark_world)
    lines = str(refused.value).splitlines()
    assert lines[0] == f"{spark_world / 'edges.parquet'}: column 'ts': null timestamps"
    assert lines[2].startswith(f"  {parts[1].name} row 3: ")
    assert lines[3].startswith(f"  {parts[2].name} row 0: ")


def test_parts_with_mismatched_schemas_are_refused(spark_world, tmp_path, capsys):
    parts = sorted((spark_world / "edges.parquet").glob("part-*"))
    pl.read_parquet(parts[2]).with_columns(pl.col("ts").cast(pl.Float64)).write_parquet(parts[2])
    out = tmp_path / "graph"
    assert main(["graph", "build", "--data", str(spark_world), "--out", str(out)]) == 2
    first = parts[0].name
    assert capsys.readouterr().err == (
        f"hir graph: error: {parts[2]}: column 'ts': this part's columns differ from those "
        f"of the folder's first part, {first}: it stores it as double, not as int64; every "
        "part of a table needs the same columns and types\n"
    )
    assert not out.exists()
    pl.read_parquet(parts[0]).drop("weight").write_parquet(parts[2])
    with pytest.raises(InputError, match=rf"{parts[2]}: column 'weight': .* lacks the column"):
        load_dataset(spark_world)


def test_a_folder_without_parts_or_with_other_subfolders_is_refused(spark_world):
    edges = spark_world / "edges.parquet"
    (edges / "backup").mkdir()
    (edges / "backup" / "part-0.parquet").write_bytes(b"")
    with pytest.raises(InputError, match=r"the subfolder 'backup', which is not a partition"):
        load_dataset(spark_world)
    shutil.rmtree(edges)
    edges.mkdir()
    (edges / "_SUCCESS").write_bytes(b"")
    (edges / "day=2026-01-01").mkdir()  # an empty partition holds no part either
    with pytest.raises(InputError, match=f"{edges}: the table's folder holds no part file"):
        load_dataset(spark_world)


def _partitioned(path: Path, columns: list[str]) -> None:
    """Replace the parquet file `path` by a folder of the same name as pyarrow's (and
    Spark's) `partitionBy` writes it: `column=value` subfolders, the columns left out of
    the parts."""
    table = pq.read_table(path)
    path.unlink()
    pq.write_to_dataset(table, path, partition_cols=columns)


def test_a_partitioned_folder_gives_the_tables_of_the_single_files(tiny_world, tmp_path):
    root = tmp_path / "partitioned"
    shutil.copytree(tiny_world, root)
    _partitioned(root / "edges.parquet", ["edge_type", "src_type"])
    _partitioned(root / "nodes.parquet", ["node_type"])
    _partitioned(root / "content.parquet", ["node_type"])
    assert (root / "edges.parquet" / "edge_type=impression" / "src_type=user").is_dir()
    single, parts = load_dataset(tiny_world), load_dataset(root)
    # the rows arrive partition by partition, and come out in the canonical order
    for name in ("nodes", "edges", "content"):
        assert getattr(parts, name).equals(getattr(single, name)), name
    a, b = build_graph(single), build_graph(parts)
    for name in ("src", "dst", "etype", "ts", "weight", "created_ts"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)
    again = load_dataset(root)
    assert again.fingerprint == parts.fingerprint  # the order of the parts is fixed
    assert again.edges.equals(parts.edges)


def test_partition_values_are_typed_unescaped_and_null_as_spark_reads_them(tmp_path):
    folder = tmp_path / "table.parquet"
    for name, rows in (
        ("age=24/when=2026-01-01%2000%3A00", 2),
        ("age=__HIVE_DEFAULT_PARTITION__/when=later", 1),
        ("age=-7/when=__HIVE_DEFAULT_PARTITION__", 1),
    ):
        (folder / name).mkdir(parents=True)
        pq.write_table(pa.table({"x": np.arange(rows)}), folder / name / "part-0.parquet")
    table = read_parts(folder)
    assert read_schema(folder).names == ["x", "age", "when"]
    assert table.schema.field("age").type == pa.int64()
    assert table.schema.field("when").type == pa.string()
    # sorted by path: age=-7 < age=24 < age=__HIVE...
    assert table.column("age").to_pylist() == [-7, 24, 24, None]
    when = [None, "2026-01-01 00:00", "2026-01-01 00:00", "later"]
    assert table.column("when").to_pylist() == when
    twice = tmp_path / "twice.parquet" / "age=24" / "age=25"
    twice.mkdir(parents=True)
    pq.write_table(pa.table({"x": [0]}), twice / "part-0.parquet")
    with pytest.raises(InputError, match=r"columns \['age', 'age'\], one of them twice"):
        read_parts(tmp_path / "twice.parquet")
    assert partition_type(["1.5", "2", None]) == pa.float64()
    assert partition_type(["1", "2e3"]) == pa.float64()
    assert partition_type(["1", "x"]) == pa.string()
    assert partition_type([None]) == pa.string()


def test_partitioned_folders_that_do_not_add_up_are_refused(tiny_world, tmp_path, capsys):
    root = tmp_path / "partitioned"
    shutil.copytree(tiny_world, root)
    edges = root / "edges.parquet"
    _partitioned(edges, ["edge_type"])
    first = sorted(p for p in edges.iterdir() if p.is_dir())[0]
    part = next(first.iterdir())
    nested = first / "src_type=user"
    nested.mkdir()
    part.rename(nested / part.name)
    with pytest.raises(InputError, match=r"under the partition columns \['edge_type'\], the "):
        load_dataset(root)
    shutil.rmtree(edges)
    shutil.copy(tiny_world / "edges.parquet", edges)
    _partitioned(edges, ["edge_type"])
    part = next(p for p in (edges / "edge_type=click").iterdir())
    table = pq.read_table(part)
    pq.write_table(table.append_column("edge_type", pa.array(["click"] * table.num_rows)), part)
    out = tmp_path / "graph"
    assert main(["graph", "build", "--data", str(root), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"hir graph: error: {part}: column 'edge_type': the column 'edge_type' is both in "
        "this part and in the partition folders' names: keep it in one place\n"
    )
    assert not out.exists()
