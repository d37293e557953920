"""HIR features for GBDT rankers: snapshot embeddings, clusters and BoM tokens joined onto
ranking examples as of their request time.

For an example `(user, ad, t)` the snapshot used is the latest one with `as_of <= t`
(`HirLookup`), never a newer one; with none, or when an entity is missing from it, the
features are NaN (XGBoost treats NaN as missing).

Columns (levels `l` of the snapshots' prototype heads):

    hir_cos            cosine of the user's and the ad's embeddings
    hir_user_l{l}      the user's cluster at level l      hir_ad_l{l}   the ad's
    hir_same_l{l}      1.0 when both sit in the same cluster at level l
    hir_bom_overlap    BoM tokens the two share (0..M)
    hir_ad_e{i}        the ad's first `dims` embedding coordinates (optional)
    hir_hist_*_l{l}    the user's exposures, clicks and their rate on ads of the ad's
                       cluster before the request (`interest_history`; on by default)
    hir_recent_*       the largest and mean cosine between the ad and the user's last
                       `recent` clicked and exposed ads (`recent_interest`; 20 by default)
    hir_nbr_*          the user's conversion rate on the past exposures most similar to
                       the ad, of their last `neighbours` (`neighbour_outcomes`; 50)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.interest_history import InterestHistory
from hir_sdk.ranking.neighbour_outcomes import NeighbourOutcomes
from hir_sdk.ranking.recent_interest import RecentInterest
from hir_sdk.ranking.sequence.history import EventHistory


def similarity_columns(columns: Sequence[str]) -> list[str]:
    """Those of `columns` that compare the candidate with the user: `hir_cos`, the
    recent-interest cosines and the neighbour outcomes. The A/B's treatment arm also
    tries these alone next to the baseline's columns, and keeps whichever set validates
    better (`search_xgboost`)."""
    return [c for c in columns if c == "hir_cos" or c.startswith(("hir_recent_", "hir_nbr_"))]


class HirFeatures:
    def __init__(
        self,
        graph: TemporalGraph,
        snapshots: Sequence[EntityEmbeddings] | HirLookup,
        *,
        dims: int = 0,
        history: bool = True,
        recent: int = 20,
        neighbours: int = 50,
        owners: OwnersAsOf | None = None,
        conversions: EventIndex | None = None,
    ) -> None:
        """`owners`: the ads' owners as of time (`OwnersAsOf`), and `conversions`: the
        conversions keyed by (user, owner) (`conversion_index`), when the caller has them
        already (the A/B read its labels with them); built here otherwise."""
        self.lookup = snapshots if isinstance(snapshots, HirLookup) else HirLookup(graph, snapshots)
        self.levels = self.lookup.levels
        self.dims = dims
        self.history = InterestHistory(graph, self.lookup) if history else None
        # the recent-interest and neighbour-outcome columns read the same exposures
        exposures = EventHistory(graph, roles=("exposure",)) if recent or neighbours else None
        self.recent = (
            RecentInterest(graph, self.lookup, last=recent, histories={"exposure": exposures})
            if recent
            else None
        )
        self.neighbours = (
            NeighbourOutcomes(
                graph,
                self.lookup,
                last=neighbours,
                owners=owners,
                exposures=exposures,
                conversions=conversions,
            )
            if neighbours
            else None
        )

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature columns for examples (global user and ad indices, request times)."""
        user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
        u, a = self.lookup.lookup(user, t), self.lookup.lookup(ad, t)
        both = u.found & a.found
        cos = np.where(both, np.einsum("nd,nd->n", u.z, a.z), np.nan)
        # tokens are m * K + k, one per codebook slot: equal slots are shared tokens
        overlap = np.where(both, (u.tokens == a.tokens).sum(axis=1), np.nan)
        columns: dict[str, np.ndarray] = {"hir_cos": cos, "hir_bom_overlap": overlap}
        for level in range(self.levels):
            uc = np.where(u.found, u.clusters[:, level], np.nan)
            ac = np.where(a.found, a.clusters[:, level], np.nan)
            columns[f"hir_user_l{level}"] = uc
            columns[f"hir_ad_l{level}"] = ac
            columns[f"hir_same_l{level}"] = np.where(both, (uc == ac).astype(np.float64), np.nan)
        for i in range(self.dims):
            columns[f"hir_ad_e{i}"] = np.where(a.found, a.z[:, i], np.nan)
        out = pl.DataFrame({k: np.asarray(v, dtype=np.float64) for k, v in columns.items()})
        for extra in (self.history, self.recent, self.neighbours):
            if extra is not None:
                out = pl.concat([out, extra.compute(user, ad, t)], how="horizontal")
        return out
