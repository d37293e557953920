"""Visible edge runs: for many (node, cutoff) pairs at once, which of the node's edges are
dated before the cutoff, most recent first, capped.

Each CSR run lists a node's edges in time order, so `(node, ts)` over the run positions is
sorted: a search of `node * SPAN + cutoff` within each run (a vectorised bisection, which
touches only that run's memory) finds where its visible part ends. Hubs (an ad with 100k
impressions) keep only their `cap` most recent visible edges, which also carry most of
the time-decayed weight.

Per direction, the edges' ids, far ends, weights and types are also stored in CSR order,
one row per position (built lazily, once): a node's candidates are then contiguous rows,
not scattered reads of the edge arrays, which is where the time of sampling a large graph
goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.ranges import ranges


@dataclass(frozen=True)
class Candidates:
    """Flat candidate edges of many query pairs: query `q` owns rows `ptr[q]:ptr[q+1]`."""

    query: np.ndarray  # (C,) index of the query pair each candidate belongs to
    edge: np.ndarray  # (C,) edge id
    other: np.ndarray  # (C,) the other endpoint
    weight: np.ndarray  # (C,) float64, the edge's weight decayed to its query's cutoff
    ptr: np.ndarray  # (Q+1,)
    outward: np.ndarray  # (C,) bool: the query's node is the edge's source
    etype: np.ndarray  # (C,) type code
    age: np.ndarray  # (C,) seconds from the edge to its query's cutoff
    cutoff: np.ndarray  # (Q,) each query's cutoff

    def ts(self, rows: np.ndarray) -> np.ndarray:
        """The times of candidates `rows` (only those: samplers keep few)."""
        return self.cutoff[self.query[rows]] - self.age[rows]


@dataclass(frozen=True)
class Direction:
    """One direction's CSR with its edges' search keys and attributes in CSR order.

    A position's key and attributes share one row of `rows` (weight bits and type code
    packed in one int64), so reading a drawn edge touches one cache line where five
    separate arrays would touch five.
    """

    ptr: np.ndarray  # (N+1,)
    rows: np.ndarray  # (E, 4) int64: key, edge id, far end, float32 weight bits | type << 32

    @property
    def keys(self) -> np.ndarray:
        """(E,) node * span + (ts - t0), ascending (a view of `rows`)."""
        return self.rows[:, 0]

    @staticmethod
    def pack(
        keys: np.ndarray, eid: np.ndarray, far: np.ndarray, weight: np.ndarray, etype: np.ndarray
    ) -> np.ndarray:
        """The `rows` table of positions' key, edge id, far end, weight and type code."""
        bits = weight.astype(np.float32).view(np.uint32).astype(np.int64)
        return np.stack([keys, eid, far, bits | (etype.astype(np.int64) << 32)], axis=1)

    def read(self, pos: np.ndarray) -> tuple[np.ndarray, ...]:
        """(key, edge id, far end, float32 weight, int16 type code) at CSR positions
        `pos`."""
        row = np.take(self.rows, pos, axis=0)
        packed = row[:, 3]
        weight = (packed & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
        return row[:, 0], row[:, 1], row[:, 2], weight, (packed >> 32).astype(np.int16)


@dataclass(frozen=True)
class Runs:
    """Visible positions `start[q]:end[q]` of each query in `direction`'s CSR, and the
    search key of each query (`node * span + cutoff - t0`, unclipped)."""

    direction: Direction
    start: np.ndarray
    end: np.ndarray
    query_key: np.ndarray


def search_runs(keys: np.ndarray, lo: np.ndarray, hi: np.ndarray, target: np.ndarray):
    """First position in each `lo[q]:hi[q]` (ascending `keys`) whose key is >= `target[q]`
    (`np.searchsorted(side="left")` within the run), by bisection of every run at once."""
    lo, hi = lo.copy(), hi.copy()
    live = np.flatnonzero(lo < hi)
    while live.size:
        mid = (lo[live] + hi[live]) >> 1
        less = keys[mid] < target[live]
        lo[live] = np.where(less, mid + 1, lo[live])
        hi[live] = np.where(less, hi[live], mid)
        live = live[lo[live] < hi[live]]
    return lo


class VisibleAdjacency:
    """Time-sorted CSR in both directions with per-run search keys (built lazily)."""

    def __init__(self, graph: TemporalGraph) -> None:
        self.graph = graph
        self._t0 = int(graph.ts[0]) if graph.num_edges else 0
        self._span = (int(graph.ts[-1]) - self._t0 + 2) if graph.num_edges else 2

    def _direction(self, ptr: np.ndarray, eid: np.ndarray, far: np.ndarray) -> Direction:
        g = self.graph
        owner = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
        keys = owner * self._span + (g.ts[eid] - self._t0)
        return Direction(ptr, Direction.pack(keys, eid, far[eid], g.weight[eid], g.etype[eid]))

    @cached_property
    def out(self) -> Direction:
        return self._direction(self.graph.out_ptr, self.graph.out_eid, self.graph.dst)

    @cached_property
    def into(self) -> Direction:
        return self._direction(self.graph.in_ptr, self.graph.in_eid, self.graph.src)

    def directions(self, direction: str) -> list[Direction]:
        """The CSRs `direction` reads, "out" first; each is built on first use, so
        calling this before handing the sampler to threads builds them once."""
        out = [self.out] if direction in ("out", "both") else []
        return out + ([self.into] if direction in ("in", "both") else [])

    def runs(
        self, nodes: np.ndarray, cutoffs: np.ndarray, *, direction: str, cap: int
    ) -> list[Runs]:
        """Per direction of `direction` ("out" first): where the `cap` most recent edges of
        `nodes[q]` dated before `cutoffs[q]` sit; nothing is listed."""
        nodes = np.asarray(nodes, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        query_key = nodes * self._span + (cutoffs - self._t0)
        target = nodes * self._span + np.clip(cutoffs - self._t0, 0, self._span - 1)
        out = []
        for d in self.directions(direction):
            end = search_runs(d.keys, d.ptr[nodes], d.ptr[nodes + 1], target)
            out.append(Runs(d, np.maximum(d.ptr[nodes], end - cap), end, query_key))
        return out

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
        recent per direction (out, then in), optionally only some edge type codes, with
        their weights decayed to the cutoff."""
        runs = self.runs(nodes, cutoffs, direction=direction, cap=cap)
        counts = [r.end - r.start for r in runs]
        ptr = np.zeros(len(counts[0]) + 1, dtype=np.int64)
        np.cumsum(sum(counts), out=ptr[1:])
        size = int(ptr[-1])
        edge, other = np.empty(size, np.int64), np.empty(size, np.int64)
        etype, weight = np.empty(size, np.int16), np.empty(size, np.float32)
        age = np.empty(size, np.int64)
        outward = np.empty(size, dtype=bool)
        base = ptr[:-1].copy()  # each query's out edges first, then its in edges
        for r, count in zip(runs, counts, strict=True):
            owner = np.repeat(np.arange(len(count), dtype=np.int64), count)
            step = ranges(count)
            at, pos = base[owner] + step, r.start[owner] + step
            d = r.direction
            key, edge[at], other[at], weight[at], etype[at] = d.read(pos)
            age[at] = r.query_key[owner] - key  # cutoff - ts
            outward[at] = d is self.out
            base += count
        query = np.repeat(np.arange(len(ptr) - 1, dtype=np.int64), np.diff(ptr))
        if edge_types is not None:
            keep = np.isin(etype, edge_types)
            query, edge, other = query[keep], edge[keep], other[keep]
            etype, weight, age, outward = etype[keep], weight[keep], age[keep], outward[keep]
            ptr[1:] = np.cumsum(np.bincount(query, minlength=len(ptr) - 1))
        return Candidates(
            query=query,
            edge=edge,
            other=other,
            weight=self.graph.decayed(weight, age, etype),
            ptr=ptr,
            outward=outward,
            etype=etype,
            age=age,
            cutoff=np.asarray(cutoffs, dtype=np.int64),
        )
