"""As-of interest history: how often a user was shown, and clicked, ads of the candidate's
interest cluster before the request, at each level of the hierarchy.

User x advertiser counts (the baseline's) are sparse: most pairs have no history, and a
new advertiser has none at all. User x interest-cluster counts pool every ad of the
cluster, so they exist for new advertisers' ads too. This is the point of interest
primitives: they replace sparse IDs with dense, shared ones.

For an example `(user, ad, t)` the candidate's clusters come from the snapshot the
example reads (`HirLookup`: the latest with `as_of <= t` holding the ad); the events
counted are the user's edges of the role with `ts < t` onto ads, each ad placed in its
cluster in the latest full snapshot with `as_of <= t`. Arrival snapshots do not re-place
the history: events on ads created since that full snapshot are not counted (one index
per full snapshot, not per arrival).

The counts are grouped by `pair_keys(user, cluster, width)`, `width` the most prototypes
any snapshot has at the level: snapshots of different encoders may have different sizes,
and a cluster id past the first snapshot's size must not run into the next user's ids.

Interests drift: what a user was shown last week says more about today than what they
were shown last month. Each count also comes time-decayed, every event weighted
`2^(-age / half-life)` (`EventIndex.counts_before`), for each of `half_lives`.

Columns, per level `l` (and half-life `h` days):

    hir_hist_exposure_l{l}       the user's exposures to ads of the candidate's cluster
    hir_hist_click_l{l}          their clicks on them
    hir_hist_ctr_l{l}            (clicks + 1) / (exposures + 2)
    hir_hist_exposure_l{l}_h{h}d   the exposures, time-decayed
    hir_hist_click_l{l}_h{h}d      the clicks, time-decayed
NaN where the candidate is not in the snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex, pair_keys
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.schema.manifest import DAY

ROLES = ("exposure", "click")
HALF_LIVES = (3.0, 14.0)  # days


class InterestHistory:
    def __init__(
        self, graph: TemporalGraph, lookup: HirLookup, *, half_lives: Sequence[float] = HALF_LIVES
    ) -> None:
        if not all(h > 0 for h in half_lives):
            raise ValueError(f"InterestHistory: half-lives must be > 0 days, got {half_lives}")
        self.lookup = lookup
        self.half_lives = tuple(float(h) for h in half_lives)
        self.sizes = lookup.prototype_sizes
        # per level: the key radix, above every cluster id of every snapshot
        self._width = [
            max(int(s.prototypes[level].shape[0]) for s in lookup.snapshots)
            for level in range(lookup.levels)
        ]
        self._index: dict[tuple[int, str, int], EventIndex] = {}
        edges = {}
        for role in ROLES:
            codes = graph.role_codes(role)
            edges[role] = np.flatnonzero(np.isin(graph.etype, codes))
        targets = np.unique(graph.dst[np.concatenate(list(edges.values()))])
        for k in lookup.full_indices:
            snapshot = lookup.snapshots[k]
            # every target's clusters in snapshot k, once for all roles
            rows = lookup.lookup(targets, np.full(len(targets), snapshot.as_of))
            cluster = np.full((graph.num_nodes, lookup.levels), -1, dtype=np.int64)
            cluster[targets[rows.found]] = rows.clusters[rows.found]
            for role, mine in edges.items():
                src, dst, ts = graph.src[mine], graph.dst[mine], graph.ts[mine]
                for level, width in enumerate(self._width):
                    c = cluster[dst, level]
                    keep = c >= 0
                    self._index[k, role, level] = EventIndex(
                        pair_keys(src[keep], c[keep], width), ts[keep]
                    )

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature columns for examples (global user and ad indices, request times)."""
        user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
        rows = self.lookup.lookup(ad, t)
        pick = self.lookup.snapshot_of(t)
        base = np.where(pick >= 0, self.lookup.base_of[np.maximum(pick, 0)], -1)
        seconds = [h * DAY for h in self.half_lives]
        columns: dict[str, np.ndarray] = {}
        for level, width in enumerate(self._width):
            counts = {role: np.full(len(ad), np.nan) for role in ROLES}
            decayed = {
                (role, h): np.full(len(ad), np.nan) for role in ROLES for h in self.half_lives
            }
            for k in self.lookup.full_indices:
                mine = np.flatnonzero((base == k) & rows.found)
                key = pair_keys(user[mine], rows.clusters[mine, level], width)
                for role in ROLES:
                    index = self._index[k, role, level]
                    counts[role][mine], sums = index.counts_before(key, t[mine], seconds)
                    for h, values in zip(self.half_lives, sums, strict=True):
                        decayed[role, h][mine] = values
            columns[f"hir_hist_exposure_l{level}"] = counts["exposure"]
            columns[f"hir_hist_click_l{level}"] = counts["click"]
            columns[f"hir_hist_ctr_l{level}"] = (counts["click"] + 1) / (counts["exposure"] + 2)
            for (role, h), values in decayed.items():
                columns[f"hir_hist_{role}_l{level}_h{h:g}d"] = values
        return pl.DataFrame(columns)
