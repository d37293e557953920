"""Which advertiser (or other owner type) each node belongs to, through structural edges.

Attribution and advertiser-level features need "the ad's advertiser": in an ads log that
is a path of structural edges (ad <- campaign <- advertiser, product <- advertiser,
pixel <- advertiser). Owners are found by breadth-first label propagation from the owner
nodes over structural edges in both directions, vectorised over all edges per hop. Nodes
of the owner type own themselves; nodes reachable from several owners take the one met
first (ties: the lowest index); unreachable nodes get -1.

`owner_of_nodes` reads every structural edge: the owners at the end of the log. Anything
computed for a request at time `t` (features, labels, slices) reads `OwnersAsOf.at(node,
t)` instead: the same rule over the structural edges with `ts < t` only, so an edge dated
at or after `t` (an ad moved to another campaign, a link logged late) cannot change it.

```
labels    (node, since, dist, owner): `owner` is `dist` hops away through edges that all
          exist from `since` on (the latest edge time on the path)
hop h     every label at hop h - 1 crosses each structural edge e of its node:
          (other end, max(since, ts_e), h, owner); a label is kept only if no label of
          the same node is as early and at least as good (fewer hops, then lower owner)
query     the node's last label with since < t (the labels of a node, by since, get
          strictly better): its owner, else NO_OWNER
```
Extending two labels of a node by the same edge keeps which one is better, so pruning
the dominated ones loses no answer; after `MAX_HOPS` hops the label read at `t` is the
nearest owner (ties: lowest index) over the edges before `t`, exactly the breadth-first
result on the graph cut at `t`.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.graph.event_index import EventIndex, pair_keys
from hir_sdk.graph.temporal_graph import TemporalGraph

NO_OWNER = -1
MAX_HOPS = 4
_NEVER = np.iinfo(np.int64).min  # since of an owner's own label: it always owns itself


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


def _structural_links(
    graph: TemporalGraph, lo: int, hi: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Structural edges in both directions, grouped by source (CSR): `(ptr, target, ts)`;
    edges into owner nodes `[lo, hi)` are left out (an owner owns itself)."""
    mask = np.isin(graph.etype, graph.role_codes("structural"))
    a, b, ts = graph.src[mask], graph.dst[mask], graph.ts[mask]
    source, target, when = np.concatenate([a, b]), np.concatenate([b, a]), np.concatenate([ts, ts])
    keep = (target < lo) | (target >= hi)
    source, target, when = source[keep], target[keep], when[keep]
    order = np.argsort(source, kind="stable")
    ptr = np.zeros(graph.num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(source, minlength=graph.num_nodes), out=ptr[1:])
    return ptr, target[order], when[order]


