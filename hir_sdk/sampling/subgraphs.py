"""Sampled subgraphs of a batch of anchors, as flat jagged arrays.

```
batch of B anchors, subgraph b owns nodes[offsets[b]:offsets[b+1]] (anchor first)
nodes     | a0 n n n | a1 n n | a2 n n n n |        offsets = [0, 4, 7, 11]
edges     (local src, local dst) within their subgraph, edge_offsets likewise
```
Edges carry their type, raw time and weight decayed to the subgraph's cutoff; every edge
is dated strictly before its subgraph's cutoff.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.stable_sort import float_keys, stable_sort
from hir_sdk.schema.node_index import MISSING, search_sorted


@dataclass(frozen=True)
class Subgraphs:
    anchors: np.ndarray  # (B,) global node index
    cutoffs: np.ndarray  # (B,) seconds, exclusive
    nodes: np.ndarray  # (T,) global node index, grouped by subgraph, anchor first
    offsets: np.ndarray  # (B+1,)
    edge_src: np.ndarray  # (E,) local index (within its subgraph)
    edge_dst: np.ndarray  # (E,) local index
    edge_id: np.ndarray  # (E,) global edge id
    edge_offsets: np.ndarray  # (B+1,)
    edge_type: np.ndarray  # (E,) type code
    edge_ts: np.ndarray  # (E,) seconds
    edge_weight: np.ndarray  # (E,) weight decayed to the cutoff

    @property
    def batch_size(self) -> int:
        return len(self.anchors)

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def nodes_of(self, b: int) -> np.ndarray:
        return self.nodes[self.offsets[b] : self.offsets[b + 1]]

    def edges_of(self, b: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(local src, local dst, edge id) of subgraph `b`."""
        sl = slice(self.edge_offsets[b], self.edge_offsets[b + 1])
        return self.edge_src[sl], self.edge_dst[sl], self.edge_id[sl]

    @classmethod
    def concat(cls, parts: list[Subgraphs]) -> Subgraphs:
        """The batches `parts`, one after the other, as one batch."""
        if len(parts) == 1:
            return parts[0]

        def joined(name: str) -> np.ndarray:
            return np.concatenate([getattr(part, name) for part in parts])

        def offsets(name: str) -> np.ndarray:
            shifted, base = [np.zeros(1, dtype=np.int64)], 0
            for part in parts:
                shifted.append(getattr(part, name)[1:] + base)
                base += int(getattr(part, name)[-1])
            return np.concatenate(shifted)

        plain = [f for f in cls.__dataclass_fields__ if f not in ("offsets", "edge_offsets")]
        return cls(
            **{name: joined(name) for name in plain},
            offsets=offsets("offsets"),
            edge_offsets=offsets("edge_offsets"),
        )


def _by_slot_then_rank(slot: np.ndarray, rank: np.ndarray, batch: int) -> np.ndarray:
    """The stable order by (slot, rank): `np.lexsort((rank, slot))`, faster. Integer
    ranks >= 0 join the slot in one key, one radix sort; float ranks take two radix
    sorts, of the ranks' integer keys and of int16 slots."""
    if np.issubdtype(rank.dtype, np.integer) and len(rank):
        span = int(rank.max()) + 1
        if batch * span < 2**62:
            return stable_sort(slot * span + rank)[1]
    _, order = stable_sort(float_keys(rank))
    small = np.int16 if batch < 2**15 else np.int64
    return order[np.argsort(slot[order].astype(small), kind="stable")]


