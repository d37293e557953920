"""Per-token node features, as of each token's cutoff: statistics, world knowledge, and the
dense hash code of the node's id.

- statistics: log(1 + visible degree) for each edge type (either direction) and
  log(1 + days since the node's latest visible edge), so every number is as of the cutoff;
  then, when the featurizer has them, the node's numeric attributes (static, on the run's
  scale: `sampling.node_attributes`);
- recency: the same age in the log2(1 + hours) buckets used for edges (for time biases);
- content: the node's world-knowledge vector, followed by its audience vector when the
  featurizer has audience rows (`sampling.audience`); zeros where a part is missing, and
  `has_content = False` when both are;
- dhe: `codes` values in [-1, 1] from independent hashes of a stable hash of
  (node type, node id), zeros for nodes with fewer than `min_degree` visible edges. The
  model turns it into an embedding with a small shared MLP: no per-id table, so memory
  does not grow with the vocabulary and unseen ids still get a code.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from hir_sdk.graph.event_index import NEVER, EventIndex
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.counter_rng import hash_keys
from hir_sdk.sampling.encodings import age_buckets
from hir_sdk.schema.manifest import DAY

if TYPE_CHECKING:
    from hir_sdk.knowledge.knowledge_base import KnowledgeBase
    from hir_sdk.sampling.audience import AudienceRows

_ID_SEED = 0x48495253  # fixed: id hashes must not change between runs or versions


@dataclass(frozen=True)
class NodeFeatures:
    stats: np.ndarray  # (n, S) float32
    recency: np.ndarray  # (n,) int64 age bucket of the latest visible edge (max if none)
    content: np.ndarray  # (n, D) float32
    has_content: np.ndarray  # (n,) bool
    dhe: np.ndarray  # (n, C) float32

    def padded(self, length: int) -> NodeFeatures:
        """The same features padded with zeros to `length` rows."""
        if len(self.recency) == length:
            return self
        return self.take(np.arange(len(self.recency)), length)

    def take(self, rows: np.ndarray, length: int | None = None) -> NodeFeatures:
        """Rows `rows` of these features, padded with zeros to `length` rows."""
        length = len(rows) if length is None else length

        def take(a: np.ndarray) -> np.ndarray:
            out = np.empty((length,) + a.shape[1:], dtype=a.dtype)
            np.take(a, rows, axis=0, out=out[: len(rows)], mode="clip")  # unbuffered
            out[len(rows) :] = 0
            return out

        return NodeFeatures(
            take(self.stats),
            take(self.recency),
            take(self.content),
            take(self.has_content),
            take(self.dhe),
        )


def stable_node_hashes(graph: TemporalGraph) -> np.ndarray:
    """(N,) uint64 hash of (node type, node id): the same node gets the same hash in every
    graph built from any version of the data."""
    parts = []
    for code, ids in enumerate(graph.node_ids):
        type_key = int.from_bytes(
            hashlib.blake2b(graph.node_types[code].encode(), digest_size=8).digest(), "little"
        )
        if ids.dtype.kind in "iu":
            parts.append(
                hash_keys(
                    _ID_SEED,
                    np.full(len(ids), type_key, dtype=np.uint64),
                    ids.astype(np.int64).view(np.uint64),
                )
            )
        else:
            digests = [
                int.from_bytes(hashlib.blake2b(str(i).encode(), digest_size=8).digest(), "little")
                for i in ids.tolist()
            ]
            parts.append(
                hash_keys(
                    _ID_SEED,
                    np.full(len(ids), type_key, dtype=np.uint64),
                    np.asarray(digests, dtype=np.uint64),
                )
            )
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.uint64)


class NodeFeaturizer:
    """Computes `NodeFeatures` for (node, cutoff) tokens of one graph."""

    def __init__(
        self,
        graph: TemporalGraph,
        knowledge: KnowledgeBase | None = None,
        *,
        dhe_codes: int = 32,
        min_degree: int = 2,
        audience: AudienceRows | None = None,
        attributes: np.ndarray | None = None,
    ) -> None:
        self.graph = graph
        self.knowledge = knowledge
        self.audience = audience
        self.attributes = attributes  # (N, 2A) float32 (AttributeScale.rows) or None
        self.dhe_codes = dhe_codes
        self.min_degree = min_degree
        self.num_edge_types = len(graph.edge_types)
        ends = np.concatenate([graph.src, graph.dst])
        etype = np.concatenate([graph.etype, graph.etype]).astype(np.int64)
        ts = np.concatenate([graph.ts, graph.ts])
        self._by_type = EventIndex(ends * self.num_edge_types + etype, ts)
        self._by_node = EventIndex(ends, ts)
        self.node_hashes = stable_node_hashes(graph)  # also keys the audience basis

    @property
    def stats_dim(self) -> int:
        extra = 0 if self.attributes is None else self.attributes.shape[1]
        return self.num_edge_types + 1 + extra

    @property
    def content_dim(self) -> int:
        width = 0 if self.knowledge is None else self.knowledge.dim
        return width + (0 if self.audience is None else self.audience.dim)

    def features(
        self, nodes: np.ndarray, cutoffs: np.ndarray, length: int | None = None
    ) -> NodeFeatures:
        """Features of each `(nodes[i], cutoffs[i])` token, padded with zeros to `length`
        rows (default: one row per token).

        They depend on the pair only, so each distinct pair is computed once (a batch of
        views repeats popular nodes), in node order (the index searches then walk their
        tables forwards), and the rows are copied out to the tokens.
        """
        nodes = np.asarray(nodes, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        order = np.lexsort((cutoffs, nodes))
        new = np.ones(len(order), dtype=bool)
        new[1:] = (np.diff(nodes[order]) != 0) | (np.diff(cutoffs[order]) != 0)
        distinct = order[new]
        rows = np.empty(len(order), dtype=np.int64)
        rows[order] = np.cumsum(new) - 1
        return self._features(nodes[distinct], cutoffs[distinct]).take(rows, length)

    def _features(self, nodes: np.ndarray, cutoffs: np.ndarray) -> NodeFeatures:
        types = np.arange(self.num_edge_types, dtype=np.int64)
        groups = nodes[:, None] * self.num_edge_types + types[None, :]
        degree = self._by_type.count_before(
            groups.reshape(-1), np.repeat(cutoffs, len(types))
        ).reshape(len(nodes), len(types))
        last = self._by_node.last_before(nodes, cutoffs)
        age = np.where(last == NEVER, np.inf, (cutoffs - last) / DAY)
        idle = np.where(np.isfinite(age), np.log1p(np.where(np.isfinite(age), age, 0)), -1.0)
        parts = [np.log1p(degree), idle[:, None]]
        if self.attributes is not None:
            parts.append(self.attributes[nodes])
        stats = np.concatenate(parts, axis=1).astype(np.float32)
        recency = age_buckets(np.where(last == NEVER, 10**12, cutoffs - last)).astype(np.int64)
        if self.knowledge is None:
            content = np.zeros((len(nodes), 0), dtype=np.float32)
            has_content = np.zeros(len(nodes), dtype=bool)
        else:
            content, has_content = self.knowledge.gather(nodes, cutoffs)
        if self.audience is not None:
            rows, has_rows = self.audience.gather(nodes, cutoffs)
            content = np.concatenate([content, rows], axis=1)
            has_content = has_content | has_rows
        salts = np.arange(self.dhe_codes, dtype=np.uint64)
        h = hash_keys(_ID_SEED, self.node_hashes[nodes][:, None], salts[None, :])
        dhe = (h >> np.uint64(11)).astype(np.float64) * (2.0 / (1 << 53)) - 1.0
        frequent = degree.sum(axis=1) >= self.min_degree
        dhe = np.where(frequent[:, None], dhe, 0.0).astype(np.float32)
        return NodeFeatures(
            stats=stats,
            recency=recency,
            content=content.astype(np.float32, copy=False),
            has_content=has_content,
            dhe=dhe,
        )
