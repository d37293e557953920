"""HIR features as TorchRec inputs: layout against the lookup, consumed by an EBC."""

from __future__ import annotations

import numpy as np
import torch
from torchrec import EmbeddingBagCollection

from hir_sdk.ranking.hir_kjt import embedding_bag_configs, hir_tensors, sparse_keys
from hir_sdk.ranking.hir_lookup import HirLookup


def test_kjt_holds_each_examples_clusters_and_tokens(snapshot, tiny_graph):
    g = tiny_graph
    lookup = HirLookup(g, [snapshot])
    rng = np.random.default_rng(0)
    users = g.type_offsets[g.type_code("user")] + rng.integers(0, g.num_nodes_of("user"), 50)
    ads = g.type_offsets[g.type_code("ad")] + rng.integers(0, g.num_nodes_of("ad"), 50)
    t = np.full(50, snapshot.as_of)
    t[:5] = snapshot.as_of - 1  # before the snapshot: nothing
    out = hir_tensors(lookup, users, ads, t)
    assert out.sparse.keys() == sparse_keys(lookup)
    per_key = out.sparse.to_dict()
    u, a = lookup.lookup(users, t), lookup.lookup(ads, t)
    assert not u.found[:5].any() and u.found[5:].any() and a.found[5:].any()
    for i in range(50):
        for level in range(lookup.levels):
            got_u = per_key[f"hir_user_cluster_l{level}"].to_dense()[i].tolist()
            got_a = per_key[f"hir_ad_cluster_l{level}"].to_dense()[i].tolist()
            assert got_u == ([int(u.clusters[i, level])] if u.found[i] else [])
            assert got_a == ([int(a.clusters[i, level])] if a.found[i] else [])
        got_bom = per_key["hir_ad_bom"].to_dense()[i].tolist()
        assert got_bom == (a.tokens[i].tolist() if a.found[i] else [])
    D = lookup.dim
    dense = out.dense.numpy()
    assert dense.shape == (50, 2 * D + 3)
    np.testing.assert_array_equal(dense[:, :D], u.z)
    np.testing.assert_allclose(dense[:, 2 * D], np.einsum("nd,nd->n", u.z, a.z), rtol=1e-6)
    np.testing.assert_array_equal(dense[:, 2 * D + 2], a.found)
    ebc = EmbeddingBagCollection(tables=embedding_bag_configs(lookup, 8))
    pooled = ebc(out.sparse)
    assert pooled.values().shape == (50, 8 * len(sparse_keys(lookup)))
    assert torch.equal(pooled["hir_ad_bom"][:5], torch.zeros(5, 8))  # empty bags
