"""As-of hand-crafted features: what a ranking team has before any learned representation.

Every feature of an example with request time `t` is computed from events with `ts < t`
only (strictly before: the exposure itself is at `t`). Counts, smoothed click-through and
conversion rates, recency and recent popularity, for the user, the ad, the ad's owner
(advertiser) and the user x owner pair. Smoothing priors are as-of too: global rates from
events before `t`. Missing recency is NaN (XGBoost treats it as missing).

Owners are as of time too (`OwnersAsOf`): the example's ad belongs to its owner from the
structural edges before `t`, and each past event counts for the owner its node had
before that event. Ads without an owner share one group of their own (`NO_OWNER`), for the
owner and the user x owner counts alike; `has_owner` tells the model which it is. Pairs
are grouped by `pair_keys`, whose codes are distinct for distinct pairs, a missing owner
included.

The user's and the ad's numeric node attributes (the graph's `attributes`, the extra
columns of `nodes.parquet`) follow as they are, `user_attr_<column>` and
`ad_attr_<column>`, NaN where the node has no value: static properties of the node, as a
ranking team would join them from its entity tables. A column is there for users when a
node of an exposure source type (per the manifest) has a value, for ads likewise with the
exposure destination types.

All of it is vectorised through `EventIndex`: one sort per event family, one binary search
per (example, feature).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import NEVER, EventIndex, pair_keys
from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf
from hir_sdk.schema.manifest import DAY

PRIOR_STRENGTH = 20.0  # pseudo-impressions behind each smoothed rate


@dataclass(frozen=True)
class _Family:
    """One family of events (exposures, clicks or conversions), indexed four ways."""

    by_user: EventIndex
    by_item: EventIndex  # by ad (exposures, clicks) or by converted-on node
    by_owner: EventIndex
    by_pair: EventIndex  # (user, owner)
    total: EventIndex


def _family(graph: TemporalGraph, owners: OwnersAsOf, role: str) -> _Family:
    codes = graph.role_codes(role)
    mask = np.isin(graph.etype, codes)
    user, item, ts = graph.src[mask], graph.dst[mask], graph.ts[mask]
    owner = owners.at(item, ts)  # the owner the item had before the event
    return _Family(
        by_user=EventIndex(user, ts),
        by_item=EventIndex(item, ts),
        by_owner=EventIndex(owner, ts),
        by_pair=EventIndex(pair_keys(user, owner, graph.num_nodes), ts),
        total=EventIndex(np.zeros(len(ts), dtype=np.int64), ts),
    )


def _smoothed(hits: np.ndarray, trials: np.ndarray, prior: np.ndarray) -> np.ndarray:
    return (hits + PRIOR_STRENGTH * prior) / (trials + PRIOR_STRENGTH)


def _since(t: np.ndarray, last: np.ndarray) -> np.ndarray:
    return np.where(last == NEVER, np.nan, (t - last) / DAY)


def _attribute_columns(graph: TemporalGraph) -> list[tuple[str, str, int]]:
    """(feature name, "user" or "ad", attribute index) of each node attribute that some
    node of the exposures' source (user) or destination (ad) types has a value of."""
    viewers, candidates = graph.manifest.exposed_types
    sides = {"user": viewers, "ad": candidates}
    kind = graph.node_type_of(np.arange(graph.num_nodes))
    out = []
    for side, types in sides.items():
        rows = np.isin(kind, [graph.type_code(name) for name in types])
        for i, column in enumerate(graph.attribute_names):
            if not np.isnan(graph.attributes[rows, i]).all():
                out.append((f"{side}_attr_{column}", side, i))
    return out


class AsOfFeatures:
    """Builds the baseline feature matrix for exposures of one graph.

    Args:
        graph: the temporal graph; only its events before each request time are used.
        owners: each node's owner as of any time (default: `OwnersAsOf(graph)`).
    """

    def __init__(self, graph: TemporalGraph, owners: OwnersAsOf | None = None) -> None:
        self.graph = graph
        self.owners = OwnersAsOf(graph) if owners is None else owners
        self._exp = _family(graph, self.owners, "exposure")
        self._click = _family(graph, self.owners, "click")
        self._conv = _family(graph, self.owners, "conversion")
        self._created = np.where(
            graph.created_ts == np.iinfo(np.int64).min, NEVER, graph.created_ts
        )
        self._attributes = _attribute_columns(graph)

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature frame (one row per example, float64 columns) for exposures `(user, ad, t)`."""
        user = np.asarray(user, dtype=np.int64)
        ad = np.asarray(ad, dtype=np.int64)
        t = np.asarray(t, dtype=np.int64)
        owner = self.owners.at(ad, t)
        pair = pair_keys(user, owner, self.graph.num_nodes)
        zero = np.zeros(len(t), dtype=np.int64)
        exp, click, conv = self._exp, self._click, self._conv
        g_imp = exp.total.count_before(zero, t).astype(float)
        g_ctr = _smoothed(click.total.count_before(zero, t), g_imp, 0.01)
        g_cvr = _smoothed(conv.total.count_before(zero, t), g_imp, 0.001)
        f: dict[str, np.ndarray] = {}
        for name, fam_exp, fam_click, fam_conv, key in (
            ("user", exp.by_user, click.by_user, conv.by_user, user),
            ("adv", exp.by_owner, click.by_owner, conv.by_owner, owner),
            ("ua", exp.by_pair, click.by_pair, conv.by_pair, pair),
        ):
            imps = fam_exp.count_before(key, t)
            clicks = fam_click.count_before(key, t)
            convs = fam_conv.count_before(key, t)
            f[f"{name}_imps"] = imps
            f[f"{name}_clicks"] = clicks
            f[f"{name}_convs"] = convs
            f[f"{name}_ctr"] = _smoothed(clicks, imps, g_ctr)
            f[f"{name}_cvr"] = _smoothed(convs, imps, g_cvr)
            f[f"{name}_days_since_click"] = _since(t, fam_click.last_before(key, t))
            f[f"{name}_days_since_conv"] = _since(t, fam_conv.last_before(key, t))
        f["user_days_since_imp"] = _since(t, exp.by_user.last_before(user, t))
        ad_imps = exp.by_item.count_before(ad, t)
        ad_clicks = click.by_item.count_before(ad, t)
        f["ad_imps"] = ad_imps
        f["ad_clicks"] = ad_clicks
        f["ad_ctr"] = _smoothed(ad_clicks, ad_imps, g_ctr)
        f["ad_imps_24h"] = ad_imps - exp.by_item.count_before(ad, t - DAY)
        f["adv_imps_24h"] = f["adv_imps"] - exp.by_owner.count_before(owner, t - DAY)
        created = self._created[ad]
        f["ad_age_days"] = np.where(created == NEVER, np.nan, (t - created) / DAY)
        f["has_owner"] = (owner != NO_OWNER).astype(float)
        for name, side, i in self._attributes:
            f[name] = self.graph.attributes[user if side == "user" else ad, i]
        return pl.DataFrame({name: np.asarray(v, dtype=np.float64) for name, v in f.items()})
