"""Numeric node attributes on the scale of the nodes known at a time."""

import numpy as np
import polars as pl
import pytest

from hir_sdk.sampling.node_attributes import AttributeScale, fit_attribute_scale


def _nodes(**columns) -> pl.DataFrame:
    """A validated-style nodes table: `index`, ..., `created_ts`, then `columns`."""
    n = len(next(iter(columns.values())))
    created = columns.pop("created_ts", [None] * n)
    return pl.DataFrame(
        {
            "index": np.arange(n, dtype=np.int64),
            "type_code": np.zeros(n, dtype=np.int64),
            "node_type": ["ad"] * n,
            "node_id": np.arange(n, dtype=np.int64),
            "created_ts": pl.Series(created, dtype=pl.Int64),
            **{k: pl.Series(v, dtype=pl.Float64) for k, v in columns.items()},
        }
    )


def test_levels_are_mid_ranks_and_nulls_read_as_no_value():
    nodes = _nodes(female=[0, 0, 0, 0, 0, 0, 0, 1, 1, 1], price=[None] * 5 + [1, 2, 3, 4, 1e6])
    scale = fit_attribute_scale(nodes, as_of=10)
    assert scale.columns == ("female", "price") and scale.dim == 4
    rows = scale.rows(nodes, num_nodes=12)  # two nodes not in the table: no values
    # a 70/30 binary column: the mid-ranks 0.35 and 0.85, minus one half
    np.testing.assert_allclose(rows[:10, 0], [-0.15] * 7 + [0.35] * 3, atol=1e-6)
    np.testing.assert_array_equal(rows[:10, 1], 1.0)
    # the heavy tail is one rank above the rest, not a million times larger
    np.testing.assert_allclose(rows[5:10, 2], np.array([0.1, 0.3, 0.5, 0.7, 0.9]) - 0.5, atol=1e-6)
    np.testing.assert_array_equal(rows[:5, 2:], 0.0)  # no price: level 0, flag 0
    np.testing.assert_array_equal(rows[5:10, 3], 1.0)
    np.testing.assert_array_equal(rows[10:], 0.0)


def test_between_knots_levels_interpolate_and_beyond_them_clip():
    nodes = _nodes(age=[10.0, 20.0, 30.0, 40.0])
    scale = fit_attribute_scale(nodes, as_of=1)
    later = _nodes(age=[15.0, 5.0, 99.0, None])
    rows = scale.rows(later, num_nodes=4)
    np.testing.assert_allclose(rows[:3, 0], [0.25 - 0.5, 0.125 - 0.5, 0.875 - 0.5], atol=1e-6)
    np.testing.assert_array_equal(rows[:, 1], [1, 1, 1, 0])


def test_nodes_created_at_or_after_as_of_do_not_shape_the_scale():
    """No leak: a value that arrives later moves nobody's level; the node itself is still
    read through the scale of the earlier nodes."""
    early = dict(created_ts=[None, 5, 6, 7, 9], bid=[1.0, 2.0, 3.0, 4.0, 100.0])
    late = dict(created_ts=[None, 5, 6, 7, 20], bid=[1.0, 2.0, 3.0, 4.0, 100.0])
    cut = fit_attribute_scale(_nodes(**early), as_of=8)
    assert cut.lengths[0] == 4  # the node created at 9 is not among the knots
    rows = cut.rows(_nodes(**late), num_nodes=5)
    same = fit_attribute_scale(_nodes(**late), as_of=8).rows(_nodes(**late), num_nodes=5)
    np.testing.assert_array_equal(rows, same)
    assert rows[4, 0] == pytest.approx(0.875 - 0.5)  # clipped to the largest known


def test_a_column_with_no_known_value_and_a_table_without_columns():
    nodes = _nodes(created_ts=[50, 60], score=[1.0, 2.0])
    scale = fit_attribute_scale(nodes, as_of=10)
    np.testing.assert_array_equal(scale.rows(nodes, num_nodes=2), [[0.0, 1.0], [0.0, 1.0]])
    assert fit_attribute_scale(_nodes(score=[1.0]).drop("score"), as_of=10) is None
    missing = scale.rows(_nodes(other=[1.0, 2.0]), num_nodes=2)  # the column is gone
    np.testing.assert_array_equal(missing, 0.0)


def test_save_and_load_round_trip(tmp_path):
    nodes = _nodes(age=np.arange(500.0), bid=np.r_[np.full(250, np.nan), np.arange(250.0)])
    scale = fit_attribute_scale(nodes, as_of=1)
    assert scale.lengths.tolist() == [129, 129]
    scale.save(tmp_path / "a.npz")
    loaded = AttributeScale.load(tmp_path / "a.npz")
    assert loaded.columns == scale.columns and loaded.as_of == scale.as_of
    np.testing.assert_array_equal(loaded.rows(nodes, 500), scale.rows(nodes, 500))
