"""Structural encodings of sampled subgraphs: what the graph transformer's attention biases
and node inputs are made of.

Per subgraph (treated as undirected for distances and walks):
- `spd`: shortest-path distance between all node pairs, capped (`far` beyond the cap or
  unreachable), by breadth-first frontier expansion with batched boolean matrix products;
- `hop`: the distance from the anchor (row 0 of `spd`);
- `rw`: random-walk landing probabilities, `diag(P^k)` for k = 1..K with `P = D^-1 A`;
- node types (for node-type-pair biases) and, for direct edges, their type, decayed
  weight and time to the cutoff in log2-hour buckets.

Everything is computed on padded `(G, n, n)` stacks in float32, `G` subgraphs of similar
size at a time, `n` the largest of them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.ranges import ranges
from hir_sdk.sampling.subgraphs import Subgraphs

AGE_BUCKETS = 16  # log2(1 + hours): 0 .. 15, the last bucket open-ended
SIZE_GROUP = 64  # subgraphs padded together by `encode`


@dataclass(frozen=True)
class EncodingConfig:
    rw_steps: int = 8
    max_distance: int = 4  # distances above it (and unreachable pairs) get max_distance + 1

    def __post_init__(self) -> None:
        if self.rw_steps < 1 or self.max_distance < 1:
            raise ValueError("rw_steps and max_distance must be >= 1")

    @property
    def far(self) -> int:
        return self.max_distance + 1


@dataclass(frozen=True)
class Encodings:
    """Encodings of one `Subgraphs` batch; token arrays follow `Subgraphs.nodes`."""

    node_type: np.ndarray  # (T,) type code
    hop: np.ndarray  # (T,) int8 distance from the anchor (capped)
    rw: np.ndarray  # (T, K) float32 landing probabilities
    spd: np.ndarray  # (sum n_b^2,) int8, subgraph b's row-major block at spd_offsets[b]
    spd_offsets: np.ndarray  # (B+1,)
    edge_age_bucket: np.ndarray  # (E,) int8

    def spd_of(self, b: int, n: int) -> np.ndarray:
        return self.spd[self.spd_offsets[b] : self.spd_offsets[b + 1]].reshape(n, n)


def age_buckets(age_s: np.ndarray) -> np.ndarray:
    """Time to the cutoff in log2(1 + hours) buckets, capped at `AGE_BUCKETS - 1`."""
    hours = np.maximum(np.asarray(age_s, dtype=np.float64), 0) / 3600.0
    return np.minimum(np.floor(np.log2(1.0 + hours)), AGE_BUCKETS - 1).astype(np.int8)


def padded_adjacency(
    sub: Subgraphs, group: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(G, n, n) symmetric 0/1 float32 adjacency and (G, n) validity mask of the
    subgraphs `group` (default: all, in order), padded to the largest of them."""
    group = np.arange(sub.batch_size) if group is None else np.asarray(group)
    sizes = sub.sizes()[group]
    n_max = int(sizes.max(initial=1))
    at = np.full(sub.batch_size, -1, dtype=np.int64)
    at[group] = np.arange(len(group))
    slot = at[np.repeat(np.arange(sub.batch_size), np.diff(sub.edge_offsets))]
    edge = slot >= 0
    adj = np.zeros((len(group), n_max, n_max), dtype=np.float32)
    adj[slot[edge], sub.edge_src[edge], sub.edge_dst[edge]] = 1.0
    adj[slot[edge], sub.edge_dst[edge], sub.edge_src[edge]] = 1.0
    idx = np.arange(n_max)
    adj[:, idx, idx] = 0.0  # self-loops carry no structure
    mask = idx[None, :] < sizes[:, None]
    return adj, mask


def shortest_paths(adj: np.ndarray, mask: np.ndarray, max_distance: int) -> np.ndarray:
    """(B, N, N) int8 capped shortest-path distances; `max_distance + 1` = far."""
    far = max_distance + 1
    batch, n, _ = adj.shape
    eye = np.broadcast_to(np.eye(n, dtype=bool), (batch, n, n)) & mask[:, :, None]
    dist = np.where(eye, 0, far).astype(np.int8)
    reached = eye.copy()
    frontier = eye.astype(np.float32)
    for d in range(1, max_distance + 1):
        nxt = (np.matmul(frontier, adj) > 0) & ~reached
        if not nxt.any():
            break
        dist[nxt] = d
        reached |= nxt
        frontier = nxt.astype(np.float32)
    return dist


