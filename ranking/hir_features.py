"""HIR features for GBDT rankers: snapshot embeddings, clusters and BoM tokens joined onto
ranking examples as of their request time.

For an example `(user, ad, t)` the snapshot used is the latest one with `as_of <= t`
(a snapshot at `as_of` only saw edges before it), never a newer one; with none, or when
an entity is missing from it, the features are NaN (XGBoost treats NaN as missing).

Columns (levels `l` of the snapshots' prototype heads):

    hir_cos            cosine of the user's and the ad's embeddings
    hir_user_l{l}      the user's cluster at level l      hir_ad_l{l}   the ad's
    hir_same_l{l}      1.0 when both sit in the same cluster at level l
    hir_bom_overlap    BoM tokens the two share (0..M)
    hir_ad_e{i}        the ad's first `dims` embedding coordinates (optional)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.interests.hierarchy import snapshot_rows


class HirFeatures:
    def __init__(
        self, graph: TemporalGraph, snapshots: Sequence[EntityEmbeddings], *, dims: int = 0
    ) -> None:
        if not snapshots:
            raise ValueError("HirFeatures needs at least one snapshot")
        levels = {s.levels for s in snapshots}
        if len(levels) != 1:
            raise ValueError(f"snapshots disagree on the number of levels: {sorted(levels)}")
        self.snapshots = sorted(snapshots, key=lambda s: s.as_of)
        self.as_of = np.array([s.as_of for s in self.snapshots], dtype=np.int64)
        self.levels = levels.pop()
        self.dims = dims
        # per snapshot: (N,) row of each global node, -1 when absent
        self._rows = [snapshot_rows(s, graph) for s in self.snapshots]

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature columns for examples (global user and ad indices, request times)."""
        user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
        n = len(user)
        pick = np.searchsorted(self.as_of, t, side="right") - 1  # latest with as_of <= t
        cos = np.full(n, np.nan)
        overlap = np.full(n, np.nan)
        user_cluster = np.full((self.levels, n), np.nan)
        ad_cluster = np.full((self.levels, n), np.nan)
        ad_dims = np.full((self.dims, n), np.nan)
        for k, snap in enumerate(self.snapshots):
            mine = np.flatnonzero(pick == k)
            u, a = self._rows[k][user[mine]], self._rows[k][ad[mine]]
            z = snap.embeddings()
            tokens = snap.tokens()
            both = mine[(u >= 0) & (a >= 0)]
            ub, ab = u[(u >= 0) & (a >= 0)], a[(u >= 0) & (a >= 0)]
            cos[both] = np.einsum("nd,nd->n", z[ub], z[ab])
            overlap[both] = (tokens[ub] == tokens[ab]).sum(axis=1)  # token m*K+k per slot
            for level in range(self.levels):
                clusters = snap.clusters(level)
                user_cluster[level, mine[u >= 0]] = clusters[u[u >= 0]]
                ad_cluster[level, mine[a >= 0]] = clusters[a[a >= 0]]
            if self.dims:
                ad_dims[:, mine[a >= 0]] = z[a[a >= 0], : self.dims].T
        columns: dict[str, np.ndarray] = {"hir_cos": cos, "hir_bom_overlap": overlap}
        for level in range(self.levels):
            same = (user_cluster[level] == ad_cluster[level]).astype(np.float64)
            same[np.isnan(user_cluster[level]) | np.isnan(ad_cluster[level])] = np.nan
            columns[f"hir_user_l{level}"] = user_cluster[level]
            columns[f"hir_ad_l{level}"] = ad_cluster[level]
            columns[f"hir_same_l{level}"] = same
        for i in range(self.dims):
            columns[f"hir_ad_e{i}"] = ad_dims[i]
        return pl.DataFrame(columns)
