"""Slices of the test examples that teams ask about before a launch.

- cold-start advertisers: the ad's owner is first seen in the log at or after the cutoff
  (the test window's start);
- new advertisers: the ad's owner was first seen less than `new_days` days before the
  request (its age at the request, not at the cutoff): the cold-start advertisers and
  those that arrived shortly before the test window. On `small` the cold-start slice
  holds about 1,100 test examples and 8 conversions, so its interval is wide; the new
  advertisers (14 days) about 4,600 and 36;
- sparse users: fewer than `min_events` events (any type) before the cutoff;
- one slice per planted super-interest of the ad, when the dataset has a `truth/` folder
  (synthetic worlds do; only evaluation ever reads it).

The owners given are the examples' own, as of each request (`OwnersAsOf`), so no
structural edge at or after a request decides its slice.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph

_LATE = np.iinfo(np.int64).max
DAY = 86_400


def first_seen(graph: TemporalGraph) -> np.ndarray:
    """(N,) time of each node's first incident edge (either direction), or int64 max."""
    out = np.full(graph.num_nodes, _LATE, dtype=np.int64)
    for ptr, eid in ((graph.out_ptr, graph.out_eid), (graph.in_ptr, graph.in_eid)):
        has = ptr[1:] > ptr[:-1]
        first = np.full(graph.num_nodes, _LATE, dtype=np.int64)
        first[has] = graph.ts[eid[ptr[:-1][has]]]  # runs are in time order
        np.minimum(out, first, out=out)
    return out


def events_before(graph: TemporalGraph, cutoff: int) -> np.ndarray:
    """(N,) number of edges incident to each node with `ts < cutoff`."""
    k = graph.edges_before(cutoff)
    return np.bincount(graph.src[:k], minlength=graph.num_nodes) + np.bincount(
        graph.dst[:k], minlength=graph.num_nodes
    )


def truth_super_interest(
    graph: TemporalGraph, truth: Path, ads: np.ndarray
) -> tuple[np.ndarray, list[str]] | None:
    """Planted super-interest of each ad (index into the returned names), or None."""
    entities, taxonomy = truth / "entities.parquet", truth / "taxonomy.parquet"
    if not (entities.exists() and taxonomy.exists()):
        return None
    table = pl.read_parquet(entities).with_columns(pl.col("node_type").cast(pl.String))
    ad_rows = table.filter(pl.col("node_type") == "ad")
    if ad_rows.height == 0 or "ad" not in graph.node_types:
        return None
    index = graph.index("ad", ad_rows["node_id"].to_numpy())
    super_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    super_of[index] = ad_rows["super"].to_numpy()
    names = (
        pl.read_parquet(taxonomy)
        .select("super", "super_name")
        .unique()
        .sort("super")["super_name"]
        .to_list()
    )
    return super_of[ads], names


def test_slices(
    graph: TemporalGraph,
    user: np.ndarray,
    ad: np.ndarray,
    owner: np.ndarray,
    ts: np.ndarray,
    *,
    cutoff: int,
    min_events: int = 5,
    new_days: int = 14,
    truth: Path | None = None,
) -> dict[str, np.ndarray]:
    """Name -> boolean mask over the examples (`ts`: each example's request time)."""
    if new_days < 1:
        raise ValueError(f"test_slices: new_days must be >= 1, got {new_days}")
    seen = first_seen(graph)
    owned = owner >= 0  # an ad without an owner is in neither advertiser slice
    owner_seen = np.where(owned, seen[np.maximum(owner, 0)], _LATE)
    slices = {
        "cold-start advertisers": owned & (owner_seen >= cutoff),
        f"new advertisers (first seen < {new_days} days before the request)": (
            owned & (owner_seen > np.asarray(ts, dtype=np.int64) - new_days * DAY)
        ),
        f"sparse users (< {min_events} events before cutoff)": events_before(graph, cutoff)[user]
        < min_events,
    }
    planted = truth_super_interest(graph, truth, ad) if truth is not None else None
    if planted is not None:
        codes, names = planted
        for code, name in enumerate(names):
            slices[f"super-interest: {name}"] = codes == code
    return slices
