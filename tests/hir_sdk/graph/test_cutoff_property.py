"""Property: a view at a cutoff never shows anything dated at or after the cutoff, and
shows everything dated before it."""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hir_sdk.graph import build_graph_from_dir
from tests.conftest import DAY, T0, mini_manifest
from tests.hir_sdk.graph.reference import ReferenceGraph

SPAN = 10 * DAY


@st.composite
def datasets(draw):
    n_users = draw(st.integers(1, 6))
    n_ads = draw(st.integers(1, 6))
    n_edges = draw(st.integers(1, 40))
    rel = draw(
        st.lists(st.sampled_from(["impression", "click"]), min_size=n_edges, max_size=n_edges)
    )
    src = draw(st.lists(st.integers(0, n_users - 1), min_size=n_edges, max_size=n_edges))
    dst = draw(st.lists(st.integers(0, n_ads - 1), min_size=n_edges, max_size=n_edges))
    # few distinct times, so ties are common
    ts = draw(
        st.lists(
            st.integers(0, 12).map(lambda k: T0 + k * (SPAN // 13)),
            min_size=n_edges,
            max_size=n_edges,
        )
    )
    nodes = pl.DataFrame(
        {
            "node_type": ["user"] * n_users + ["ad"] * n_ads + ["advertiser"],
            "node_id": [*range(n_users), *range(n_ads), 0],
        }
    )
    edges = pl.DataFrame(
        {
            "src_type": ["user"] * n_edges,
            "src_id": src,
            "dst_type": ["ad"] * n_edges,
            "dst_id": dst,
            "edge_type": rel,
            "ts": ts,
        }
    )
    cutoffs = draw(st.lists(st.integers(T0 - 1, T0 + SPAN), min_size=1, max_size=4))
    return nodes, edges, cutoffs


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(datasets())
def test_cutoff_view_hides_exactly_the_future(data):
    nodes, edges, cutoffs = data
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "manifest.toml").write_text(mini_manifest().to_toml())
        nodes.write_parquet(root / "nodes.parquet")
        edges.write_parquet(root / "edges.parquet")
        graph = build_graph_from_dir(root)
        ref = ReferenceGraph(root)
    for cutoff in cutoffs:
        view = graph.at(cutoff)
        assert (view.ts < cutoff).all()
        assert view.num_edges == sum(1 for e in ref.edges if e[0] < cutoff)
        for node in range(graph.num_nodes):
            for direction in ("out", "in", "both"):
                got = view.neighbors(node, direction=direction)
                assert (got.ts < cutoff).all()
                want = ref.neighbors(node, cutoff, None, direction)
                assert got.edge.tolist() == [w[0] for w in want]
                later = view.neighbors(node, before=cutoff + DAY, direction=direction)
                assert later.edge.tolist() == got.edge.tolist()  # the view's cutoff wins
        if view.num_edges:
            decayed = view.decay_weights(np.arange(view.num_edges))
            assert (decayed <= view.weight + 1e-9).all() and (decayed > 0).all()