def _undominated(
    node: np.ndarray, since: np.ndarray, rank: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """`(order, keep)`: the labels sorted by (node, since, rank, input order) and, in that
    order, whether each is strictly better (lower rank) than every earlier label of its
    node (the first of each node always is)."""
    order = np.lexsort((rank, since, node))
    node, rank = node[order], rank[order]
    if len(node) == 0:
        return order, np.zeros(0, dtype=bool)
    # a running minimum of rank that restarts at each node: earlier nodes are lifted
    # above every rank of later ones, so they never win the minimum
    group = np.concatenate([[0], np.cumsum(node[1:] != node[:-1])])
    _, dense = np.unique(rank, return_inverse=True)
    width = int(dense.max()) + 1
    lifted = (group[-1] - group) * width + dense
    best_before = np.minimum.accumulate(lifted)
    keep = np.ones(len(node), dtype=bool)
    keep[1:] = lifted[1:] < best_before[:-1]
    return order, keep


class OwnersAsOf:
    """Each node's owner as of any time (see the module docstring).

    Args:
        graph: the temporal graph.
        owner_type: the owning node type; defaults to the manifest's `funnel.owner_type`.
            With no owner type at all, every node owns itself at every time.
    """

    def __init__(self, graph: TemporalGraph, owner_type: str | None = None) -> None:
        owner_type = owner_type or graph.manifest.owner_type
        n = graph.num_nodes
        self.num_nodes = n
        self._own = np.full(n, NO_OWNER, dtype=np.int64)  # owner nodes own themselves
        if owner_type is None:
            self._own = np.arange(n, dtype=np.int64)
            self._index = EventIndex(np.zeros(0, np.int64), np.zeros(0, np.int64))
            self._owner = np.zeros(0, dtype=np.int64)
            return
        code = graph.type_code(owner_type)
        lo, hi = int(graph.type_offsets[code]), int(graph.type_offsets[code + 1])
        self._own[lo:hi] = np.arange(lo, hi)
        ptr, target, when = _structural_links(graph, lo, hi)
        labels = [np.zeros(0, np.int64)] * 3  # node, since, rank (kept labels)
        owner_of = np.zeros(0, np.int64)
        f_node = np.arange(lo, hi, dtype=np.int64)  # the frontier: labels new at hop - 1
        f_since = np.full(hi - lo, _NEVER, dtype=np.int64)
        f_owner = f_node.copy()
        for hop in range(1, MAX_HOPS + 1):
            counts = ptr[f_node + 1] - ptr[f_node]
            which = np.repeat(np.arange(len(f_node)), counts)
            first = np.repeat(ptr[f_node] - np.cumsum(counts) + counts, counts)
            edge = first + np.arange(len(which))
            c_node, c_owner = target[edge], f_owner[which]
            c_since = np.maximum(f_since[which], when[edge])
            c_rank = pair_keys(np.full(len(edge), hop), c_owner, n)  # fewer hops, lower owner
            node = np.concatenate([labels[0], c_node])
            since = np.concatenate([labels[1], c_since])
            rank = np.concatenate([labels[2], c_rank])
            owners = np.concatenate([owner_of, c_owner])
            order, keep = _undominated(node, since, rank)
            kept = order[keep]
            fresh = kept[kept >= len(labels[0])]
            labels = [node[kept], since[kept], rank[kept]]
            owner_of = owners[kept]
            if len(fresh) == 0:
                break
            f_node, f_since, f_owner = node[fresh], since[fresh], owners[fresh]
        self._index = EventIndex(labels[0], labels[1])
        self._owner = owner_of[self._index.order]  # per sorted label

    @property
    def labels(self) -> int:
        """How many (node, since) owner changes the timeline holds."""
        return len(self._owner)

    def at(self, nodes: np.ndarray, t: np.ndarray | int) -> np.ndarray:
        """Owner of each of `nodes` from the structural edges with `ts < t` (one time, or
        one per node), or `NO_OWNER`."""
        nodes = np.asarray(nodes, dtype=np.int64)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), nodes.shape)
        out = self._own[nodes].reshape(-1)
        start, end = self._index.rows_before(nodes.reshape(-1), t.reshape(-1))
        has = end > start
        out[has] = self._owner[end[has] - 1]
        return out.reshape(nodes.shape)


def conversion_index(graph: TemporalGraph, owners: OwnersAsOf) -> EventIndex:
    """Conversion events keyed by `pair_keys(user, owner of the converted-on node before
    the conversion)`: what "the user converted on this owner" is read from, for labels and
    for features alike. Conversions on a node without an owner are left out."""
    mask = np.isin(graph.etype, graph.role_codes("conversion"))
    ts = graph.ts[mask]
    owner = owners.at(graph.dst[mask], ts)
    known = owner != NO_OWNER
    return EventIndex(pair_keys(graph.src[mask][known], owner[known], graph.num_nodes), ts[known])


def converted_within(
    conversions: EventIndex,
    user: np.ndarray,
    owner: np.ndarray,
    after: np.ndarray | int,
    until: np.ndarray | int,
    num_nodes: int,
) -> np.ndarray:
    """Where `user` converted on `owner` at a time in `(after, until]` (`conversions`:
    `conversion_index`), the rule of the labels; False where the owner is `NO_OWNER`."""
    hit = conversions.count_between(pair_keys(user, owner, num_nodes), after, until) > 0
    return hit & (owner != NO_OWNER)


def converted_before(
    conversions: EventIndex,
    owners: OwnersAsOf,
    user: np.ndarray,
    item: np.ndarray,
    ts: np.ndarray,
    t: np.ndarray | int,
    window_s: int,
) -> np.ndarray:
    """Where the exposure `(user, item, ts)` converted as known before `t`: the user
    converted on the owner `item` had at `ts`, within `window_s` seconds after `ts` and
    before `t` (a conversion at or after `t` is not read)."""
    until = np.minimum(ts + window_s, np.asarray(t) - 1)  # count_between reads ts <= until
    hit = converted_within(conversions, user, owners.at(item, ts), ts, until, owners.num_nodes)
    return hit & (until > ts)
