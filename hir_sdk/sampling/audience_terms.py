"""Audience rows at many times from one pass over a graph's engagement pairs.

`AudienceBasis.rows` finds the distinct `roles` pairs before its time, looks up the basis
row of each pair's other end and sums those per node. Daily arrival snapshots ask for the
rows of one graph at hundreds of times, and each call did all of it again. `AudienceTerms`
finds the pairs and looks up their rows once, for every pair of the graph, and keeps the
time each pair first appeared, so the rows as of a time are a mask and a sum. Pairs that
appear later are in the terms but masked out: nothing at or after the time is read.

The rows equal `AudienceBasis.rows`' bit for bit: the same terms, added in the same order
(`summed_rows`, which both use; tested).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.audience import AudienceBasis, AudienceRows, lookup_keys, summed_rows
from hir_sdk.sampling.node_features import stable_node_hashes


@dataclass(frozen=True, eq=False)
class AudienceTerms:
    """One term per (node, distinct pair it takes part in whose other end the basis
    knows), sorted by node in the order `AudienceBasis.rows` adds them.

    Attributes:
        num_nodes: nodes of the graph the terms come from.
        end: (T,) int64 node each term adds to, ascending.
        since: (T,) int64 time of the first edge of the term's pair.
        row: (T,) int64 row of `vectors` the term adds.
        vectors: (Ks + Kd, r) float32 the basis' source rows, then its destination rows.
        basis_as_of: the basis time (rows are used from `max(as_of, basis_as_of)` on).
    """

    num_nodes: int
    end: np.ndarray
    since: np.ndarray
    row: np.ndarray
    vectors: np.ndarray
    basis_as_of: int

    @classmethod
    def of(
        cls, basis: AudienceBasis, graph: TemporalGraph, hashes: np.ndarray | None = None
    ) -> AudienceTerms:
        """The terms of every `basis.roles` pair of `graph`; `hashes` as in `rows`."""
        keep = np.isin(graph.etype, graph.role_codes(*basis.roles))
        keys = pair_keys(graph.dst[keep], graph.src[keep], graph.num_nodes)
        pairs, first = np.unique(keys, return_index=True)  # edges are in time order
        since = graph.ts[keep][first]
        dst, src = split_pair_keys(pairs, graph.num_nodes)
        hashes = stable_node_hashes(graph) if hashes is None else hashes
        ends, rows, times = [], [], []
        for end, other, keys_of, base in (
            (dst, src, basis.source_keys, 0),
            (src, dst, basis.destination_keys, len(basis.source_keys)),
        ):
            at = lookup_keys(keys_of, hashes[other])
            known = at >= 0
            ends.append(end[known])
            rows.append(at[known] + base)
            times.append(since[known])
        end = np.concatenate(ends)
        order = np.argsort(end, kind="stable")
        return cls(
            graph.num_nodes,
            end[order],
            np.concatenate(times)[order],
            np.concatenate(rows)[order],
            np.concatenate([basis.source_vectors, basis.destination_vectors]),
            basis.as_of,
        )

    def rows(self, as_of: int) -> AudienceRows:
        """`AudienceBasis.rows(graph, as_of)`: the terms of the pairs before `as_of`."""
        keep = self.since < as_of
        part = self.vectors[self.row[keep]].astype(np.float64)
        return summed_rows(self.end[keep], part, self.num_nodes, max(as_of, self.basis_as_of))
