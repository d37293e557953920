"""Structural encodings equal readable references: BFS distances, dense matrix powers."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest

from hir_sdk.sampling import SamplerConfig, ViewConfig, ViewSampler
from hir_sdk.sampling.encodings import EncodingConfig, age_buckets, encode
from tests.hir_sdk.sampling.conftest import valid_anchors


def _bfs(n: int, src: np.ndarray, dst: np.ndarray, start: int) -> list[float]:
    neighbours: list[set[int]] = [set() for _ in range(n)]
    for a, b in zip(src.tolist(), dst.tolist(), strict=True):
        if a != b:
            neighbours[a].add(b)
            neighbours[b].add(a)
    dist = [float("inf")] * n
    dist[start] = 0
    queue = deque([start])
    while queue:
        v = queue.popleft()
        for w in neighbours[v]:
            if dist[w] == float("inf"):
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


@pytest.fixture(scope="module", params=["importance", "rwr"])
def sampled(tiny_graph, request):
    view = ViewConfig(strategy=request.param, fanout=(6, 4), walks=6, max_nodes=40)
    anchors, cutoffs = valid_anchors(tiny_graph, 20, seed=11)
    sub = ViewSampler(tiny_graph, SamplerConfig(teacher=view)).sample(anchors, cutoffs, view)
    return sub, encode(tiny_graph, sub, EncodingConfig(rw_steps=5, max_distance=3))


def test_shortest_paths_equal_bfs(sampled):
    sub, enc = sampled
    far = 4
    for b in range(sub.batch_size):
        n = int(sub.sizes()[b])
        src, dst, _ = sub.edges_of(b)
        spd = enc.spd_of(b, n)
        for start in range(n):
            want = [d if d <= 3 else far for d in _bfs(n, src, dst, start)]
            assert spd[start].tolist() == want
        assert enc.hop[sub.offsets[b] : sub.offsets[b + 1]].tolist() == spd[0].tolist()


def test_random_walk_encodings_equal_matrix_powers(sampled):
    sub, enc = sampled
    for b in range(sub.batch_size):
        n = int(sub.sizes()[b])
        src, dst, _ = sub.edges_of(b)
        adj = np.zeros((n, n))
        adj[src, dst] = adj[dst, src] = 1.0
        np.fill_diagonal(adj, 0.0)
        deg = adj.sum(axis=1, keepdims=True)
        walk = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
        want = np.stack([np.diag(np.linalg.matrix_power(walk, k)) for k in range(1, 6)], axis=1)
        got = enc.rw[sub.offsets[b] : sub.offsets[b + 1]]
        np.testing.assert_allclose(got, want, atol=1e-5)


def test_node_types_and_age_buckets(tiny_graph, sampled):
    sub, enc = sampled
    assert (enc.node_type == tiny_graph.node_type_of(sub.nodes)).all()
    assert age_buckets(np.array([0, 3599, 3600, 3 * 3600, 10**9])).tolist() == [0, 0, 1, 2, 15]
    assert len(enc.edge_age_bucket) == len(sub.edge_id)
