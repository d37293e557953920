"""Hop-by-hop views assembled from entries (each node listed once, edges naming their ends
by entry, attributes read from the CSR rows) against the generic assembly, which looks
every end up by node code and every attribute up by edge id."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.sampling import ViewConfig, ViewSampler
from hir_sdk.sampling.frontier import _ranks
from hir_sdk.sampling.stable_sort import float_keys, stable_sort
from hir_sdk.sampling.subgraphs import _by_slot_then_rank, assemble, latest_per_pair
from tests.hir_sdk.sampling.conftest import valid_anchors


@pytest.mark.parametrize("strategy", ["importance", "uniform"])
@pytest.mark.parametrize("direction", ["out", "in", "both"])
@pytest.mark.parametrize("filtered", [False, True])
@pytest.mark.parametrize("max_nodes", [12, 10**4])
def test_a_hop_view_is_what_the_generic_assembly_makes_of_it(
    tiny_graph, strategy, direction, filtered, max_nodes
):
    graph = tiny_graph
    anchors, cutoffs = valid_anchors(graph, 80, seed=3)
    rels = sorted({spec.rel for spec in graph.manifest.edge_types})
    view = ViewConfig(
        strategy=strategy,
        fanout=(6, 4, 2),
        direction=direction,
        edge_types=tuple(rels[::2]) if filtered else None,
        max_candidates=16,
        max_nodes=max_nodes,
    )
    sub = ViewSampler(graph, threads=1).sample(anchors, cutoffs, view)
    assert len(sub.edge_id) >= 40  # views with edges, not just anchors
    slot = np.repeat(np.arange(len(anchors)), sub.sizes())
    edge_slot = np.repeat(np.arange(len(anchors)), np.diff(sub.edge_offsets))
    again = assemble(
        graph,
        anchors,
        cutoffs,
        slot,
        sub.nodes,
        np.arange(len(slot), dtype=np.float64),  # the view's node order
        edge_slot,
        sub.edge_id,
        max_nodes,
    )
    for name in sub.__dataclass_fields__:
        mine, theirs = getattr(sub, name), getattr(again, name)
        assert mine.dtype == theirs.dtype, name
        assert np.array_equal(mine, theirs), name
    # ends oriented as the edge is: src and dst are the edge's own endpoints
    starts = sub.offsets[edge_slot]
    assert np.array_equal(sub.nodes[starts + sub.edge_src], graph.src[sub.edge_id])
    assert np.array_equal(sub.nodes[starts + sub.edge_dst], graph.dst[sub.edge_id])


def test_latest_per_pair_keeps_each_pairs_latest_edge_once():
    # (slot, src, dst, edge): pair (0, 1, 2) has edges 5, 9, 9 (drawn twice) and 3
    slot = np.array([0, 0, 1, 0, 0, 1, 0])
    src = np.array([1, 2, 1, 1, 1, 1, 1])
    dst = np.array([2, 1, 2, 2, 2, 2, 2])
    edge = np.array([5, 7, 4, 9, 9, 6, 3])
    keep = latest_per_pair(slot, src, dst, edge, width=3)
    assert edge[keep].tolist() == [9, 7, 6]  # in (slot, src, dst) order
    assert keep.tolist()[0] == 3  # the first of the two draws of edge 9
    assert latest_per_pair(slot[:0], src[:0], dst[:0], edge[:0], 3).tolist() == []


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.floats(allow_nan=False),
            st.sampled_from([0.0, -0.0, 1.0, -1.0, float("inf"), float("-inf"), 5e-324]),
        ),
        max_size=60,
    )
)
def test_float_keys_sort_as_the_floats_do(values):
    x = np.array(values, dtype=np.float64)
    keys = float_keys(x)
    assert np.array_equal(np.argsort(keys, kind="stable"), np.argsort(x, kind="stable"))
    assert np.array_equal(stable_sort(keys)[1], np.argsort(x, kind="stable"))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 7)), max_size=80))
def test_the_slot_then_rank_order_is_lexsorts_for_integer_and_float_ranks(pairs):
    slot = np.array([p[0] for p in pairs], dtype=np.int64)
    rank = np.array([p[1] for p in pairs], dtype=np.int64)
    expected = np.lexsort((rank, slot))  # stable: ties keep their positions
    assert np.array_equal(_by_slot_then_rank(slot, rank, 6), expected)
    assert np.array_equal(_by_slot_then_rank(slot, rank / 3.0 - 1.0, 6), expected)


def test_integer_draw_steps_rank_entries_as_their_float_ranks_do():
    rng = np.random.default_rng(0)
    steps = [rng.integers(0, fanout, size) for fanout, size in ((6, 300), (4, 900), (2, 500))]
    as_int = _ranks(steps, 50, 6)
    as_float = _ranks([s.astype(np.float64) for s in steps], 50, 6)
    assert as_int.dtype == np.int64 and as_float.dtype == np.float64
    assert np.array_equal(np.argsort(as_int, kind="stable"), np.argsort(as_float, kind="stable"))


def test_a_split_batch_leaves_the_callers_torch_threads(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 300, seed=5)
    before = torch.get_num_threads()
    ViewSampler(tiny_graph, threads=2).sample(anchors, cutoffs, ViewConfig(fanout=(4, 2)))
    assert torch.get_num_threads() == before


@pytest.mark.parametrize("high", [50, 2**31 - 1, 2**40])
def test_stable_sort_orders_ties_by_position_in_both_widths(high):
    rng = np.random.default_rng(high % 97)
    keys = rng.integers(-high if high < 2**31 else 0, high, 5_000)
    keys[::50] = high - 1  # the widest value the narrow path still takes, or a wide one
    values, order = stable_sort(keys)
    assert values.dtype == np.int64
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
    assert np.array_equal(values, keys[order])
    empty_values, empty_order = stable_sort(keys[:0])
    assert len(empty_values) == len(empty_order) == 0
