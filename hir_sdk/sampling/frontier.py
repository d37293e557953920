"""Hop-by-hop expansion, shared by the strategies that draw edges per frontier node
(importance, uniform): each hop draws edges of the nodes the previous hop reached for
the first time, and the nodes they reach for the first time form the next frontier.

Every (subgraph, node) is listed once, as an entry, the hop it was first reached; a drawn
edge names its two ends by entry, so assembling the subgraphs needs no lookup by node or
by edge id. The reached set is kept as sorted codes `slot * num_nodes + node`, each with
its entry.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.stable_sort import stable_sort
from hir_sdk.sampling.subgraphs import EntryEdges, Subgraphs, assemble_entries


@dataclass(frozen=True)
class Drawn:
    """The edges one hop drew: row `i` was drawn by frontier entry `row[i]`."""

    row: np.ndarray  # (D,) index into the hop's frontier
    edge: np.ndarray  # (D,) edge id
    other: np.ndarray  # (D,) the far end
    outward: np.ndarray  # (D,) bool: the frontier node is the edge's source
    etype: np.ndarray  # (D,) type code
    ts: np.ndarray  # (D,) seconds
    weight: np.ndarray  # (D,) weight decayed to the anchor's cutoff
    priority: np.ndarray  # (D,) >= 0, smaller first: float64, or integers below the fan-out


@dataclass(frozen=True)
class Visited:
    """Every (subgraph, node) reached so far: sorted codes and the entry of each."""

    code: np.ndarray
    entry: np.ndarray


@dataclass(frozen=True)
class Reached:
    """Nodes first reached by a hop, one entry per (subgraph, node) in code order, with the
    best (smallest) priority among the edges that reached it, and the entry of every drawn
    edge's far end."""

    slot: np.ndarray  # (F,) subgraph
    node: np.ndarray  # (F,) global node index
    priority: np.ndarray  # (F,) the dtype of the drawn edges' priorities
    far_entry: np.ndarray  # (D,) entry of each drawn edge's far end
    visited: Visited


def reach(
    slot: np.ndarray,
    other: np.ndarray,
    priority: np.ndarray,
    visited: Visited,
    n: int,
    last: bool = False,
) -> Reached:
    """Of the drawn edges' far ends (`slot`, `other`), those not in `visited`; they become
    entries numbered from `len(visited.code)` on. After the `last` hop nothing searches
    the visited set again, so it is not extended."""
    code, order = stable_sort(slot * n + other)
    start = np.diff(code, prepend=-1) != 0  # codes are >= 0
    first = np.flatnonzero(start)
    unique = code[first]
    best = np.minimum.reduceat(priority[order], first) if len(first) else priority[:0]
    pos = np.searchsorted(visited.code, unique)  # sorted needles: one pass
    seen = np.zeros(len(unique), dtype=bool)
    inside = np.flatnonzero(pos < len(visited.code))
    seen[inside] = visited.code[pos[inside]] == unique[inside]
    fresh = np.flatnonzero(~seen)
    entry = np.empty(len(unique), dtype=np.int64)
    entry[seen] = visited.entry[pos[seen]]
    entry[fresh] = len(visited.code) + np.arange(len(fresh))
    far_entry = np.empty(len(code), dtype=np.int64)
    far_entry[order] = entry[np.cumsum(start) - 1]
    f_code = unique[fresh]
    merged = visited
    if not last:
        merged = Visited(
            np.insert(visited.code, pos[fresh], f_code),
            np.insert(visited.entry, pos[fresh], entry[fresh]),
        )
    return Reached(f_code // n, f_code % n, best[fresh], far_entry, merged)


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
    node_slot, node, priorities = [slots], [anchors], []
    drawn_parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, Drawn]] = []
    visited = Visited(slots * n + anchors, slots.copy())  # sorted: slot-major codes
    frontier_slot, frontier, frontier_base = slots, anchors, 0
    for hop, fanout in enumerate(fanouts):
        if len(frontier) == 0:
            break
        drawn = draw(frontier_slot, frontier, fanout)
        slot = frontier_slot[drawn.row]
        last = hop == len(fanouts) - 1
        reached = reach(slot, drawn.other, drawn.priority, visited, n, last)
        drawn_parts.append((slot, frontier_base + drawn.row, reached.far_entry, drawn))
        frontier_base = len(visited.code)
        frontier_slot, frontier, visited = reached.slot, reached.node, reached.visited
        node_slot.append(frontier_slot)
        node.append(frontier)
        priorities.append(reached.priority)
    return assemble_entries(
        anchors,
        cutoffs,
        np.concatenate(node_slot),
        np.concatenate(node),
        _ranks(priorities, batch, max(fanouts, default=1)),
        _entry_edges(drawn_parts),
        max_nodes,
    )


def _ranks(priorities: list[np.ndarray], batch: int, span: int) -> np.ndarray:
    """Every entry's rank: the anchors first, then by hop, then by the best priority
    that reached the node within its hop. Where every hop's priorities are integers
    (draw steps, below `span`), the ranks are integers in the same order, which sort
    with the slot in one key."""
    if all(np.issubdtype(p.dtype, np.integer) for p in priorities):
        hops = [(hop + 1) * span + p for hop, p in enumerate(priorities)]
        return np.concatenate([np.zeros(batch, dtype=np.int64), *hops])
    hops = [hop + p / (1.0 + p) for hop, p in enumerate(priorities)]
    return np.concatenate([np.full(batch, -1.0), *hops])


def _entry_edges(parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, Drawn]]) -> EntryEdges:
    """The drawn edges of every hop, oriented: source and destination entries."""

    def joined(values: list[np.ndarray], dtype: type) -> np.ndarray:
        return np.concatenate(values) if values else np.zeros(0, dtype=dtype)

    slot = joined([p[0] for p in parts], np.int64)
    near = joined([p[1] for p in parts], np.int64)
    far = joined([p[2] for p in parts], np.int64)
    outward = joined([p[3].outward for p in parts], np.bool_)
    return EntryEdges(
        slot=slot,
        src=np.where(outward, near, far),
        dst=np.where(outward, far, near),
        edge=joined([p[3].edge for p in parts], np.int64),
        etype=joined([p[3].etype for p in parts], np.int16),
        ts=joined([p[3].ts for p in parts], np.int64),
        weight=joined([p[3].weight for p in parts], np.float64),
    )
