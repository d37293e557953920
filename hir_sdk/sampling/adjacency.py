"""Visible edge runs: for many (node, cutoff) pairs at once, which of the node's edges are
dated before the cutoff, most recent first, capped.

Each CSR run lists a node's edges in time order, so `(node, ts)` over the run positions is
sorted; one searchsorted of `node * SPAN + cutoff` finds where every run's visible part
ends. Hubs (an ad with 100k impressions) keep only their `cap` most recent visible edges,
which also carry most of the time-decayed weight.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph


@dataclass(frozen=True)
class Candidates:
    """Flat candidate edges of many query pairs: query `q` owns rows `ptr[q]:ptr[q+1]`."""

    query: np.ndarray  # (C,) index of the query pair each candidate belongs to
    edge: np.ndarray  # (C,) edge id
    other: np.ndarray  # (C,) the other endpoint
    ptr: np.ndarray  # (Q+1,)


class VisibleAdjacency:
    """Time-sorted CSR in both directions with per-run search keys (built lazily)."""

    def __init__(self, graph: TemporalGraph) -> None:
        self.graph = graph
        self._t0 = int(graph.ts[0]) if graph.num_edges else 0
        self._span = (int(graph.ts[-1]) - self._t0 + 2) if graph.num_edges else 2

    def _keys(self, ptr: np.ndarray, eid: np.ndarray) -> np.ndarray:
        owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
        return owner * self._span + (self.graph.ts[eid] - self._t0)

    @cached_property
    def _out_keys(self) -> np.ndarray:
        return self._keys(self.graph.out_ptr, self.graph.out_eid)

    @cached_property
    def _in_keys(self) -> np.ndarray:
        return self._keys(self.graph.in_ptr, self.graph.in_eid)

    def _runs(
        self, direction: str, nodes: np.ndarray, cutoffs: np.ndarray, cap: int
    ) -> tuple[np.ndarray, np.ndarray]:
        g = self.graph
        ptr, keys = (g.out_ptr, self._out_keys) if direction == "out" else (g.in_ptr, self._in_keys)
        offset = np.clip(cutoffs - self._t0, 0, self._span - 1)
        end = np.searchsorted(keys, nodes * self._span + offset, side="left")
        start = np.maximum(ptr[nodes], end - cap)
        return start, end

    def candidates(
        self,
        nodes: np.ndarray,
        cutoffs: np.ndarray,
        *,
        direction: str,
        cap: int,
        edge_types: np.ndarray | None = None,
    ) -> Candidates:
        """Visible edges (`ts < cutoff`) of each `(nodes[q], cutoffs[q])`, the `cap` most
        recent per direction, optionally only some edge type codes."""
        g = self.graph
        nodes = np.asarray(nodes, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        parts = []
        for d in ("out", "in"):
            if direction not in (d, "both"):
                continue
            start, end = self._runs(d, nodes, cutoffs, cap)
            counts = end - start
            query = np.repeat(np.arange(len(nodes), dtype=np.int64), counts)
            first = np.repeat(start - np.concatenate([[0], np.cumsum(counts)[:-1]]), counts)
            pos = first + np.arange(len(query), dtype=np.int64)
            edge = (g.out_eid if d == "out" else g.in_eid)[pos]
            other = (g.dst if d == "out" else g.src)[edge]
            parts.append((query, edge, other))
        query = np.concatenate([p[0] for p in parts])
        edge = np.concatenate([p[1] for p in parts])
        other = np.concatenate([p[2] for p in parts])
        if edge_types is not None:
            keep = np.isin(g.etype[edge], edge_types)
            query, edge, other = query[keep], edge[keep], other[keep]
        order = np.argsort(query, kind="stable")
        query, edge, other = query[order], edge[order], other[order]
        ptr = np.zeros(len(nodes) + 1, dtype=np.int64)
        np.cumsum(np.bincount(query, minlength=len(nodes)), out=ptr[1:])
        return Candidates(query=query, edge=edge, other=other, ptr=ptr)
