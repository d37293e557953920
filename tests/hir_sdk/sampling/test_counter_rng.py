"""Counter-based uniforms: a hash continued from shared keys equals the hash of all keys."""

from __future__ import annotations

import numpy as np

from hir_sdk.sampling.counter_rng import extend_hash, hash_keys, to_uniform, uniform


def test_extending_a_shared_prefix_hashes_every_key():
    rng = np.random.default_rng(0)
    anchors, cutoffs = rng.integers(0, 10**6, 50), rng.integers(0, 2**40, 50)
    edges = rng.integers(0, 10**9, (50, 7))
    prefix = hash_keys(3, anchors, cutoffs)
    whole = hash_keys(3, anchors[:, None], cutoffs[:, None], edges)
    assert np.array_equal(extend_hash(prefix[:, None], edges), whole)
    u = to_uniform(whole)
    assert np.array_equal(u, uniform(3, anchors[:, None], cutoffs[:, None], edges))
    assert ((u > 0) & (u < 1)).all() and len(np.unique(u)) == u.size
    assert not np.array_equal(hash_keys(4, anchors, cutoffs), prefix)  # the seed counts
