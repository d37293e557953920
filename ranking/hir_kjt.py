"""HIR features as TorchRec inputs for neural rankers: the sparse part as one
`KeyedJaggedTensor`, the dense part as one tensor, both as of each example's request time
(`HirLookup`: the latest snapshot with `as_of <= t`).

```
key                   example 0          example 1 (ad not in any snapshot yet)
hir_user_cluster_l0   [c0(user_0)]       [c0(user_1)]
hir_ad_cluster_l0     [c0(ad_0)]         []
...one pair per level...
hir_user_bom          [t_0 .. t_M-1]     [t_0 .. t_M-1]
hir_ad_bom            [t_0 .. t_M-1]     []
dense (B, 2D + 3)     [z_user | z_ad | cos | user found | ad found]
```
`embedding_bag_configs` builds the matching TorchRec table configs (one cluster table per
level shared by users and ads, one BoM table), so
`EmbeddingBagCollection(tables=embedding_bag_configs(lookup, dim))` consumes the tensor
as is, under `DistributedModelParallel` like any other TorchRec table.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from torchrec import EmbeddingBagConfig, KeyedJaggedTensor, PoolingType

from hir_sdk.ranking.hir_lookup import HirLookup


@dataclass(frozen=True)
class HirTensors:
    sparse: KeyedJaggedTensor
    dense: torch.Tensor  # (B, 2 * D + 3) float32


def sparse_keys(lookup: HirLookup) -> list[str]:
    keys = []
    for level in range(lookup.levels):
        keys += [f"hir_user_cluster_l{level}", f"hir_ad_cluster_l{level}"]
    return [*keys, "hir_user_bom", "hir_ad_bom"]


def embedding_bag_configs(lookup: HirLookup, dim: int) -> list[EmbeddingBagConfig]:
    """Table configs matching `hir_tensors`' keys (sum pooling)."""
    tables = [
        EmbeddingBagConfig(
            name=f"t_hir_cluster_l{level}",
            embedding_dim=dim,
            num_embeddings=size,
            feature_names=[f"hir_user_cluster_l{level}", f"hir_ad_cluster_l{level}"],
            pooling=PoolingType.SUM,
        )
        for level, size in enumerate(lookup.prototype_sizes)
    ]
    tables.append(
        EmbeddingBagConfig(
            name="t_hir_bom",
            embedding_dim=dim,
            num_embeddings=lookup.codebooks * lookup.codewords,
            feature_names=["hir_user_bom", "hir_ad_bom"],
            pooling=PoolingType.SUM,
        )
    )
    return tables


def hir_tensors(lookup: HirLookup, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> HirTensors:
    """HIR inputs of examples (global user and ad indices, request times)."""
    user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
    u, a = lookup.lookup(user, t), lookup.lookup(ad, t)
    values, lengths = [], []
    for level in range(lookup.levels):
        for rows in (u, a):
            values.append(rows.clusters[rows.found, level])
            lengths.append(rows.found.astype(np.int64))
    for rows in (u, a):
        values.append(rows.tokens[rows.found].reshape(-1))
        lengths.append(rows.found.astype(np.int64) * lookup.codebooks)
    sparse = KeyedJaggedTensor.from_lengths_sync(
        keys=sparse_keys(lookup),
        values=torch.from_numpy(np.concatenate(values)),
        lengths=torch.from_numpy(np.concatenate(lengths)),
    )
    cos = np.einsum("nd,nd->n", u.z, a.z)  # zeros when either is missing
    dense = np.concatenate(
        [u.z, a.z, cos[:, None], u.found[:, None], a.found[:, None]], axis=1
    ).astype(np.float32)
    return HirTensors(sparse=sparse, dense=torch.from_numpy(dense))
