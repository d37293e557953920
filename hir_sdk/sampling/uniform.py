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

from collections.abc import Callable

import numpy as np

from hir_sdk.sampling.adjacency import VisibleAdjacency
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.counter_rng import extend_hash, hash_keys, to_uniform
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
        small = np.int32 if int(d.max()) < 2**31 else np.int64
        # draw-major: the "already taken" test reduces over contiguous earlier draws
        pick = np.empty((k, big.size), dtype=small)
        for s in range(k):  # Floyd: t uniform in [0, j]; if already taken, take j
            j = (d - k + s).astype(small)
            t = np.minimum((ub[:, s] * (j + 1)).astype(small), j)
            taken = (pick[:s] == t).any(axis=0)
            pick[s] = np.where(taken, j, t)
        chosen[big] = pick.T
    return chosen, steps < np.minimum(degree, k)[:, None]


def _uniforms_where_needed(
    degree: np.ndarray, k: int, uniforms: Callable[[np.ndarray], np.ndarray]
) -> np.ndarray:
    """(F, k) uniforms for `floyd`: hashed only for the rows with more than k edges (the
    others take every edge and read none)."""
    u = np.zeros((len(degree), k))
    big = np.flatnonzero(degree > k)
    u[big] = uniforms(big)
    return u


def _draw_edges(
    adj: VisibleAdjacency,
    frontier: np.ndarray,
    cutoffs: np.ndarray,
    k: int,
    uniforms: Callable[[np.ndarray], np.ndarray],
    config: ViewConfig,
    edge_types: np.ndarray | None,
) -> Drawn:
    """Every drawn edge of the frontier, with its attributes (priority: the draw step);
    `uniforms(rows)` gives the (len(rows), k) uniforms of those frontier rows."""
    if edge_types is not None:  # filtered: list the visible edges, draw among them
        cand = adj.candidates(
            frontier,
            cutoffs,
            direction=config.direction,
            cap=config.max_candidates,
            edge_types=edge_types,
        )
        degree = np.diff(cand.ptr)
        offset, ok = floyd(degree, _uniforms_where_needed(degree, k, uniforms))
        row, draw = np.nonzero(ok)
        pos = cand.ptr[row] + offset[row, draw]
        return Drawn(
            row,
            cand.edge[pos],
            cand.other[pos],
            cand.outward[pos],
            cand.etype[pos],
            cand.ts(pos),
            cand.weight[pos],
            draw,
        )
    runs = adj.runs(frontier, cutoffs, direction=config.direction, cap=config.max_candidates)
    degree = sum(r.end - r.start for r in runs)
    offset, ok = floyd(degree, _uniforms_where_needed(degree, k, uniforms))
    row, draw = np.nonzero(ok)
    off = offset[row, draw]
    parts = []
    for r in runs:  # offsets walk the runs in order; the drawn edges' order is free
        length = (r.end - r.start)[row]
        here = np.flatnonzero(off < length)
        rows_here = row[here]
        key, edge, other, weight, etype = r.direction.read(r.start[rows_here] + off[here])
        age = r.query_key[rows_here] - key  # cutoff - ts
        outward = np.full(len(here), r.direction is adj.out)
        parts.append((rows_here, draw[here], edge, other, outward, etype, age, weight))
        keep = np.flatnonzero(off >= length)
        row, draw, off = row[keep], draw[keep], off[keep] - length[keep]
    row, draw, edge, other, outward, etype, age, weight = (
        np.concatenate(column) for column in zip(*parts, strict=True)
    )
    decayed = adj.graph.decayed(weight, age, etype)
    return Drawn(row, edge, other, outward, etype, cutoffs[row] - age, decayed, draw)


def sample_uniform(
    adj: VisibleAdjacency,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    config: ViewConfig,
    seed: int,
    edge_types: np.ndarray | None = None,
) -> Subgraphs:
    per_anchor = hash_keys(seed, anchors, cutoffs)  # the keys every draw shares

    def draw(frontier_slot: np.ndarray, frontier: np.ndarray, fanout: int) -> Drawn:
        steps = np.arange(fanout)

        def uniforms(rows: np.ndarray) -> np.ndarray:
            h = per_anchor[frontier_slot[rows], None]
            return to_uniform(extend_hash(h, frontier[rows, None], steps[None, :]))

        return _draw_edges(
            adj, frontier, cutoffs[frontier_slot], fanout, uniforms, config, edge_types
        )

    return hop_by_hop(adj.graph, anchors, cutoffs, config.fanout, config.max_nodes, draw)