def landing_probabilities(adj: np.ndarray, steps: int) -> np.ndarray:
    """(B, N, K) `diag(P^k)`, k = 1..K, for the random walk `P = D^-1 A`."""
    deg = adj.sum(axis=2, keepdims=True)
    walk = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    power = walk.copy()
    out = np.empty(adj.shape[:2] + (steps,), dtype=np.float32)
    for k in range(steps):
        out[:, :, k] = np.diagonal(power, axis1=1, axis2=2)
        if k + 1 < steps:
            power = np.matmul(power, walk)
    return out


def walk_encodings(
    adj: np.ndarray, mask: np.ndarray, max_distance: int, steps: int
) -> tuple[np.ndarray, np.ndarray]:
    """`(shortest_paths(adj, mask, max_distance), landing_probabilities(adj, steps))`, the
    same arrays, from one sequence of walk matrix powers.

    `P^k[i, j] > 0` exactly when some walk of length k joins i and j (its terms are
    products of positive transition probabilities, at least `N^-k`, far from underflow),
    so the distance is the first k with a positive entry: the powers the landing
    probabilities need give the distances too, without the breadth-first products.
    """
    far = max_distance + 1
    batch, n, _ = adj.shape
    deg = adj.sum(axis=2, keepdims=True)
    walk = np.divide(adj, deg, out=np.zeros_like(adj), where=deg > 0)
    power = walk.copy()
    rw = np.empty((batch, n, steps), dtype=np.float32)
    dist = np.full((batch, n, n), far, dtype=np.int8)
    idx = np.arange(n)
    dist[:, idx, idx] = np.where(mask, 0, far)
    for k in range(max(steps, max_distance)):
        if k < steps:
            rw[:, :, k] = np.diagonal(power, axis1=1, axis2=2)
        if k < max_distance:
            dist[(power > 0) & (dist == far)] = k + 1
        if k + 1 < max(steps, max_distance):
            power = np.matmul(power, walk)
    return dist, rw


def encode(graph: TemporalGraph, sub: Subgraphs, config: EncodingConfig | None = None) -> Encodings:
    """The encodings of every subgraph of `sub`. Subgraphs are padded in groups of
    `SIZE_GROUP` of similar size (sorted by size), not all to the largest: the walk-matrix
    powers cost the cube of the padded size."""
    config = config or EncodingConfig()
    sizes = sub.sizes().astype(np.int64)
    batch = sub.batch_size
    spd_offsets = np.zeros(batch + 1, dtype=np.int64)
    np.cumsum(sizes**2, out=spd_offsets[1:])
    spd = np.empty(int(spd_offsets[-1]), dtype=np.int8)
    hop = np.empty(len(sub.nodes), dtype=np.int8)
    rw = np.empty((len(sub.nodes), config.rw_steps), dtype=np.float32)
    by_size = np.argsort(sizes, kind="stable")
    for first in range(0, batch, SIZE_GROUP):
        group = by_size[first : first + SIZE_GROUP]
        s = sizes[group]
        adj, mask = padded_adjacency(sub, group)
        dist, walks = walk_encodings(adj, mask, config.max_distance, config.rw_steps)
        # C order: subgraph by subgraph, row by row, as the flat outputs are laid out
        blocks = np.repeat(spd_offsets[group], s**2) + ranges(s**2)
        spd[blocks] = dist[mask[:, :, None] & mask[:, None, :]]
        tokens = np.repeat(sub.offsets[group], s) + ranges(s)
        hop[tokens] = dist[:, 0, :][mask]
        rw[tokens] = walks[mask]
    slot = np.repeat(np.arange(sub.batch_size), np.diff(sub.edge_offsets))
    return Encodings(
        node_type=graph.node_type_of(sub.nodes).astype(np.int64),
        hop=hop,
        rw=rw,
        spd=spd,
        spd_offsets=spd_offsets,
        edge_age_bucket=age_buckets(sub.cutoffs[slot] - sub.edge_ts),
    )
