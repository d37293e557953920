"""Importance-prioritized neighbourhood sampling, vectorised over a batch of anchors.

Hop by hop, every frontier node keeps `fanout[h]` of its visible edges, drawn without
replacement with probability proportional to the edge's time-decayed weight at the
anchor's cutoff (Efraimidis-Spirakis: the k smallest keys `-log(u) / w`). The uniforms `u`
come from hashing (seed, anchor, cutoff, edge id), so a view depends only on its anchor
and cutoff: never on the batch it is in or on the worker that builds it. With the same
seed, a view with smaller fanouts and fewer hops picks a subset of a larger view's edges.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.sampling.adjacency import VisibleAdjacency
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.counter_rng import extend_hash, hash_keys, to_uniform
from hir_sdk.sampling.frontier import Drawn, hop_by_hop
from hir_sdk.sampling.subgraphs import Subgraphs


def _top_k(key: np.ndarray, ptr: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest finite keys within each query group (`ptr`, contiguous
    groups), ties by position; in no particular order (callers need the set). One padded
    (Q, widest group) table and a row-wise partition of its values: linear in the
    candidates, where a sort by (query, key) is not."""
    counts = np.diff(ptr)
    width = int(counts.max(initial=0))
    if width <= k:  # every finite key is chosen
        return np.flatnonzero(np.isfinite(key))
    owner = np.repeat(np.arange(len(counts)), counts)
    table = np.full((len(counts), width), np.inf)
    table[owner, np.arange(len(key)) - ptr[owner]] = key
    # a partition of the values (no index bookkeeping) gives each row's k-th smallest;
    # the keys up to it are the k smallest unless the k-th ties with keys left out
    kth = np.partition(table, k - 1, axis=1)[:, k - 1 : k]  # (Q, 1)
    chosen = (table <= kth) & np.isfinite(table)
    if (chosen.sum(axis=1) > k).any():  # a tie across the cut: ties go to the position
        order = np.lexsort((np.arange(len(key)), key, owner))
        rank = np.arange(len(order)) - ptr[owner[order]]
        return order[(rank < k) & np.isfinite(key[order])]
    row, col = np.nonzero(chosen)
    return ptr[row] + col


def sample_importance(
    adj: VisibleAdjacency,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    config: ViewConfig,
    seed: int,
    edge_types: np.ndarray | None = None,
) -> Subgraphs:
    per_anchor = hash_keys(seed, anchors, cutoffs)  # the keys every candidate shares

    def draw(frontier_slot: np.ndarray, frontier: np.ndarray, fanout: int) -> Drawn:
        cand = adj.candidates(
            frontier,
            cutoffs[frontier_slot],
            direction=config.direction,
            cap=config.max_candidates,
            edge_types=edge_types,
        )
        u = to_uniform(extend_hash(per_anchor[frontier_slot[cand.query]], cand.edge))
        w = cand.weight
        with np.errstate(divide="ignore"):
            key = np.where(w > 0, -np.log(u) / w, np.inf)
        chosen = _top_k(key, cand.ptr, fanout)
        return Drawn(
            cand.query[chosen],
            cand.edge[chosen],
            cand.other[chosen],
            cand.outward[chosen],
            cand.etype[chosen],
            cand.ts(chosen),
            cand.weight[chosen],
            key[chosen],
        )

    return hop_by_hop(adj.graph, anchors, cutoffs, config.fanout, config.max_nodes, draw)
