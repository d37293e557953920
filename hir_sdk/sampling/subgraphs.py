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
    (keeping the latest edge), and convert to local indices."""
    n = graph.num_nodes
    # np.lexsort((node_rank, node_slot)), faster: a stable sort by slot as int16 is a
    # radix sort
    order = np.argsort(node_rank, kind="stable")
    small = np.int16 if len(anchors) < 2**15 else np.int64
    order = order[np.argsort(node_slot[order].astype(small), kind="stable")]
    node_slot, node = node_slot[order], node[order]
    code = node_slot * n + node
    _, keep_first = np.unique(code, return_index=True)  # first = best-ranked occurrence
    mask = np.zeros(len(code), dtype=bool)
    mask[keep_first] = True
    node_slot, node = node_slot[mask], node[mask]
    counts = np.bincount(node_slot, minlength=len(anchors))
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    local = np.arange(len(node)) - starts[node_slot]
    keep = local < max_nodes
    node_slot, node, local = node_slot[keep], node[keep], local[keep]
    offsets = np.zeros(len(anchors) + 1, dtype=np.int64)
    np.cumsum(np.bincount(node_slot, minlength=len(anchors)), out=offsets[1:])
    # local index of an edge end: look its (slot, node) code up among the kept nodes
    codes = node_slot * n + node
    by_code = np.argsort(codes)
    sorted_codes = codes[by_code]

    def local_of(slot: np.ndarray, ends: np.ndarray) -> np.ndarray:
        pos = search_sorted(sorted_codes, slot * n + ends)
        return np.where(pos == MISSING, -1, local[by_code[np.maximum(pos, 0)]])

    src_local = local_of(edge_slot, graph.src[edge])
    dst_local = local_of(edge_slot, graph.dst[edge])
    ok = (src_local >= 0) & (dst_local >= 0)
    edge_slot, edge, src_local, dst_local = edge_slot[ok], edge[ok], src_local[ok], dst_local[ok]
    # one edge per (slot, src, dst): the latest
    width = int(local.max(initial=0)) + 1
    pair = (edge_slot * width + src_local) * width + dst_local
    order = np.argsort(pair, kind="stable")
    pair = pair[order]
    first = np.flatnonzero(np.diff(pair, prepend=-1))  # pairs are >= 0
    # edge ids follow time, so the latest edge of a pair is its largest id
    edge = np.maximum.reduceat(edge[order], first) if len(first) else edge[:0]
    keep = order[first]
    edge_slot, src_local, dst_local = edge_slot[keep], src_local[keep], dst_local[keep]
    edge_offsets = np.zeros(len(anchors) + 1, dtype=np.int64)
    np.cumsum(np.bincount(edge_slot, minlength=len(anchors)), out=edge_offsets[1:])
    decayed = graph.decay_weights(edge, cutoffs[edge_slot])
    return Subgraphs(
        anchors=anchors,
        cutoffs=cutoffs,
        nodes=node,
        offsets=offsets,
        edge_src=src_local,
        edge_dst=dst_local,
        edge_id=edge,
        edge_offsets=edge_offsets,
        edge_type=graph.etype[edge],
        edge_ts=graph.ts[edge],
        edge_weight=decayed.astype(np.float32),
    )
