"""Uniform temporal neighbour sampling, vectorised over a batch of anchors, without
listing any node's candidate edges.

The rule of PyG's temporal `NeighborLoader` (uniform, no replacement, disjoint per-anchor
subgraphs), with edges dated strictly before the anchor's cutoff: hop by hop, every node
first reached in the previous hop draws min(fanout[h], d) of its d visible edges (the
`max_candidates` most recent per direction) uniformly without replacement. The draw picks
offsets into the node's visible runs directly (Floyd's algorithm, one vectorised step per
draw), so its cost grows with the fan-out, not with the node's degree; with `edge_types`
the visible edges are listed and filtered first. Uniforms come from hashing (seed, anchor,
cutoff, node, draw), so a view depends only on its anchor and cutoff. Nodes rank by hop,
then by the first draw that reached them.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.sampling.adjacency import VisibleAdjacency
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.counter_rng import uniform
from hir_sdk.sampling.frontier import Drawn, hop_by_hop
from hir_sdk.sampling.subgraphs import Subgraphs


def floyd(degree: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(F, k) distinct offsets in [0, degree) per row, a uniform random subset of size
    min(k, degree) from (F, k) uniforms `u`, and the (F, k) mask of the drawn ones."""
    rows, k = u.shape
    steps = np.arange(k)
    chosen = np.broadcast_to(steps, (rows, k)).copy()  # rows with degree <= k: all
    big = np.flatnonzero(degree > k)
    if big.size:
        d, ub = degree[big], u[big]
        pick = np.empty((big.size, k), dtype=np.int64)
        for s in range(k):  # Floyd: t uniform in [0, j]; if already taken, take j
            j = d - k + s
            t = np.minimum((ub[:, s] * (j + 1)).astype(np.int64), j)
            taken = (pick[:, :s] == t[:, None]).any(axis=1)
            pick[:, s] = np.where(taken, j, t)
        chosen[big] = pick
    return chosen, steps < np.minimum(degree, k)[:, None]


def _draw_edges(
    adj: VisibleAdjacency,
    frontier: np.ndarray,
    cutoffs: np.ndarray,
    u: np.ndarray,
    config: ViewConfig,
    edge_types: np.ndarray | None,
) -> Drawn:
    """Every drawn edge of the frontier, with its attributes (priority: the draw step)."""
    if edge_types is not None:  # filtered: list the visible edges, draw among them
        cand = adj.candidates(
            frontier,
            cutoffs,
            direction=config.direction,
            cap=config.max_candidates,
            edge_types=edge_types,
        )
        offset, ok = floyd(np.diff(cand.ptr), u)
        row, draw = np.nonzero(ok)
        pos = cand.ptr[row] + offset[row, draw]
        return Drawn(
            row,
            cand.edge[pos],
            cand.other[pos],
            cand.outward[pos],
            cand.etype[pos],
            cand.ts[pos],
            cand.weight[pos],
            draw.astype(np.float64),
        )
    runs = adj.runs(frontier, cutoffs, direction=config.direction, cap=config.max_candidates)
    degree = sum(r.end - r.start for r in runs)
    offset, ok = floyd(degree, u)
    row, draw = np.nonzero(ok)
    off = offset[row, draw]
    size = len(row)
    edge, other = np.empty(size, np.int64), np.empty(size, np.int64)
    etype, weight = np.empty(size, np.int16), np.empty(size, np.float32)
    age, outward = np.empty(size, np.int64), np.empty(size, dtype=bool)
    for r in runs:  # offsets walk the runs in order
        length = (r.end - r.start)[row]
        here = np.flatnonzero((off >= 0) & (off < length))
        pos = r.start[row[here]] + off[here]
        d = r.direction
        edge[here], other[here], weight[here], etype[here] = d.read(pos)
        age[here] = r.query_key[row[here]] - d.keys[pos]  # cutoff - ts
        outward[here] = d is adj.out
        off = off - length
    decayed = adj.graph.decayed(weight, age, etype)
    return Drawn(
        row, edge, other, outward, etype, cutoffs[row] - age, decayed, draw.astype(np.float64)
    )


def sample_uniform(
    adj: VisibleAdjacency,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    config: ViewConfig,
    seed: int,
    edge_types: np.ndarray | None = None,
) -> Subgraphs:
    def draw(frontier_slot: np.ndarray, frontier: np.ndarray, fanout: int) -> Drawn:
        steps = np.arange(fanout)
        a, c = anchors[frontier_slot, None], cutoffs[frontier_slot, None]
        u = uniform(seed, a, c, frontier[:, None], steps[None, :])
        return _draw_edges(adj, frontier, cutoffs[frontier_slot], u, config, edge_types)

    return hop_by_hop(adj.graph, anchors, cutoffs, config.fanout, config.max_nodes, draw)
