"""Audience vectors: who a node's users are, as a per-node input of the encoder.

The encoder sees a node's type, a hash of its id, its statistics and its text. When the
text says nothing about who engages with a node (most real logs), the only collaborative
signal the encoder can use is the ids of the neighbours inside its small view, through a
hash: a few hundred training steps do not turn that into "these two ads reach the same
people". Collaborative filtering does it directly, so this module hands its geometry to
the encoder as an input:

    A      (destination x source) 0/1 matrix of the distinct pairs joined by an edge of
           `roles` with ts < basis time Tb (users -> ads, on an ads log)
    A ~ U S V^T                   rank `dim`, randomized SVD (the *basis*, fixed per run)

    row of a destination d as of T = normalize( sum of V_s over its sources s before T )
    row of a source s as of T      = normalize( sum of U_d over its destinations before T )

At `T = Tb` these are the SVD's own rows (`A V = U S`, `A^T U = V S`); later, new edges
and new entities fold into the same basis, so an encoder trained on rows as of Tb reads
rows as of any later time in the space it learned. Entities that joined after Tb are
placed by their neighbours that were in A; a node with none has no row.

No leak: the basis reads edges before Tb and rows as of T read edges before T, so rows
are used only at cutoffs from `max(Tb, T)` on (`AudienceRows.gather`); earlier tokens
count as having none. The basis is keyed by `stable_node_hashes`, so it applies to any
version of the dataset, and it is saved in the run (`audience.npz`) so that training,
refreshes warm-started from it, embedding and export all read one basis.

`AudienceTerms` is how the rows are computed: every distinct pair of the graph once, with
the basis row of its other end and the time of its first edge, so that the rows as of a
time are a mask and a sum (float64, each node's terms in a fixed order, so the same
rows bit for bit at any time). Daily arrival snapshots move one embedder through hundreds
of times; `Embedder.at` keeps the terms of its graph and only masks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.io.atomic import atomic_write_npz
from hir_sdk.sampling.node_features import stable_node_hashes

AUDIENCE_FILE = "audience.npz"
# the randomized SVD's power iterations and extra columns (scikit-learn's TruncatedSVD
# uses 5 and 10): enough for the leading factors of a sparse engagement matrix
POWER_ITERATIONS = 5
OVERSAMPLING = 10


@dataclass(frozen=True)
class EngagementFactors:
    """Rank-`r` SVD of the distinct engagement pairs before `as_of` (module doc):
    `u` (len(destinations), r), `s` (r,), `v` (len(sources), r), float64."""

    destinations: np.ndarray  # sorted global node indices
    sources: np.ndarray
    u: np.ndarray
    s: np.ndarray
    v: np.ndarray


def engagement_pairs(
    graph: TemporalGraph, *, as_of: int, roles: tuple[str, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """`(dst, src)` of the distinct pairs joined by a `roles` edge with `ts < as_of`."""
    k = graph.edges_before(as_of)
    keep = np.isin(graph.etype[:k], graph.role_codes(*roles))
    pairs = np.unique(pair_keys(graph.dst[:k][keep], graph.src[:k][keep], graph.num_nodes))
    return split_pair_keys(pairs, graph.num_nodes)


def engagement_factors(
    graph: TemporalGraph, *, as_of: int, roles: tuple[str, ...], dim: int, seed: int
) -> EngagementFactors | None:
    """The SVD of the module doc; None when fewer than two destinations or sources take
    part. The random start comes from `seed`, so it is a function of its arguments."""
    dst, src = engagement_pairs(graph, as_of=as_of, roles=roles)
    return pair_factors(dst, src, dim=dim, seed=seed)


def pair_factors(
    dst: np.ndarray, src: np.ndarray, *, dim: int, seed: int
) -> EngagementFactors | None:
    """Rank-`dim` randomized SVD of the 0/1 (destination x source) matrix of the distinct
    pairs `(dst, src)`; None when fewer than two destinations or sources take part."""
    destinations, row = np.unique(dst, return_inverse=True)
    sources, col = np.unique(src, return_inverse=True)
    rank = min(dim, len(destinations) - 1, len(sources) - 1)
    if rank < 1:
        return None
    matrix = torch.sparse_coo_tensor(
        torch.from_numpy(np.stack([row, col])),
        torch.ones(len(dst), dtype=torch.float64),
        (len(destinations), len(sources)),
        check_invariants=True,
    ).coalesce()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        q = min(rank + OVERSAMPLING, len(destinations), len(sources))
        u, s, v = torch.svd_lowrank(matrix, q=q, niter=POWER_ITERATIONS)
    return EngagementFactors(
        destinations, sources, u[:, :rank].numpy(), s[:rank].numpy(), v[:, :rank].numpy()
    )


@dataclass(frozen=True)
class AudienceBasis:
    """The fixed half of the audience vectors: the singular vectors of each side, keyed by
    stable node hashes (sorted), and the basis time `as_of` (Tb)."""

    as_of: int
    roles: tuple[str, ...]
    destination_keys: np.ndarray  # (Kd,) uint64, sorted
    destination_vectors: np.ndarray  # (Kd, r) float32: U
    source_keys: np.ndarray  # (Ks,) uint64, sorted
    source_vectors: np.ndarray  # (Ks, r) float32: V

    @property
    def dim(self) -> int:
        return int(self.destination_vectors.shape[1])

    def save(self, path: str | Path) -> None:
        atomic_write_npz(
            path,
            as_of=np.int64(self.as_of),
            roles=np.array(self.roles),
            destination_keys=self.destination_keys,
            destination_vectors=self.destination_vectors,
            source_keys=self.source_keys,
            source_vectors=self.source_vectors,
        )

    @classmethod
    def load(cls, path: str | Path) -> AudienceBasis:
        with np.load(path, allow_pickle=False) as f:
            return cls(
                int(f["as_of"]),
                tuple(str(r) for r in f["roles"]),
                f["destination_keys"],
                f["destination_vectors"],
                f["source_keys"],
                f["source_vectors"],
            )

    def rows(
        self, graph: TemporalGraph, as_of: int, hashes: np.ndarray | None = None
    ) -> AudienceRows:
        """Every node's row as of `as_of` (module doc), used from `max(as_of, Tb)` on.
        `hashes`: the graph's `stable_node_hashes` when already at hand (a featurizer's
        `node_hashes`; for string ids they take a Python loop over every node). For many
        times over one graph, build its `AudienceTerms` once."""
        return AudienceTerms.of(self, graph, hashes).rows(as_of)


def fit_audience_basis(
    graph: TemporalGraph,
    *,
    as_of: int,
    roles: tuple[str, ...],
    dim: int,
    seed: int,
    hashes: np.ndarray | None = None,
) -> AudienceBasis | None:
    """The basis of the engagement pairs before `as_of`; None when too few take part.
    `hashes`: as in `AudienceBasis.rows`."""
    factors = engagement_factors(graph, as_of=as_of, roles=roles, dim=dim, seed=seed)
    if factors is None:
        return None
    hashes = stable_node_hashes(graph) if hashes is None else hashes
    sides = []
    for nodes, vectors in ((factors.destinations, factors.u), (factors.sources, factors.v)):
        keys = hashes[nodes]
        order = np.argsort(keys, kind="stable")
        sides += [keys[order], vectors[order].astype(np.float32)]
    return AudienceBasis(as_of, tuple(roles), *sides)


@dataclass(frozen=True)
class AudienceRows:
    """Audience rows of a graph's nodes as of a time, used at cutoffs from `visible_from`:
    one unit row per node that has one (`row_of`: -1 for none)."""

    vectors: np.ndarray  # (R, r) float32, unit rows
    row_of: np.ndarray  # (N,) int64
    visible_from: int

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])

    @property
    def has(self) -> np.ndarray:
        """(N,) bool: the nodes that have a row."""
        return self.row_of >= 0

    def gather(self, nodes: np.ndarray, cutoffs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`(rows, has_row)` of tokens `(nodes[i], cutoffs[i])`: zero rows and False
        before `visible_from`, where they would read edges after the token's cutoff."""
        rows = self.row_of[nodes]
        has = (rows >= 0) & (np.asarray(cutoffs) >= self.visible_from)
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        out[has] = self.vectors[rows[has]]
        return out, has


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
            at = _lookup(keys_of, hashes[other])
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
        """The rows as of `as_of`: the terms of the pairs before it, summed per node in
        order (float64), normalized."""
        keep = self.since < as_of
        end, part = self.end[keep], self.vectors[self.row[keep]].astype(np.float64)
        starts = np.flatnonzero(np.diff(end, prepend=-1)) if len(end) else np.zeros(0, np.int64)
        nodes = end[starts]
        sums = np.add.reduceat(part, starts, axis=0) if len(nodes) else np.zeros((0, part.shape[1]))
        norms = np.linalg.norm(sums, axis=1)
        nodes, sums, norms = nodes[norms > 0], sums[norms > 0], norms[norms > 0]
        row_of = np.full(self.num_nodes, -1, dtype=np.int64)
        row_of[nodes] = np.arange(len(nodes))
        vectors = (sums / norms[:, None]).astype(np.float32)
        return AudienceRows(vectors, row_of, max(as_of, self.basis_as_of))


def _lookup(keys: np.ndarray, hashes: np.ndarray) -> np.ndarray:
    """Position of each hash in the sorted `keys`, -1 where absent."""
    if not len(keys):
        return np.full(len(hashes), -1, dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, hashes), len(keys) - 1)
    return np.where(keys[at] == hashes, at, -1)
