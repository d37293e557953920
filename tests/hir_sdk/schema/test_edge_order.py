"""Edges of the same time are put in (edge type, source, destination, weight) order, so
the graph is a function of the set of rows: the same rows in any file order give the
same graph, and rows already in that order are left alone."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hir_sdk.graph import build_graph
from hir_sdk.schema import edge_order, load_dataset
from hir_sdk.schema.edge_order import same_time_fix


def _keys(rows: list[tuple]) -> tuple[np.ndarray, list[np.ndarray]]:
    cols = np.array(rows, dtype=np.float64).T
    ends = [c.astype(np.int64) for c in cols[2:4]]
    return cols[0].astype(np.int64), [cols[1].astype(np.int16), *ends, cols[4]]


def same_time_order(ts: np.ndarray, keys: list[np.ndarray]) -> np.ndarray | None:
    """`same_time_fix` as a permutation of all the rows (`column[perm]`), or None."""
    fix = same_time_fix(ts, keys)
    if fix is None:
        return None
    perm = np.arange(len(ts))
    perm[fix[0]] = fix[1]
    return perm


def test_same_time_rows_are_ordered_by_type_source_destination_weight():
    # (ts, etype, src, dst, weight)
    rows = [
        (1, 2, 0, 0, 1.0),
        (5, 1, 9, 3, 1.0),
        (5, 0, 7, 1, 2.0),
        (5, 0, 7, 1, 0.5),
        (5, 0, 3, 8, 1.0),
        (6, 0, 0, 0, 1.0),
        (7, 3, 1, 1, 1.0),
        (7, 1, 1, 1, 1.0),
    ]
    ts, keys = _keys(rows)
    perm = same_time_order(ts, keys)
    assert perm is not None
    assert perm.tolist() == [0, 4, 3, 2, 1, 5, 7, 6]
    ordered = [key[perm] for key in keys]
    assert same_time_order(ts, ordered) is None  # in order: left alone


def test_rows_in_order_or_without_ties_are_left_alone_and_equal_rows_keep_their_order():
    ts, keys = _keys([(1, 0, 0, 0, 1.0), (2, 5, 5, 5, 1.0), (3, 0, 0, 0, 1.0)])
    assert same_time_order(ts, keys) is None
    # two identical rows and one that sorts before them: the identical ones keep their order
    ts, keys = _keys([(4, 1, 2, 3, 1.0), (4, 1, 2, 3, 1.0), (4, 0, 0, 0, 1.0)])
    assert same_time_order(ts, keys).tolist() == [2, 0, 1]


@pytest.mark.parametrize("block", [3, 1 << 18])
def test_any_shuffle_of_the_rows_comes_back_to_one_order(monkeypatch, block):
    monkeypatch.setattr(edge_order, "BLOCK", block)  # the check's blocks, on two threads
    rng = np.random.default_rng(0)
    n = 2_000
    ts = np.sort(rng.integers(0, 300, n))
    keys = [rng.integers(0, 3, n).astype(np.int16), rng.integers(0, 5, n), rng.integers(0, 5, n)]
    keys.append(rng.choice([0.5, 1.0], n))
    canon = same_time_order(ts, keys)
    want = [key[canon] for key in keys]
    for seed in range(3):
        shuffle = np.random.default_rng(seed + 1).permutation(n)
        by_time = shuffle[np.argsort(ts[shuffle], kind="stable")]
        perm = same_time_order(ts[by_time], [key[by_time] for key in keys])
        got = [key[by_time][perm] for key in keys]
        for a, b in zip(want, got, strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_same_rows_in_another_file_order_give_the_same_graph(tiny_world, tmp_path):
    import shutil

    root = tmp_path / "shuffled"
    shutil.copytree(tiny_world, root)
    edges = pl.read_parquet(tiny_world / "edges.parquet")
    shuffled = edges.sample(fraction=1.0, shuffle=True, seed=7)
    assert not shuffled.equals(edges)
    shuffled.write_parquet(root / "edges.parquet")
    a, b = load_dataset(tiny_world), load_dataset(root)
    assert a.edges.equals(b.edges)
    ga, gb = build_graph(a), build_graph(b)
    for name in ("src", "dst", "etype", "ts", "weight"):
        np.testing.assert_array_equal(getattr(ga, name), getattr(gb, name), err_msg=name)
