"""The edges' categorical path (`category_codes`) against the checked path, row for row,
on tables read the way `load_dataset` reads them: several row groups, type columns as
dictionaries, and the cases where the categorical path must hand over."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.schema import category_codes, tables
from hir_sdk.schema.category_codes import (
    aligned_chunks,
    category_table,
    edge_type_codes,
    edge_type_keys,
)
from hir_sdk.schema.columns import ROW, category_positions, read_table, type_codes
from hir_sdk.schema.dataset import TYPE_COLUMNS
from tests.conftest import DAY, T0, mini_manifest

TYPES = list(mini_manifest().node_types)
SPECS = [(x.src, x.rel, x.dst) for x in mini_manifest().edge_types]


def _world(tmp_path: Path, rows: int = 50_000, seed: int = 0):
    """A manifest, validated nodes (ids with gaps, three types) and an edges file of
    `rows` random declared edges written in row groups of 4,096 rows."""
    rng = np.random.default_rng(seed)
    manifest = mini_manifest()
    ids = {t: np.sort(rng.choice(3_000, 700, replace=False)) for t in TYPES}
    nodes = pl.DataFrame(
        {
            "node_type": [t for t in TYPES for _ in ids[t]],
            "node_id": np.concatenate([ids[t] for t in TYPES]),
        }
    ).with_row_index("__row")
    nodes = tables.validate_nodes(nodes, manifest, tmp_path / "nodes.parquet")
    spec = rng.integers(0, len(SPECS), rows)
    src_type = np.array([SPECS[k][0] for k in spec])
    dst_type = np.array([SPECS[k][2] for k in spec])
    edges = pl.DataFrame(
        {
            "src_type": src_type,
            "src_id": [int(rng.choice(ids[t])) for t in src_type],
            "dst_type": dst_type,
            "dst_id": [int(rng.choice(ids[t])) for t in dst_type],
            "edge_type": [SPECS[k][1] for k in spec],
            "ts": T0 + rng.integers(0, 5 * DAY, rows),  # unsorted: the output sorts
            "weight": rng.random(rows),
        }
    )
    path = tmp_path / "edges.parquet"
    edges.write_parquet(path, row_group_size=4_096)
    return manifest, nodes, path


def test_categorical_path_equals_checked_path(tmp_path) -> None:
    manifest, nodes, path = _world(tmp_path)
    frame = read_table(path, TYPE_COLUMNS)
    assert frame["src_type"].n_chunks() > 1 and frame["src_type"].dtype == pl.Categorical
    fast = tables._resolved_from_categories(frame, manifest, nodes, path)
    assert fast is not None, "the categorical path must answer for a valid table"
    checked = tables._resolved_checked(frame, manifest, nodes, path)
    assert pl.DataFrame(fast).equals(pl.DataFrame(checked))
    assert len(aligned_chunks(frame["src_type"], frame["src_id"])) == frame["src_id"].n_chunks()
    out = tables.validate_edges(frame, manifest, nodes, path)
    assert out["ts"].is_sorted() and out.height == frame.height


def test_unaligned_chunks_and_enum_columns_give_the_same_rows(tmp_path) -> None:
    """Type and id columns chunked differently are read as whole arrays; an Enum with a
    category no row uses (and the manifest does not declare) is fine."""
    manifest, nodes, path = _world(tmp_path, rows=20_000, seed=1)
    frame = read_table(path, TYPE_COLUMNS)
    enum = pl.Enum([*TYPES, "store"])
    regrouped = frame.with_columns(
        pl.col("src_type").cast(pl.String).cast(enum),
        pl.concat([frame["dst_id"].slice(0, 7), frame["dst_id"].slice(7)], rechunk=False),
    )
    assert len(aligned_chunks(regrouped["dst_type"], regrouped["dst_id"])) == 1
    fast = tables._resolved_from_categories(regrouped, manifest, nodes, path)
    assert fast is not None
    checked = tables._resolved_checked(frame, manifest, nodes, path)
    assert pl.DataFrame(fast).equals(pl.DataFrame(checked))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (pl.col("edge_type").cast(pl.String).replace("creates", "click"), "undeclared edge types"),
        (pl.col("dst_id") + 5_000, "edge endpoints not found in nodes (dst_type, dst_id)"),
        (pl.col("src_type").cast(pl.String).replace("advertiser", "store"), "unknown node types"),
    ],
)
def test_problems_hand_over_to_the_checked_path(tmp_path, change, message) -> None:
    manifest, nodes, path = _world(tmp_path, rows=10_000, seed=2)
    frame = read_table(path, TYPE_COLUMNS).with_columns(change)
    frame = frame.with_columns(pl.col(c).cast(pl.Categorical) for c in TYPE_COLUMNS)
    assert tables._resolved_from_categories(frame, manifest, nodes, path) is None
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        tables.validate_edges(frame, manifest, nodes, path)


@pytest.mark.parametrize("padding", [0, 3_000])
def test_edge_type_codes_against_a_reference(padding) -> None:
    """Every (src, relation, dst) combination of physical ids, in two pieces; the
    category tables (of different lengths) map the ids in another order than the
    manifest's, and some ids to no declared name. Padded with thousands of unused ids
    (other columns' categories), the keys come from manifest codes instead."""
    manifest = mini_manifest()
    rels = sorted({spec.rel for spec in manifest.edge_types})
    src_names, rel_names, dst_names = [*TYPES[::-1], "x"], [*rels[::-1], "y"], ["z", *TYPES, "w"]
    tables_ = tuple(
        np.array([among.index(v) if v in among else -1 for v in values] + [-1] * padding)
        for values, among in ((src_names, TYPES), (rel_names, rels), (dst_names, TYPES))
    )
    keys = edge_type_keys(manifest, rels, tables_)
    assert keys is not None
    by_codes = len(keys[1]) == (len(TYPES) + 1) ** 2 * (len(rels) + 1)
    assert by_codes == (padding > 0)
    grid = np.array([(s, r, d) for s in range(4) for r in range(4) for d in range(5)]).T.astype(
        np.uint32
    )
    pieces = [tuple(g[:5] for g in grid), tuple(g[5:] for g in grid)]
    got = edge_type_codes(keys, pieces)
    declared = {(x.src, x.rel, x.dst): k for k, x in enumerate(manifest.edge_types)}
    expected = [declared.get((src_names[s], rel_names[r], dst_names[d]), -1) for s, r, d in grid.T]
    assert got.tolist() == expected
    assert (got >= 0).any() and (got < 0).any()


def test_many_other_categories_keep_the_categorical_path(tmp_path) -> None:
    """Polars numbers categories process-wide: after thousands of other strings were
    made categorical, the type names' physical ids are large, and the edge types are
    keyed by manifest codes; the categorical path still answers, with the same rows."""
    mapping = pl.Categorical(pl.Categories("hir_sdk_test_many"))  # one this test fills
    others = pl.Series([f"other-{i}" for i in range(5_000)], dtype=mapping)  # kept alive
    manifest, nodes, path = _world(tmp_path, rows=5_000, seed=4)
    frame = read_table(path, TYPE_COLUMNS)
    frame = frame.with_columns(pl.col(c).cast(pl.String).cast(mapping) for c in TYPE_COLUMNS)
    assert len(category_table(frame["src_type"], TYPES)) > 5_000  # type: ignore[arg-type]
    fast = tables._resolved_from_categories(frame, manifest, nodes, path)
    assert fast is not None
    checked = tables._resolved_checked(frame, manifest, nodes, path)
    assert pl.DataFrame(fast).equals(pl.DataFrame(checked))
    assert others.len() == 5_000


def test_category_table_maps_physical_ids_to_manifest_positions() -> None:
    column = pl.Series(["ad", "user", "store", "ad", None], dtype=pl.Categorical)
    assert category_table(column, TYPES) is None  # a null: the checked path names it
    column = column.drop_nulls()
    table = category_table(column, TYPES)
    assert table is not None
    physical = column.to_physical().to_numpy()
    assert table[physical].tolist() == [1, 0, -1, 1]
    assert category_table(pl.Series(["ad"]), TYPES) is None  # plain strings


@pytest.mark.parametrize("dtype", [pl.Categorical, pl.Enum(["store", "ad", "user"])])
def test_type_codes_read_a_categorical_through_the_same_table(dtype) -> None:
    """The checked path's `type_codes` maps a categorical through `category_positions`,
    the table `category_table` returns: the same codes, an unknown name refused, and a
    frame without rows giving no codes (it raised a bare ValueError)."""
    frame = pl.DataFrame({"t": pl.Series(["ad", "user", "ad"], dtype=dtype)})
    frame = frame.with_row_index(ROW)
    codes = type_codes(frame, "t", TYPES, Path("nodes.parquet"), "node types")
    assert codes.tolist() == [1, 0, 1]
    assert category_positions(frame["t"], TYPES)[frame["t"].to_physical()].tolist() == [1, 0, 1]
    store = pl.DataFrame({"t": pl.Series(["ad", "store"], dtype=dtype)}).with_row_index(ROW)
    with pytest.raises(InputError, match=r"unknown node types \['store'\]") as err:
        type_codes(store, "t", TYPES, Path("nodes.parquet"), "node types")
    assert "row 1" in str(err.value)
    empty = frame.head(0)
    assert type_codes(empty, "t", TYPES, Path("nodes.parquet"), "node types").tolist() == []


def test_a_large_category_mapping_goes_the_checked_path(tmp_path, monkeypatch) -> None:
    """Physical ids from a process-wide mapping of many strings would make the tables
    large (a type column's, or the edge types' over all three): the table is checked
    row by row instead, with the same rows."""
    manifest, nodes, path = _world(tmp_path, rows=5_000, seed=3)
    frame = read_table(path, TYPE_COLUMNS)
    monkeypatch.setattr(category_codes, "MAX_TABLE", 1)
    assert category_table(frame["src_type"], TYPES) is None
    assert tables._resolved_from_categories(frame, manifest, nodes, path) is None
    out = tables.validate_edges(frame, manifest, nodes, path)
    monkeypatch.undo()
    assert out.equals(tables.validate_edges(frame, manifest, nodes, path))
    monkeypatch.setattr(category_codes, "MAX_TRIPLES", 1)  # no table of edge-type keys fits
    assert tables._resolved_from_categories(frame, manifest, nodes, path) is None
    assert out.equals(tables.validate_edges(frame, manifest, nodes, path))
