"""The A/B's peer snapshots (`benchmarks/movielens_peer_features.py`): a peer fitted at a
refresh time T reads nothing from T on, its snapshot serves each user's and movie's own
vector (L2-normalised) and serves nothing before T, so a peer fitted at the test start
never gives validation-window features."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("implicit")

import movielens_peer_features as features  # noqa: E402
from peers.peer_snapshots import peer_snapshot  # noqa: E402

from hir_sdk.ranking.hir_lookup import HirLookup  # noqa: E402
from tests.benchmarks.conftest import scrambled_after  # noqa: E402


@pytest.mark.parametrize("likes_only", [False, True])
@pytest.mark.parametrize("name", ["BPR", "ALS"])
def test_a_peer_fitted_at_t_reads_nothing_from_t_on(graph, name, likes_only):
    t = graph.manifest.time.validation_start
    fit = features.implicit_fit(name, graph, t, seed=0, likes_only=likes_only)
    again = features.implicit_fit(name, scrambled_after(graph, t), t, seed=0, likes_only=likes_only)
    np.testing.assert_array_equal(fit.users, again.users)
    np.testing.assert_array_equal(fit.ads, again.ads)
    np.testing.assert_array_equal(fit.user_vectors, again.user_vectors)
    np.testing.assert_array_equal(fit.ad_vectors, again.ad_vectors)


@pytest.mark.parametrize("likes_only", [False, True])
def test_the_snapshot_serves_each_nodes_own_vector_from_t_on(graph, likes_only):
    times = graph.manifest.time
    fits = [
        features.implicit_fit("BPR", graph, t, seed=0, likes_only=likes_only)
        for t in (times.validation_start, times.test_start)
    ]
    lookup = HirLookup(graph, [peer_snapshot(graph, fit, sizes=(4, 2)) for fit in fits])
    for fit, served_until in zip(fits, (times.test_start, times.end), strict=True):
        users, ads, _ = features.rated_before(graph, fit.trained_until, likes_only=likes_only)
        np.testing.assert_array_equal(fit.users, users)
        np.testing.assert_array_equal(fit.ads, ads)
        for nodes, vectors in ((fit.users, fit.user_vectors), (fit.ads, fit.ad_vectors)):
            unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
            for t in (fit.trained_until, served_until - 1):
                rows = lookup.lookup(nodes, np.full(len(nodes), t))
                assert rows.found.all()
                np.testing.assert_allclose(rows.z, unit, atol=1e-5)
    # before the first refresh time nothing is served; in the validation window, nothing
    # of the peer fitted at the test start
    first = fits[0]
    early = lookup.lookup(first.users, np.full(len(first.users), times.validation_start - 1))
    assert not early.found.any()
    newcomers = np.setdiff1d(fits[1].users, first.users)
    assert len(newcomers)
    late = lookup.lookup(newcomers, np.full(len(newcomers), times.test_start - 1))
    assert not late.found.any()
