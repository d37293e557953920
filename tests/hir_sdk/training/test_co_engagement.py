"""Co-engaged content against a loop over the (user, node) pairs, its cutoff, and the
targets it mixes into."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.knowledge.content_encoder import DIM
from hir_sdk.knowledge.knowledge_base import CONTENT, NONE, KnowledgeBase
from hir_sdk.training.co_engagement import co_engaged_content
from hir_sdk.training.config import ContentConfig
from hir_sdk.training.content_similarity import ContentTargets


def _rows(g, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    kinds = g.node_type_of(np.arange(g.num_nodes))
    has = np.flatnonzero(np.isin(kinds, [g.type_code(t) for t in ("ad", "product")]))
    row_of = np.full(g.num_nodes, -1, dtype=np.int64)
    row_of[has] = np.random.default_rng(seed).permutation(len(has))
    vectors = np.random.default_rng(seed + 1).normal(size=(len(has), 6))
    return row_of, vectors


def _by_loop(g, row_of, vectors, as_of, roles):
    codes = set(g.role_codes(*roles).tolist())
    reached: dict[int, set[int]] = {}
    for e in range(g.num_edges):
        if g.ts[e] < as_of and int(g.etype[e]) in codes and row_of[g.dst[e]] >= 0:
            reached.setdefault(int(g.src[e]), set()).add(int(g.dst[e]))
    out = np.zeros_like(vectors)
    for nodes in reached.values():
        for v in nodes:
            others = [vectors[row_of[w]] for w in nodes if w != v]
            if others:
                out[row_of[v]] += np.sum(others, axis=0) / len(nodes)
    return out, reached


@pytest.mark.parametrize("roles", [("exposure", "click"), ("click",)])
def test_co_engaged_content_matches_a_loop_over_distinct_pairs_before_the_cutoff(tiny_graph, roles):
    g = tiny_graph
    row_of, vectors = _rows(g)
    as_of = int(np.median(g.ts))
    got = co_engaged_content(g, row_of, vectors, as_of=as_of, roles=roles)
    want, reached = _by_loop(g, row_of, vectors, as_of, roles)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
    assert sum(len(n) > 1 for n in reached.values()) > 10  # users who reached several
    assert np.count_nonzero(np.abs(got).sum(axis=1)) > 10
    later = co_engaged_content(g, row_of, vectors, as_of=int(g.ts.max()) + 1, roles=roles)
    assert not np.allclose(later, got)  # later edges change it; before the cutoff they don't


def test_nothing_before_the_cutoff_gives_zeros(tiny_graph):
    g = tiny_graph
    row_of, vectors = _rows(g)
    got = co_engaged_content(g, row_of, vectors, as_of=int(g.ts.min()), roles=("exposure",))
    assert got.shape == vectors.shape and not got.any()


def test_targets_mix_in_the_co_engaged_content(tiny_graph):
    g = tiny_graph
    kinds = g.node_type_of(np.arange(g.num_nodes))
    has = np.flatnonzero(kinds == g.type_code("ad"))
    row_of = np.full(g.num_nodes, -1, dtype=np.int64)
    row_of[has] = np.arange(len(has))
    rng = np.random.default_rng(3)
    knowledge = KnowledgeBase(
        rng.normal(size=(len(has), DIM)).astype(np.float32),
        row_of,
        np.where(row_of >= 0, CONTENT, NONE).astype(np.int8),
    )
    as_of = int(np.median(g.ts))
    plain = ContentTargets.build(g, knowledge, as_of)
    mixed = ContentTargets.build(g, knowledge, as_of, co_engagement=2.0)
    co = co_engaged_content(
        g, plain.row_of, plain.vectors, as_of=as_of, roles=("exposure", "click")
    )
    unit = lambda v: v / np.linalg.norm(v)  # noqa: E731
    reached = np.flatnonzero(np.abs(co).sum(axis=1) > 0)
    assert len(reached) > 10
    for r in reached[:50].tolist():
        want = unit(plain.vectors[r].astype(np.float64) + 2.0 * unit(co[r]))
        np.testing.assert_allclose(mixed.vectors[r], want, atol=1e-5)
    alone = np.setdiff1d(np.arange(len(has)), reached)
    np.testing.assert_allclose(mixed.vectors[alone], plain.vectors[alone], atol=1e-6)


def test_config_refuses_negative_weights_and_unknown_roles():
    with pytest.raises(ValueError, match="co_engagement"):
        ContentConfig(co_engagement=-1.0)
    with pytest.raises(ValueError, match="purchase"):
        ContentConfig(co_engagement_roles=("click", "purchase"))
