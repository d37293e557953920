"""A `TemporalGraph` built straight from arrays, for property tests that draw thousands of
small graphs (writing and validating a dataset folder per draw would dominate them).

Node types come in manifest order with `counts[t]` nodes each (ids 0..count-1, global
indices by type then id, as `build_graph` lays them out); edges are `(src, dst, edge type
code, ts)` over global indices, sorted by time here as `build_graph` sorts them.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from hypothesis import strategies as st

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.owners import MAX_HOPS, NO_OWNER
from hir_sdk.graph.temporal_graph import UNKNOWN_TIME
from hir_sdk.schema import DatasetManifest, EdgeTypeSpec, TimeSplits
from tests.conftest import DAY, T0


def _csr(owner: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(owner, kind="stable")  # edge ids grouped by owner, time order kept
    ptr = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=num_nodes), out=ptr[1:])
    return ptr, order.astype(np.int64)


def hand_graph(
    manifest: DatasetManifest,
    counts: Sequence[int],
    edges: Sequence[tuple[int, int, int, int]],
    *,
    created_ts: Sequence[int] | None = None,
) -> TemporalGraph:
    """The graph of `counts[t]` nodes per type and `edges` (see the module docstring)."""
    offsets = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    n = int(offsets[-1])
    e = np.asarray(edges, dtype=np.int64).reshape(-1, 4)
    order = np.argsort(e[:, 3], kind="stable")
    src, dst, etype, ts = (e[order, k] for k in range(4))
    out_ptr, out_eid = _csr(src, n)
    in_ptr, in_eid = _csr(dst, n)
    created = np.full(n, UNKNOWN_TIME, dtype=np.int64)
    if created_ts is not None:
        created[:] = created_ts
    return TemporalGraph(
        manifest=manifest,
        node_ids=tuple(np.arange(c, dtype=np.int64) for c in counts),
        type_offsets=offsets,
        created_ts=created,
        src=src,
        dst=dst,
        etype=etype.astype(np.int16),
        ts=ts,
        weight=np.ones(len(ts), dtype=np.float32),
        out_ptr=out_ptr,
        out_eid=out_eid,
        in_ptr=in_ptr,
        in_eid=in_eid,
        fingerprint="hand",
    )


def funnel_manifest(node_types: Sequence[str] = ("user", "ad", "advertiser")) -> DatasetManifest:
    """user -impression/click/purchase-> ad, advertiser -runs-> ad; the owner type is the
    advertiser (the last type by default: its last node is the graph's last index);
    train [day 0, 6), validation [6, 8), test [8, 10), a 2-day attribution window."""
    return DatasetManifest(
        name="hand",
        node_types=tuple(node_types),
        edge_types=(
            EdgeTypeSpec("user", "impression", "ad", "exposure"),
            EdgeTypeSpec("user", "click", "ad", "click"),
            EdgeTypeSpec("user", "purchase", "ad", "conversion"),
            EdgeTypeSpec("advertiser", "runs", "ad", "structural"),
        ),
        time=TimeSplits(T0, T0 + 6 * DAY, T0 + 8 * DAY, T0 + 10 * DAY),
        attribution_window_days=2.0,
        owner_type="advertiser",
    )


IMPRESSION, CLICK, PURCHASE, RUNS = range(4)  # edge type codes of `funnel_manifest`


def reference_owner(graph, node: int, t: int) -> int:
    """The owner of `node` from structural edges with `ts < t`: breadth-first, nearest
    owner first, ties to the lowest index (a plain loop over the edges)."""
    owner_type = graph.type_code(graph.manifest.owner_type)
    lo, hi = int(graph.type_offsets[owner_type]), int(graph.type_offsets[owner_type + 1])
    if lo <= node < hi:
        return node
    structural = set(graph.role_codes("structural").tolist())
    links: dict[int, set[int]] = {}
    for a, b, et, ts in zip(
        graph.src.tolist(), graph.dst.tolist(), graph.etype.tolist(), graph.ts.tolist(), strict=True
    ):
        if et in structural and ts < t:
            links.setdefault(a, set()).add(b)
            links.setdefault(b, set()).add(a)
    seen, frontier = {node}, {node}
    for _ in range(MAX_HOPS):
        frontier = {m for v in frontier for m in links.get(v, ())} - seen
        owners = [m for m in frontier if lo <= m < hi]
        if owners:
            return min(owners)
        seen |= frontier
    return NO_OWNER


def edge_list(graph: TemporalGraph) -> list[tuple[int, int, int, int]]:
    """The graph's edges as `(src, dst, edge type code, ts)` tuples, in time order: the
    plain reading that reference implementations loop over."""
    return list(
        zip(
            graph.src.tolist(),
            graph.dst.tolist(),
            graph.etype.tolist(),
            graph.ts.tolist(),
            strict=True,
        )
    )


def draw_owner_links(draw, users: int, ads: int, advertisers: int, day) -> list:
    """Hypothesis draws of `RUNS` edges for a funnel graph: each ad joins an advertiser at
    any time, never, or a second one later (nodes: users, then ads, then advertisers)."""
    edges = []
    for ad in range(ads):
        for _ in range(draw(st.integers(0, 2))):
            owner = users + ads + draw(st.integers(0, advertisers - 1))
            edges.append((owner, users + ad, RUNS, draw(day)))
    return edges
