"""Converted pairs: the (exposed node, user) pairs whose exposure led to a conversion,
by the rule of the ranking labels.

An exposure `(user, item, ts)` converted when the user converted on the owner `item`
had at `ts` within the attribution window after it, `ts < conversion ts <= ts + window`
(`evaluation.examples`, `graph.owners`). As of a time `T` only what happened before `T`
is known: the window is cut at `T - 1`, so an exposure whose conversion comes at or
after `T` counts as not converted. On a log whose conversions land on other nodes than
the exposures (a purchase of the advertiser's product after an ad), this is how the
conversion is tied back to the exposed node.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.graph.owners import OwnersAsOf, conversion_index, converted_before
from hir_sdk.graph.temporal_graph import TemporalGraph


def converted_pairs(
    graph: TemporalGraph, *, as_of: int, owners: OwnersAsOf | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """`(item, user)` of the distinct pairs with an exposure edge before `as_of` that
    converted before `as_of` (module doc), sorted by item, then user. `owners`: the
    graph's, when the caller has them."""
    k = graph.edges_before(as_of)
    exposed = np.isin(graph.etype[:k], graph.role_codes("exposure"))
    user, item, ts = graph.src[:k][exposed], graph.dst[:k][exposed], graph.ts[:k][exposed]
    owners = OwnersAsOf(graph) if owners is None else owners
    window = graph.manifest.attribution_window_s
    hit = converted_before(conversion_index(graph, owners), owners, user, item, ts, as_of, window)
    n = graph.num_nodes
    return split_pair_keys(np.unique(pair_keys(item[hit], user[hit], n)), n)
