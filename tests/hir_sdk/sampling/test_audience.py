"""Audience vectors: the SVD's own rows at the basis time, later edges and entities folded
into the same basis, nothing read after a token's cutoff, and a basis that survives a
save and a reindexed graph."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.sampling.audience import (
    AudienceBasis,
    AudienceTerms,
    engagement_factors,
    engagement_pairs,
    fit_audience_basis,
)
from hir_sdk.sampling.node_features import NodeFeaturizer, stable_node_hashes

ROLES = ("exposure", "click")


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _dense(rows) -> np.ndarray:
    """(N, r) rows of every node as read at the end of time (zeros where none)."""
    nodes = np.arange(len(rows.row_of))
    return rows.gather(nodes, np.full(len(nodes), np.iinfo(np.int64).max))[0]


@pytest.fixture(scope="module")
def basis_time(tiny_graph) -> int:
    t = tiny_graph.manifest.time
    return t.start + (t.validation_start - t.start) // 2


def test_rows_at_the_basis_time_are_the_svds_own(tiny_graph, basis_time):
    g = tiny_graph
    basis = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    f = engagement_factors(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    rows = basis.rows(g, basis_time)
    dense = _dense(rows)
    # A V = U S: the destinations' rows are the SVD's, scaled by S; A^T U = V S holds
    # only as nearly as the randomized SVD's U spans A's leading left subspace
    np.testing.assert_allclose(dense[f.destinations], _unit(f.u * f.s), atol=1e-5)
    cosines = (dense[f.sources] * _unit(f.v * f.s)).sum(axis=1)
    assert cosines.min() > 0.95
    has = np.zeros(g.num_nodes, dtype=bool)
    has[np.concatenate([f.destinations, f.sources])] = True
    np.testing.assert_array_equal(rows.has, has)
    assert rows.visible_from == basis_time


def test_later_rows_fold_new_edges_and_entities_into_the_basis(tiny_graph, basis_time):
    g = tiny_graph
    later = g.manifest.time.test_start
    basis = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    rows = basis.rows(g, later)
    assert rows.visible_from == later
    f = engagement_factors(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    dst, src = engagement_pairs(g, as_of=later, roles=ROLES)
    u_of = {int(n): f.u[i] for i, n in enumerate(f.destinations)}
    v_of = {int(n): f.v[i] for i, n in enumerate(f.sources)}
    expected = np.zeros((g.num_nodes, 4))
    for d, s in zip(dst.tolist(), src.tolist(), strict=True):
        expected[d] += v_of.get(s, 0.0)
        expected[s] += u_of.get(d, 0.0)
    norms = np.linalg.norm(expected, axis=1)
    np.testing.assert_array_equal(rows.has, norms > 0)
    np.testing.assert_allclose(
        _dense(rows)[rows.has], expected[rows.has] / norms[rows.has, None], atol=1e-5
    )
    # entities first reached after the basis time get rows through basis neighbours
    new = np.setdiff1d(np.unique(dst), f.destinations)
    assert rows.has[new].any()


def test_rows_are_hidden_before_their_time(tiny_graph, basis_time):
    g = tiny_graph
    basis = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    rows = basis.rows(g, basis_time)
    nodes = np.flatnonzero(rows.has)[:5]
    early = np.full(len(nodes), basis_time - 1)
    vectors, has = rows.gather(nodes, early)
    assert not has.any() and not vectors.any()
    vectors, has = rows.gather(nodes, early + 1)
    assert has.all()
    np.testing.assert_array_equal(vectors, _dense(rows)[nodes])
    # rows asked for before the basis time still wait for it: the basis reads up to there
    assert basis.rows(g, basis_time - 100).visible_from == basis_time


def test_the_featurizer_appends_rows_to_the_content(tiny_graph, basis_time):
    g = tiny_graph
    rows = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0).rows(g, basis_time)
    featurizer = NodeFeaturizer(g, audience=rows)
    assert featurizer.content_dim == 4
    nodes = np.arange(g.num_nodes)
    f = featurizer.features(nodes, np.full(g.num_nodes, basis_time))
    np.testing.assert_array_equal(f.content, _dense(rows))
    np.testing.assert_array_equal(f.has_content, rows.has)
    before = featurizer.features(nodes, np.full(g.num_nodes, basis_time - 1))
    assert not before.has_content.any() and not before.content.any()


def test_a_saved_basis_reads_the_same_rows_and_follows_node_identity(
    tiny_graph, basis_time, tmp_path
):
    g = tiny_graph
    basis = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    basis.save(tmp_path / "audience.npz")
    loaded = AudienceBasis.load(tmp_path / "audience.npz")
    assert (loaded.as_of, loaded.roles) == (basis.as_of, basis.roles)
    np.testing.assert_array_equal(
        _dense(loaded.rows(g, basis_time)), _dense(basis.rows(g, basis_time))
    )
    # the basis is keyed by node hashes, never by this graph's indices
    hashes = stable_node_hashes(g)
    f = engagement_factors(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    at = np.searchsorted(loaded.destination_keys, hashes[f.destinations])
    np.testing.assert_allclose(loaded.destination_vectors[at], f.u, atol=1e-6)


def test_too_few_pairs_give_no_basis(tiny_graph):
    assert (
        fit_audience_basis(
            tiny_graph, as_of=tiny_graph.manifest.time.start, roles=ROLES, dim=4, seed=0
        )
        is None
    )


def test_terms_give_the_rows_of_any_time_bit_for_bit(tiny_graph, basis_time):
    """One `AudienceTerms` (the pairs found once, masked by time) gives at every time the
    rows `AudienceBasis.rows` builds afresh for that time: before, at and after the basis
    time, and with no pair yet."""
    g = tiny_graph
    basis = fit_audience_basis(g, as_of=basis_time, roles=ROLES, dim=4, seed=0)
    terms = AudienceTerms.of(basis, g, stable_node_hashes(g))
    t = g.manifest.time
    for as_of in (t.start, basis_time - 86_400, basis_time, t.validation_start, t.end):
        want, got = basis.rows(g, as_of), terms.rows(as_of)
        np.testing.assert_array_equal(got.vectors, want.vectors)
        np.testing.assert_array_equal(got.row_of, want.row_of)
        assert got.visible_from == want.visible_from
    assert not terms.rows(t.start).has.any() and terms.rows(t.end).has.sum() > 0
