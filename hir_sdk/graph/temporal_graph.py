"""The typed, weighted, time-decayed heterogeneous graph that every later stage reads.

Notable:
- global node indices are contiguous per node type (`type_offsets`), and within a type
  follow the sorted node ids, so id -> index is one binary search;
- edges are stored once, in canonical order (by time, same-time edges by edge type,
  source, destination and weight: `schema.edge_order`), so the graph as of a cutoff is
  simply the edge prefix `[0, k)`: views never copy;
- CSR adjacency in both directions lists each node's edges in time order, so
  `neighbors(node, before=t)` is a slice plus one binary search;
- edge weights decay with a half-life per edge type: `w * 2 ** (-(t - ts) / half_life)`;
- the numeric columns of `nodes.parquet` ride along as `attributes` (N, A), NaN where a
  node has no value: static properties, the same at every cutoff.

```
node index:   | user 0..U-1 | ad U..U+D-1 | advertiser ... |     type_offsets = [0, U, U+D, ...]
edges (E):    src  dst  etype  ts  weight                        sorted by ts
out CSR:      out_ptr (N+1)  out_eid (E)   edges of node v: out_eid[out_ptr[v]:out_ptr[v+1]]
in CSR:       in_ptr  (N+1)  in_eid  (E)   (each run in time order)
```
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.schema.columns import listed
from hir_sdk.schema.manifest import DAY, DatasetManifest, EdgeType
from hir_sdk.schema.node_index import MISSING, search_sorted

UNKNOWN_TIME = np.iinfo(np.int64).min  # created_ts of nodes without one: always existed
DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True)
class Neighbors:
    """Edges incident to one node, in time order: the other endpoint and edge attributes."""

    node: np.ndarray  # (k,) global index of the other endpoint
    edge: np.ndarray  # (k,) edge id (position in canonical order)
    etype: np.ndarray  # (k,) edge type code
    ts: np.ndarray  # (k,) seconds
    weight: np.ndarray  # (k,) raw weight

    def __len__(self) -> int:
        return len(self.edge)


@dataclass(frozen=True, eq=False)
class TemporalGraph:
    """See the module docstring for the layout. Build with `hir_sdk.graph.build_graph`."""

    manifest: DatasetManifest
    node_ids: tuple[np.ndarray, ...]  # per node type, sorted; local index = position
    type_offsets: np.ndarray  # (T+1,) int64
    created_ts: np.ndarray  # (N,) int64, UNKNOWN_TIME where not given
    src: np.ndarray  # (E,) int64
    dst: np.ndarray  # (E,) int64
    etype: np.ndarray  # (E,) int16, position in manifest.edge_types
    ts: np.ndarray  # (E,) int64, non-decreasing
    weight: np.ndarray  # (E,) float32
    out_ptr: np.ndarray  # (N+1,) int64
    out_eid: np.ndarray  # (E,) int64
    in_ptr: np.ndarray  # (N+1,) int64
    in_eid: np.ndarray  # (E,) int64
    fingerprint: str
    attribute_names: tuple[str, ...] = ()  # the numeric node columns, in file order
    attributes: np.ndarray | None = None  # (N, len(attribute_names)) float64, NaN = none

    # ---- sizes and types -------------------------------------------------------------
    @property
    def node_types(self) -> tuple[str, ...]:
        return self.manifest.node_types

    @property
    def edge_types(self) -> tuple[EdgeType, ...]:
        return self.manifest.edge_type_keys

    @property
    def num_nodes(self) -> int:
        return int(self.type_offsets[-1])

    @property
    def num_edges(self) -> int:
        return len(self.ts)

    def num_nodes_of(self, node_type: str) -> int:
        t = self.type_code(node_type)
        return int(self.type_offsets[t + 1] - self.type_offsets[t])

    def type_code(self, node_type: str) -> int:
        code = self.manifest.node_type_index.get(node_type)
        if code is None:
            raise InputError(
                f"unknown node type {node_type!r}; the graph has {listed(self.node_types)}"
            )
        return code

    @cached_property
    def _relation_codes(self) -> dict[str, list[int]]:
        """Relation name -> codes of the edge types with that name (dict: O(1) lookups)."""
        codes: dict[str, list[int]] = {}
        for code, (_, rel, _) in enumerate(self.edge_types):
            codes.setdefault(rel, []).append(code)
        return codes

    def edge_type_code(self, edge_type: EdgeType | str) -> int:
        """Code of a `(src, rel, dst)` triple, or of a relation name that names one triple."""
        keys = self.edge_types
        if isinstance(edge_type, tuple):
            code = self.manifest.edge_type_index.get(edge_type)
            if code is not None:
                return code
        else:
            hits = self._relation_codes.get(edge_type, [])
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                raise InputError(
                    f"edge type {edge_type!r} is ambiguous; use one of "
                    f"{listed([keys[i] for i in hits])}"
                )
        raise InputError(f"unknown edge type {edge_type!r}; the graph has {listed(keys)}")

    def node_type_of(self, index: np.ndarray | int) -> np.ndarray:
        """Type code of global node indices."""
        return np.searchsorted(self.type_offsets, index, side="right") - 1

    # ---- ids <-> indices -------------------------------------------------------------
    def index(self, node_type: str, ids: object) -> np.ndarray:
        """Global indices of `ids` of one node type; unknown ids raise `InputError`."""
        t = self.type_code(node_type)
        known = self.node_ids[t]
        wanted = np.atleast_1d(
            np.asarray(ids, dtype=known.dtype if known.dtype.kind != "U" else str)
        )
        pos = search_sorted(known, wanted)
        if (pos == MISSING).any():
            raise InputError(f"unknown {node_type} ids {wanted[pos == MISSING][:5].tolist()}")
        return pos + self.type_offsets[t]

    def node_id(self, index: int) -> tuple[str, object]:
        """`(node_type, node_id)` of one global index."""
        t = int(self.node_type_of(index))
        return self.node_types[t], self.node_ids[t][index - self.type_offsets[t]].item()

    def node_ids_of(self, index: np.ndarray) -> np.ndarray:
        """Node ids (within their types) of many global indices, vectorised."""
        index = np.asarray(index, dtype=np.int64)
        types = self.node_type_of(index)
        ints = all(ids.dtype.kind in "iu" for ids in self.node_ids)
        out = np.empty(len(index), dtype=np.int64 if ints else object)
        for t in np.unique(types):
            mask = types == t
            out[mask] = self.node_ids[t][index[mask] - self.type_offsets[t]]
        return out

    # ---- adjacency -------------------------------------------------------------------
    def _run(self, ptr: np.ndarray, eid: np.ndarray, node: int, before: int | None) -> np.ndarray:
        lo, hi = int(ptr[node]), int(ptr[node + 1])
        edges = eid[lo:hi]
        if before is not None:
            edges = edges[: int(np.searchsorted(self.ts[edges], before, side="left"))]
        return edges

    def neighbors(
        self,
        node: int,
        *,
        before: int | None = None,
        edge_types: object = None,
        direction: str = "out",
    ) -> Neighbors:
        """Edges of `node` with `ts < before` (all when None), optionally only some edge
        types (codes, triples or relation names), in time order."""
        if direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {direction!r}")
        if not 0 <= node < self.num_nodes:
            raise InputError(f"node index {node} out of range [0, {self.num_nodes})")
        parts, others = [], []
        if direction in ("out", "both"):
            edges = self._run(self.out_ptr, self.out_eid, node, before)
            parts.append(edges)
            others.append(self.dst[edges])
        if direction in ("in", "both"):
            edges = self._run(self.in_ptr, self.in_eid, node, before)
            parts.append(edges)
            others.append(self.src[edges])
        edges, other = np.concatenate(parts), np.concatenate(others)
        if len(parts) > 1:
            order = np.argsort(edges, kind="stable")  # edge ids are in time order
            edges, other = edges[order], other[order]
        if edge_types is not None:
            keep = np.isin(self.etype[edges], self.edge_type_codes(edge_types))
            edges, other = edges[keep], other[keep]
        return Neighbors(
            node=other,
            edge=edges,
            etype=self.etype[edges],
            ts=self.ts[edges],
            weight=self.weight[edges],
        )

    def edge_type_codes(self, edge_types: object) -> np.ndarray:
        """Normalize one or several edge types (codes, triples, relation names) to codes."""
        if isinstance(edge_types, (str, tuple, int, np.integer)):
            edge_types = [edge_types]
        codes = [
            int(e) if isinstance(e, (int, np.integer)) else self.edge_type_code(e)
            for e in edge_types
        ]  # type: ignore[union-attr]
        return np.asarray(codes, dtype=np.int16)

    def role_codes(self, *roles: str) -> np.ndarray:
        """(k,) int16 codes of the edge types whose funnel role is one of `roles`
        (exposure, click, engagement, conversion, structural), in manifest order."""
        specs = [s for r in roles for s in self.manifest.edge_types_with_role(r)]
        return self.edge_type_codes([s.key for s in specs])

    # ---- time ------------------------------------------------------------------------
    @cached_property
    def half_life_s(self) -> np.ndarray:
        """(num edge types,) decay half-life in seconds."""
        return np.asarray([spec.half_life_days * DAY for spec in self.manifest.edge_types])

    def decay_weights(self, edges: np.ndarray, at: int | np.ndarray) -> np.ndarray:
        """Time-decayed weights `w * 2 ** (-(at - ts) / half_life)` of `edges` seen at time
        `at` (one time, or one per edge); edges must not be dated after it."""
        edges = np.asarray(edges)
        age = np.asarray(at) - self.ts[edges]
        if (age < 0).any():
            raise ValueError("decay_weights: edges dated after the time they are seen at")
        return self.decayed(self.weight[edges], age, self.etype[edges])

    def decayed(self, weight: np.ndarray, age: np.ndarray, etype: np.ndarray) -> np.ndarray:
        """`weight * 2 ** (-age / half_life)` per edge, from its weight, age in seconds
        and type code, for callers that hold those already (no gather by edge id)."""
        return weight * np.exp2(-age / self.half_life_s[etype])

    def edges_before(self, cutoff: int) -> int:
        """Number of edges with `ts < cutoff`: they are exactly edge ids `[0, k)`."""
        return int(np.searchsorted(self.ts, cutoff, side="left"))

    def window(self, name: str) -> slice:
        """Edge ids of a chronological window: "train", "validation" or "test"."""
        lo, hi = self.manifest.time.window(name)
        return slice(self.edges_before(lo), self.edges_before(hi))

    def at(self, cutoff: int) -> GraphView:
        """The graph as seen at `cutoff`: edges and nodes dated at or after it are hidden."""
        return GraphView(self, int(cutoff))


@dataclass(frozen=True)
class GraphView:
    """A `TemporalGraph` as of a cutoff time (exclusive): nothing at or after it is visible.

    Edge ids of the view are the prefix `[0, num_edges)` of the graph's, so edge arrays are
    slices of the graph's arrays, never copies.
    """

    graph: TemporalGraph
    cutoff: int

    @cached_property
    def num_edges(self) -> int:
        return self.graph.edges_before(self.cutoff)

    @property
    def src(self) -> np.ndarray:
        return self.graph.src[: self.num_edges]

    @property
    def dst(self) -> np.ndarray:
        return self.graph.dst[: self.num_edges]

    @property
    def etype(self) -> np.ndarray:
        return self.graph.etype[: self.num_edges]

    @property
    def ts(self) -> np.ndarray:
        return self.graph.ts[: self.num_edges]

    @property
    def weight(self) -> np.ndarray:
        return self.graph.weight[: self.num_edges]

    def node_exists(self) -> np.ndarray:
        """(N,) bool: nodes created before the cutoff (or with no creation time)."""
        return self.graph.created_ts < self.cutoff

    def degree(self) -> np.ndarray:
        """(N,) int64: edges incident to each node (either direction) before the cutoff."""
        n = self.graph.num_nodes
        return np.bincount(self.src, minlength=n) + np.bincount(self.dst, minlength=n)

    def neighbors(
        self,
        node: int,
        *,
        before: int | None = None,
        edge_types: object = None,
        direction: str = "out",
    ) -> Neighbors:
        """`TemporalGraph.neighbors`, never past the view's cutoff."""
        limit = self.cutoff if before is None else min(before, self.cutoff)
        return self.graph.neighbors(node, before=limit, edge_types=edge_types, direction=direction)

    def decay_weights(self, edges: np.ndarray) -> np.ndarray:
        """Edge weights decayed to the cutoff."""
        edges = np.asarray(edges)
        if (edges >= self.num_edges).any():
            raise ValueError("decay_weights: edge not visible at this cutoff")
        return self.graph.decay_weights(edges, self.cutoff)
