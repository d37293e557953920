"""The uniform strategy: PyG's temporal rule, drawn without listing candidates."""

from __future__ import annotations

import itertools

import numpy as np

from hir_sdk.sampling import SamplerConfig, ViewConfig, ViewSampler
from hir_sdk.sampling.uniform import floyd
from tests.hir_sdk.sampling.conftest import valid_anchors


def test_floyd_draws_every_subset_equally_often():
    degree, k, trials = 6, 3, 40_000
    u = np.random.default_rng(0).random((trials, k))
    chosen, drawn = floyd(np.full(trials, degree), u)
    assert drawn.all()
    subsets = [tuple(sorted(row)) for row in chosen.tolist()]
    assert all(len(set(s)) == k and max(s) < degree for s in subsets)
    counts = np.array([subsets.count(s) for s in itertools.combinations(range(degree), k)])
    expected = trials / len(counts)  # 20 subsets, 2,000 each
    assert np.abs(counts - expected).max() < 5 * np.sqrt(expected)


def test_floyd_takes_every_edge_of_a_small_node():
    chosen, drawn = floyd(np.array([0, 2, 5]), np.full((3, 5), 0.5))
    assert drawn.sum(axis=1).tolist() == [0, 2, 5]
    assert chosen[1, :2].tolist() == [0, 1] and chosen[2].tolist() == [0, 1, 2, 3, 4]


def test_a_wide_enough_fanout_keeps_every_visible_edge(tiny_graph):
    graph = tiny_graph
    anchors, cutoffs = valid_anchors(graph, 12, seed=7)
    view = ViewConfig(strategy="uniform", fanout=(10**4,), max_candidates=10**9, max_nodes=10**4)
    sub = ViewSampler(graph).sample(anchors, cutoffs, view)
    for b, (anchor, cutoff) in enumerate(zip(anchors, cutoffs, strict=True)):
        visible = graph.at(int(cutoff)).neighbors(int(anchor), direction="both")
        assert set(sub.nodes_of(b)[1:].tolist()) == set(visible.node.tolist()) - {anchor}
        edges = sub.edges_of(b)[2]
        assert (graph.ts[edges] < cutoff).all()


def test_each_visible_edge_is_drawn_k_in_d_times(tiny_graph):
    graph = tiny_graph
    user = int(graph.index("user", [0])[0])
    cutoff = int(graph.manifest.time.end)
    visible = graph.at(cutoff).neighbors(user, direction="out")
    k, trials = 2, 1500
    assert len(visible.edge) > 2 * k
    view = ViewConfig(
        strategy="uniform", fanout=(k,), direction="out", max_candidates=10**6, max_nodes=64
    )
    counts = dict.fromkeys(visible.edge.tolist(), 0)
    for seed in range(trials):
        sub = ViewSampler(graph, SamplerConfig(seed=seed)).sample(
            np.array([user]), np.array([cutoff]), view
        )
        for e in sub.edge_id.tolist():
            counts[e] += 1
    share = np.array(list(counts.values())) / trials
    p = k / len(visible.edge)
    assert np.abs(share - p).max() < 5 * np.sqrt(p / trials)


def test_filtering_every_edge_type_draws_the_same_view(tiny_graph):
    """The listed (filtered) path walks the visible edges in the order of the direct one."""
    graph = tiny_graph
    anchors, cutoffs = valid_anchors(graph, 32, seed=8)
    every = tuple(sorted({rel for _, rel, _ in graph.edge_types}))
    plain = ViewConfig(strategy="uniform", fanout=(5, 3), max_nodes=40)
    filtered = ViewConfig(strategy="uniform", fanout=(5, 3), max_nodes=40, edge_types=every)
    sampler = ViewSampler(graph)
    a, b = sampler.sample(anchors, cutoffs, plain), sampler.sample(anchors, cutoffs, filtered)
    assert a.nodes.tolist() == b.nodes.tolist() and a.edge_id.tolist() == b.edge_id.tolist()


def test_a_uniform_view_does_not_depend_on_its_batch(tiny_graph):
    anchors, cutoffs = valid_anchors(tiny_graph, 16, seed=9)
    sampler = ViewSampler(tiny_graph)
    view = ViewConfig(strategy="uniform", fanout=(6, 4), max_nodes=48)
    together = sampler.sample(anchors, cutoffs, view)
    for b in (0, 9, 15):
        alone = sampler.sample(anchors[b : b + 1], cutoffs[b : b + 1], view)
        assert alone.nodes.tolist() == together.nodes_of(b).tolist()
