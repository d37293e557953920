"""Numeric node attributes on the scale of the nodes known at a time."""

import dataclasses

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import UNKNOWN_TIME
from hir_sdk.sampling.node_attributes import AttributeScale, fit_attribute_scale
from tests.hand_graph import IMPRESSION, funnel_manifest, hand_graph


def _nodes(created_ts=None, extra=0, first_seen=None, **columns):
    """Users, one per value (and `extra` more without values), then one ad, with the
    numeric node columns `columns` (None = no value) and creation times `created_ts`
    (None = not given). User i sees the ad at `first_seen[i]` (default: time -1, before
    any `as_of` here)."""
    n = len(next(iter(columns.values()), [])) + extra
    created = [UNKNOWN_TIME if c is None else c for c in (created_ts or [None] * n)]
    created += [UNKNOWN_TIME] * (n - len(created) + 1)
    seen = first_seen or [-1] * n
    edges = [(i, n, IMPRESSION, t) for i, t in enumerate(seen)]
    graph = hand_graph(funnel_manifest(), [n, 1, 0], edges, created_ts=created)
    table = np.full((n + 1, len(columns)), np.nan)
    for i, values in enumerate(columns.values()):
        table[: len(values), i] = [np.nan if v is None else v for v in values]
    return dataclasses.replace(
        graph, attribute_names=tuple(columns), attributes=table if columns else None
    )


def test_levels_are_mid_ranks_and_nulls_read_as_no_value():
    columns = dict(female=[0, 0, 0, 0, 0, 0, 0, 1, 1, 1], price=[None] * 5 + [1, 2, 3, 4, 1e6])
    nodes = _nodes(**columns)
    scale = fit_attribute_scale(nodes, as_of=10)
    assert scale.columns == ("female", "price") and scale.dim == 4
    rows = scale.rows(_nodes(extra=2, **columns))  # two users more and the ad: no values
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
    rows = scale.rows(later)
    np.testing.assert_allclose(rows[:3, 0], [0.25 - 0.5, 0.125 - 0.5, 0.875 - 0.5], atol=1e-6)
    np.testing.assert_array_equal(rows[:, 1], [1, 1, 1, 0, 0])


def test_nodes_created_at_or_after_as_of_do_not_shape_the_scale():
    """No leak: a value that arrives later moves nobody's level; the node itself is still
    read through the scale of the earlier nodes."""
    early = dict(created_ts=[None, 5, 6, 7, 9], bid=[1.0, 2.0, 3.0, 4.0, 100.0])
    late = dict(created_ts=[None, 5, 6, 7, 20], bid=[1.0, 2.0, 3.0, 4.0, 100.0])
    cut = fit_attribute_scale(_nodes(**early), as_of=8)
    assert cut.lengths[0] == 4  # the node created at 9 is not among the knots
    rows = cut.rows(_nodes(**late))
    same = fit_attribute_scale(_nodes(**late), as_of=8).rows(_nodes(**late))
    np.testing.assert_array_equal(rows, same)
    assert rows[4, 0] == pytest.approx(0.875 - 0.5)  # clipped to the largest known


def test_nodes_without_a_creation_time_count_from_their_first_edge():
    """A log that gives users no creation time: a user first seen at or after `as_of`
    does not shape the scale, as if created then."""
    ages = dict(age=[20.0, 30.0, 40.0, 90.0], first_seen=[1, 2, 3, 8])
    cut = fit_attribute_scale(_nodes(**ages), as_of=8)
    assert cut.knots[0, : cut.lengths[0]].tolist() == [20.0, 30.0, 40.0]
    assert fit_attribute_scale(_nodes(**ages), as_of=9).lengths[0] == 4


def test_a_column_with_no_known_value_and_a_table_without_columns():
    nodes = _nodes(created_ts=[50, 60], score=[1.0, 2.0])
    scale = fit_attribute_scale(nodes, as_of=10)
    np.testing.assert_array_equal(scale.rows(nodes), [[0.0, 1.0], [0.0, 1.0], [0.0, 0.0]])
    assert fit_attribute_scale(_nodes(extra=3), as_of=10) is None


def test_a_graph_without_a_column_the_scale_reads_is_refused():
    scale = fit_attribute_scale(_nodes(score=[1.0, 2.0], other=[3.0, 4.0]), as_of=10)
    with pytest.raises(InputError, match=r"lacks the numeric columns \['score'\]"):
        scale.rows(_nodes(other=[1.0, 2.0], extra_column=[5.0, 6.0]))
    assert scale.rows(_nodes(other=[1.0, 2.0], score=[2.0, 1.0])).shape == (3, 4)


def test_save_and_load_round_trip(tmp_path):
    nodes = _nodes(age=np.arange(500.0), bid=np.r_[np.full(250, None), np.arange(250.0)])
    scale = fit_attribute_scale(nodes, as_of=1)
    assert scale.lengths.tolist() == [129, 129]
    scale.save(tmp_path / "a.npz")
    loaded = AttributeScale.load(tmp_path / "a.npz")
    assert loaded.columns == scale.columns and loaded.as_of == scale.as_of
    np.testing.assert_array_equal(loaded.rows(nodes), scale.rows(nodes))
