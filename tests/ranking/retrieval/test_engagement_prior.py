"""The engagement prior: log of the time-decayed engagement into each node before a
cutoff, and the augmented vectors whose inner products are the blended scores."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior, with_prior


def test_the_prior_is_the_log_of_the_decayed_weight_into_each_node(tiny_graph):
    g = tiny_graph
    cutoff = g.manifest.time.validation_start
    nodes = np.unique(g.dst[: g.edges_before(cutoff)])[:50]
    want = []
    for node in nodes:
        total = 0.0
        for e in np.flatnonzero((g.dst == node) & (g.ts < cutoff)):
            half = g.manifest.edge_types[g.etype[e]].half_life_days * 86400
            total += g.weight[e] * 2 ** (-(cutoff - g.ts[e]) / half)
        want.append(np.log1p(total))
    np.testing.assert_allclose(engagement_prior(g, nodes, cutoff), want, rtol=1e-5)
    assert (engagement_prior(g, nodes, cutoff) > 0).all()


def test_the_half_life_scale_stretches_every_half_life(tiny_graph):
    g = tiny_graph
    cutoff = g.manifest.time.validation_start
    nodes = np.unique(g.dst[: g.edges_before(cutoff)])[:50]
    want_scaled, want_counts = [], []
    for node in nodes:
        edges = np.flatnonzero((g.dst == node) & (g.ts < cutoff))
        half = np.array([g.manifest.edge_types[t].half_life_days * 86400 for t in g.etype[edges]])
        age = cutoff - g.ts[edges]
        want_scaled.append(np.log1p((g.weight[edges] * 2 ** (-age / (4 * half))).sum()))
        want_counts.append(np.log1p(g.weight[edges].sum()))
    np.testing.assert_allclose(engagement_prior(g, nodes, cutoff, 4.0), want_scaled, rtol=1e-5)
    np.testing.assert_allclose(engagement_prior(g, nodes, cutoff, np.inf), want_counts, rtol=1e-5)
    # a longer half-life decays less: every prior grows with the scale
    short, base = engagement_prior(g, nodes, cutoff, 0.25), engagement_prior(g, nodes, cutoff)
    assert (short <= base).all() and (base <= engagement_prior(g, nodes, cutoff, 4.0)).all()
    for bad in (0.0, -1.0, np.nan):
        with pytest.raises(InputError, match="half_life_scale must be > 0"):
            engagement_prior(g, nodes, cutoff, bad)


def test_the_prior_reads_nothing_at_or_after_the_cutoff(tiny_graph):
    g = tiny_graph
    cutoff = g.manifest.time.validation_start
    later = np.unique(g.dst[g.edges_before(cutoff) :])
    fresh = later[~np.isin(later, g.dst[: g.edges_before(cutoff)])]  # engaged only later
    assert fresh.size > 0
    np.testing.assert_array_equal(engagement_prior(g, fresh, cutoff), 0.0)
    # a later cutoff sees those edges
    assert (engagement_prior(g, fresh, int(g.ts.max()) + 1) > 0).all()
    with pytest.raises(InputError, match="graph node ids"):
        engagement_prior(g, np.array([g.num_nodes]), cutoff)


def test_augmented_inner_products_are_the_blended_scores():
    rng = np.random.default_rng(0)
    q, z = rng.normal(size=(5, 8)), rng.normal(size=(30, 8))
    prior = rng.random(30).astype(np.float32)
    qa, za = with_prior(q, z, prior, 0.75)
    assert qa.shape == (5, 9) and za.shape == (30, 9)
    np.testing.assert_allclose(qa @ za.T, q @ z.T + 0.75 * prior[None, :], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(with_prior(q, z, prior, 0.0)[0] @ za.T, q @ z.T, atol=1e-5)
    # one weight per query
    weights = np.array([0.0, 0.5, 1.0, 2.0, 4.0])
    qw, _ = with_prior(q, z, prior, weights)
    want = q @ z.T + weights[:, None] * prior[None, :]
    np.testing.assert_allclose(qw @ za.T, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("prior", "weight", "message"),
    [
        (np.ones(29), 1.0, "prior must be"),
        (np.full(30, np.nan), 1.0, "prior must be"),
        (np.ones(30), -1.0, "weight must be"),
        (np.ones(30), float("inf"), "weight must be"),
        (np.ones(30), np.ones(3), "one per query"),
        (np.ones(30), np.array([1.0, -1.0]), "weight must be"),
    ],
)
def test_bad_priors_and_weights_are_refused(prior, weight, message):
    with pytest.raises(InputError, match=message):
        with_prior(np.ones((2, 4)), np.ones((30, 4)), prior, weight)
