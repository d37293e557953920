"""Hop-by-hop expansion, shared by the strategies that draw edges per frontier node
(importance, uniform): each hop draws edges of the nodes the previous hop reached for
the first time, and the nodes they reach for the first time form the next frontier."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.subgraphs import Subgraphs, assemble
from hir_sdk.schema.node_index import MISSING, search_sorted


@dataclass(frozen=True)
class Drawn:
    """The edges one hop drew: row `i` was drawn by frontier entry `row[i]`."""

    row: np.ndarray  # (D,) index into the hop's frontier
    edge: np.ndarray  # (D,) edge id
    other: np.ndarray  # (D,) the far end
    priority: np.ndarray  # (D,) float64 >= 0, smaller first


@dataclass(frozen=True)
class Reached:
    """Nodes first reached by a hop, one entry per (subgraph, node), with the best
    (smallest) priority among the edges that reached it."""

    slot: np.ndarray  # (F,) subgraph
    node: np.ndarray  # (F,) global node index
    priority: np.ndarray  # (F,) float64
    visited: np.ndarray  # sorted `slot * num_nodes + node` of every node reached so far


def reach(
    slot: np.ndarray, other: np.ndarray, priority: np.ndarray, visited: np.ndarray, n: int
) -> Reached:
    """Of the drawn edges' far ends (`slot`, `other`), those not in `visited`."""
    code = slot * n + other
    fresh = search_sorted(visited, code) == MISSING
    code, priority = code[fresh], priority[fresh]
    order = np.argsort(code, kind="stable")
    code = code[order]
    first = np.flatnonzero(np.diff(code, prepend=-1))  # codes are >= 0
    f_code = code[first]
    f_priority = np.minimum.reduceat(priority[order], first) if len(first) else priority[:0]
    # both sorted and disjoint: a stable sort merges the two runs in linear time
    merged = np.sort(np.concatenate([visited, f_code]), kind="stable")
    return Reached(f_code // n, f_code % n, f_priority, merged)


def hop_by_hop(
    graph: TemporalGraph,
    anchors: np.ndarray,
    cutoffs: np.ndarray,
    fanouts: tuple[int, ...],
    max_nodes: int,
    draw: Callable[[np.ndarray, np.ndarray, int], Drawn],
) -> Subgraphs:
    """The view `draw(frontier_slot, frontier, fanout)` grows hop by hop: nodes rank by
    hop, then by the best priority that reached them."""
    n = graph.num_nodes
    batch = len(anchors)
    slots = np.arange(batch, dtype=np.int64)
    node_slot, node, rank = [slots], [anchors], [np.full(batch, -1.0)]
    edge_slot, edge = [], []
    visited = np.sort(slots * n + anchors)
    frontier_slot, frontier = slots, anchors
    for hop, fanout in enumerate(fanouts):
        if len(frontier) == 0:
            break
        drawn = draw(frontier_slot, frontier, fanout)
        slot = frontier_slot[drawn.row]
        edge_slot.append(slot)
        edge.append(drawn.edge)
        reached = reach(slot, drawn.other, drawn.priority, visited, n)
        frontier_slot, frontier, visited = reached.slot, reached.node, reached.visited
        node_slot.append(frontier_slot)
        node.append(frontier)
        p = reached.priority
        rank.append(hop + p / (1.0 + p))  # hop first, then priority within the hop
    return assemble(
        graph,
        anchors,
        cutoffs,
        np.concatenate(node_slot),
        np.concatenate(node),
        np.concatenate(rank),
        np.concatenate(edge_slot) if edge_slot else np.zeros(0, np.int64),
        np.concatenate(edge) if edge else np.zeros(0, np.int64),
        max_nodes,
    )