def _first_of_each(
    slot: np.ndarray, batch: int, max_nodes: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Of nodes grouped by (sorted) `slot`: which are among the first `max_nodes` of their
    subgraph, their local indices, and the kept subgraphs' offsets."""
    counts = np.bincount(slot, minlength=batch)
    starts = np.zeros(batch, dtype=np.int64)
    np.cumsum(counts[:-1], out=starts[1:])
    local = np.arange(len(slot)) - starts[slot]
    keep = local < max_nodes
    offsets = np.zeros(batch + 1, dtype=np.int64)
    np.cumsum(np.minimum(counts, max_nodes), out=offsets[1:])
    return keep, local[keep], offsets


def assemble(
    graph: TemporalGraph,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    node_slot: np.ndarray,
    node: np.ndarray,
    node_rank: np.ndarray,
    edge_slot: np.ndarray,
    edge: np.ndarray,
    max_nodes: int,
) -> Subgraphs:
    """Order nodes by rank within each subgraph (anchors must have the lowest rank), keep
    the first `max_nodes`, keep edges whose two ends survived, deduplicate node pairs
    (keeping the latest edge), and convert to local indices. Used where nodes may repeat
    and edges carry only their ids (random walks, restricted views); `assemble_entries`
    is the cheaper path for hop-by-hop views."""
    n = graph.num_nodes
    order = _by_slot_then_rank(node_slot, node_rank, len(anchors))
    node_slot, node = node_slot[order], node[order]
    code = node_slot * n + node
    _, keep_first = np.unique(code, return_index=True)  # first = best-ranked occurrence
    mask = np.zeros(len(code), dtype=bool)
    mask[keep_first] = True
    node_slot, node = node_slot[mask], node[mask]
    keep, local, offsets = _first_of_each(node_slot, len(anchors), max_nodes)
    node_slot, node = node_slot[keep], node[keep]
    # local index of an edge end: look its (slot, node) code up among the kept nodes
    sorted_codes, by_code = stable_sort(node_slot * n + node)

    def local_of(slot: np.ndarray, ends: np.ndarray) -> np.ndarray:
        pos = search_sorted(sorted_codes, slot * n + ends)
        return np.where(pos == MISSING, -1, local[by_code[np.maximum(pos, 0)]])

    src_local = local_of(edge_slot, graph.src[edge])
    dst_local = local_of(edge_slot, graph.dst[edge])
    ok = (src_local >= 0) & (dst_local >= 0)
    edge_slot, edge, src_local, dst_local = edge_slot[ok], edge[ok], src_local[ok], dst_local[ok]
    width = int(local.max(initial=0)) + 1
    keep = latest_per_pair(edge_slot, src_local, dst_local, edge, width)
    edge_slot, edge = edge_slot[keep], edge[keep]
    return _subgraphs(
        anchors,
        cutoffs,
        node,
        offsets,
        EntryEdges(
            slot=edge_slot,
            src=src_local[keep],
            dst=dst_local[keep],
            edge=edge,
            etype=graph.etype[edge],
            ts=graph.ts[edge],
            weight=graph.decay_weights(edge, cutoffs[edge_slot]),
        ),
    )


def latest_per_pair(
    edge_slot: np.ndarray, src: np.ndarray, dst: np.ndarray, edge: np.ndarray, width: int
) -> np.ndarray:
    """Index of the latest edge (the largest id: ids follow time) of each (subgraph, src,
    dst) pair, in pair order; `src` and `dst` are local indices below `width`."""
    if len(edge) == 0:
        return np.zeros(0, dtype=np.int64)
    pair, order = stable_sort((edge_slot * width + src) * width + dst)
    start = np.diff(pair, prepend=-1) != 0  # pairs are >= 0
    group = np.cumsum(start) - 1
    edge = edge[order]
    top = np.maximum.reduceat(edge, np.flatnonzero(start))
    hit = np.flatnonzero(edge == top[group])  # an edge may be drawn twice: keep one
    return order[hit[np.diff(group[hit], prepend=-1) != 0]]


@dataclass(frozen=True)
class EntryEdges:
    """Edges between listed nodes (entries), with the attributes the sampler read; once
    assembled, the same fields with the ends as local indices."""

    slot: np.ndarray  # (D,) subgraph
    src: np.ndarray  # (D,) entry (or local index) of the edge's source
    dst: np.ndarray  # (D,) entry (or local index) of the edge's destination
    edge: np.ndarray  # (D,) edge id
    etype: np.ndarray  # (D,) type code
    ts: np.ndarray  # (D,) seconds
    weight: np.ndarray  # (D,) weight decayed to the subgraph's cutoff


def assemble_entries(
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    slot: np.ndarray,
    node: np.ndarray,
    rank: np.ndarray,
    edges: EntryEdges,
    max_nodes: int,
) -> Subgraphs:
    """`assemble` for nodes listed once per subgraph (entry `i` is `(slot[i], node[i])`)
    and edges that name their ends by entry and carry their attributes: the same result
    with no lookup by node code or by edge id."""
    batch = len(anchors)
    order = _by_slot_then_rank(slot, rank, batch)
    keep, local, offsets = _first_of_each(slot[order], batch, max_nodes)
    node = node[order][keep]
    entry_local = np.full(len(order), -1, dtype=np.int64)
    entry_local[order[keep]] = local
    src, dst = entry_local[edges.src], entry_local[edges.dst]
    ok = np.flatnonzero((src >= 0) & (dst >= 0))
    width = int(local.max(initial=0)) + 1
    pick = ok[latest_per_pair(edges.slot[ok], src[ok], dst[ok], edges.edge[ok], width)]
    local_edges = EntryEdges(
        slot=edges.slot[pick],
        src=src[pick],
        dst=dst[pick],
        edge=edges.edge[pick],
        etype=edges.etype[pick],
        ts=edges.ts[pick],
        weight=edges.weight[pick],
    )
    return _subgraphs(anchors, cutoffs, node, offsets, local_edges)


def _subgraphs(
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    nodes: np.ndarray,
    offsets: np.ndarray,
    edges: EntryEdges,
) -> Subgraphs:
    """The batch from its kept nodes (grouped by subgraph) and its kept edges, whose ends
    are local indices here, in (subgraph, src, dst) order."""
    edge_offsets = np.zeros(len(anchors) + 1, dtype=np.int64)
    np.cumsum(np.bincount(edges.slot, minlength=len(anchors)), out=edge_offsets[1:])
    return Subgraphs(
        anchors=anchors,
        cutoffs=cutoffs,
        nodes=nodes,
        offsets=offsets,
        edge_src=edges.src,
        edge_dst=edges.dst,
        edge_id=edges.edge,
        edge_offsets=edge_offsets,
        edge_type=edges.etype,
        edge_ts=edges.ts,
        edge_weight=edges.weight.astype(np.float32),
    )
