"""Random walks with restart from each anchor, vectorised over every walker of a batch.

Each of `walks` walkers per anchor takes `walk_length` steps; at each step it jumps back
to the anchor with probability `restart`, otherwise follows one of the current node's
visible edges (the `max_candidates` most recent before the cutoff) with probability
proportional to its time-decayed weight. Nodes are ranked by visit count (ties: the
earliest first visit); the traversed edges form the view's edges. Uniforms come from
hashing (seed, anchor, cutoff, walker, step), so views do not depend on batching.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.sampling.adjacency import VisibleAdjacency
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.counter_rng import uniform
from hir_sdk.sampling.subgraphs import Subgraphs, assemble


def sample_random_walks(
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
    walker_slot = np.repeat(np.arange(batch, dtype=np.int64), config.walks)
    walker = np.tile(np.arange(config.walks, dtype=np.int64), batch)
    current = anchors[walker_slot].copy()
    seen_slot, seen_node, seen_step = [np.arange(batch)], [anchors], [np.full(batch, -1)]
    edge_slot, edge = [], []
    a, c = anchors[walker_slot], cutoffs[walker_slot]
    for step in range(config.walk_length):
        restart = uniform(seed, a, c, walker, step, 0) < config.restart
        cand = adj.candidates(
            current, c, direction=config.direction, cap=config.max_candidates, edge_types=edge_types
        )
        w = cand.weight
        cum = np.cumsum(w)
        base = np.concatenate([[0.0], cum])[cand.ptr[:-1]]
        total = np.concatenate([[0.0], cum])[cand.ptr[1:]] - base
        stuck = total <= 0
        target = base + uniform(seed, a, c, walker, step, 1) * total
        pick = np.searchsorted(cum, target, side="right")
        pick = np.clip(pick, cand.ptr[:-1], np.maximum(cand.ptr[1:] - 1, cand.ptr[:-1]))
        move = ~restart & ~stuck
        moved = np.flatnonzero(move)
        chosen = pick[moved]
        edge_slot.append(walker_slot[moved])
        edge.append(cand.edge[chosen])
        current = np.where(move, 0, a)
        current[moved] = cand.other[chosen]
        seen_slot.append(walker_slot[moved])
        seen_node.append(cand.other[chosen])
        seen_step.append(np.full(len(moved), step))
    slot = np.concatenate(seen_slot)
    node = np.concatenate(seen_node)
    first_step = np.concatenate(seen_step)
    code = slot * n + node
    uniq, inverse, visits = np.unique(code, return_inverse=True, return_counts=True)
    first = np.full(len(uniq), np.iinfo(np.int64).max)
    np.minimum.at(first, inverse, first_step)
    u_slot, u_node = uniq // n, uniq % n
    is_anchor = u_node == anchors[u_slot]
    # rank: anchor first, then most visited, then earliest first visit
    rank = np.where(is_anchor, -np.inf, -visits + first / (config.walk_length + 1.0))
    return assemble(
        graph,
        anchors,
        cutoffs,
        u_slot,
        u_node,
        rank,
        np.concatenate(edge_slot) if edge_slot else np.zeros(0, np.int64),
        np.concatenate(edge) if edge else np.zeros(0, np.int64),
        config.max_nodes,
    )
