"""Which advertiser (or other owner type) each node belongs to, through structural edges.

Attribution and advertiser-level features need "the ad's advertiser": in an ads log that
is a path of structural edges (ad <- campaign <- advertiser, product <- advertiser,
pixel <- advertiser). Owners are found by breadth-first label propagation from the owner
nodes over structural edges in both directions, vectorised over all edges per hop. Nodes
of the owner type own themselves; nodes reachable from several owners take the one met
first (ties: the lowest index); unreachable nodes get -1.

Structural edges are treated as static metadata, dated when the entity first appears in
the log; an entity cannot be exposed or converted on before it exists, so no later event
leaks through them.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph

NO_OWNER = -1
MAX_HOPS = 4


def owner_of_nodes(graph: TemporalGraph, owner_type: str | None = None) -> np.ndarray:
    """(N,) global index of each node's owner, or `NO_OWNER`.

    Args:
        graph: the temporal graph.
        owner_type: the owning node type; defaults to the manifest's `funnel.owner_type`.
            With no owner type at all, every node owns itself.
    """
    owner_type = owner_type or graph.manifest.owner_type
    n = graph.num_nodes
    if owner_type is None:
        return np.arange(n, dtype=np.int64)
    code = graph.type_code(owner_type)
    owner = np.full(n, NO_OWNER, dtype=np.int64)
    lo, hi = int(graph.type_offsets[code]), int(graph.type_offsets[code + 1])
    owner[lo:hi] = np.arange(lo, hi)
    structural = graph.role_codes("structural")
    mask = np.isin(graph.etype, structural)
    a, b = graph.src[mask], graph.dst[mask]
    ends = np.concatenate([a, b]), np.concatenate([b, a])  # both directions
    for _ in range(MAX_HOPS):
        source, target = ends
        reach = (owner[source] != NO_OWNER) & (owner[target] == NO_OWNER)
        if not reach.any():
            break
        best = np.full(n, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(best, target[reach], owner[source[reach]])
        newly = best != np.iinfo(np.int64).max
        owner[newly] = best[newly]
    return owner
