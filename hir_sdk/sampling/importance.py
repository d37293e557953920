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
from hir_sdk.sampling.counter_rng import uniform
from hir_sdk.sampling.subgraphs import Subgraphs, assemble


def _top_k(query: np.ndarray, key: np.ndarray, ptr: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k smallest finite keys within each query group."""
    order = np.lexsort((key, query))
    rank = np.arange(len(order)) - ptr[query[order]]
    chosen = order[(rank < k) & np.isfinite(key[order])]
    return chosen


def sample_importance(
    adj: VisibleAdjacency,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    config: ViewConfig,
    seed: int,
    edge_types: np.ndarray | None = None,
) -> Subgraphs:
    graph = adj.graph
    n = graph.num_nodes
    batch = len(anchors)
    slots = np.arange(batch, dtype=np.int64)
    node_slot, node, rank = [slots], [anchors], [np.full(batch, -1.0)]
    edge_slot, edge = [], []
    visited = np.sort(slots * n + anchors)
    frontier_slot, frontier = slots, anchors
    for hop, fanout in enumerate(config.fanout):
        if len(frontier) == 0:
            break
        cand = adj.candidates(
            frontier,
            cutoffs[frontier_slot],
            direction=config.direction,
            cap=config.max_candidates,
            edge_types=edge_types,
        )
        slot = frontier_slot[cand.query]
        w = graph.decay_weights(cand.edge, cutoffs[slot])
        u = uniform(seed, anchors[slot], cutoffs[slot], cand.edge)
        with np.errstate(divide="ignore"):
            key = np.where(w > 0, -np.log(u) / w, np.inf)
        chosen = _top_k(cand.query, key, cand.ptr, fanout)
        c_slot, c_other, c_key = slot[chosen], cand.other[chosen], key[chosen]
        edge_slot.append(c_slot)
        edge.append(cand.edge[chosen])
        code = c_slot * n + c_other
        fresh = ~np.isin(code, visited)
        # one entry per new node: its best (smallest) key
        order = np.lexsort((c_key[fresh], code[fresh]))
        f_code, f_key = code[fresh][order], c_key[fresh][order]
        first = np.ones(len(f_code), dtype=bool)
        first[1:] = f_code[1:] != f_code[:-1]
        f_code, f_key = f_code[first], f_key[first]
        frontier_slot, frontier = f_code // n, f_code % n
        node_slot.append(frontier_slot)
        node.append(frontier)
        rank.append(hop + f_key / (1.0 + f_key))  # hop first, then priority within the hop
        visited = np.union1d(visited, f_code)
    return assemble(
        graph,
        anchors,
        cutoffs,
        np.concatenate(node_slot),
        np.concatenate(node),
        np.concatenate(rank),
        np.concatenate(edge_slot) if edge_slot else np.zeros(0, np.int64),
        np.concatenate(edge) if edge else np.zeros(0, np.int64),
        config.max_nodes,
    )
