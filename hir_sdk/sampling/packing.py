"""Packing variable-size subgraphs into one flat jagged batch (FLEX path) and a padded
per-subgraph view (DENSE path).

```
packed (length L, a size bucket >= T):
  token   | a0 n n n | a1 n n | a2 n n n n | pad pad |
  doc     |  0 0 0 0 |  1 1 1 |  2 2 2 2   | -1  -1 |   block mask: same doc only
  local   |  0 1 2 3 |  0 1 2 |  0 1 2 3   |  0   0 |
  spd(q, k) = spd[spd_offsets[doc] + local_q * n_doc + local_k]   (looked up, never (L, L))
padded:    (B, N) tokens, (B, N) mask, (B, N, N) spd / edge type / weight / age
```
`L` is rounded up to a bucket (multiples of 128 with at most three significant bits) so
compiled attention kernels see few distinct shapes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.sampling.encodings import Encodings
from hir_sdk.sampling.node_features import NodeFeatures
from hir_sdk.sampling.subgraphs import Subgraphs

BLOCK = 128
NO_EDGE = -1


def bucket_length(total: int, block: int = BLOCK) -> int:
    """Smallest multiple of `block` >= `total` whose multiplier has at most three significant
    bits (1, 2, ..., 8, 10, 12, 14, 16, 20, 24, 28, 32, ...): a few shapes per octave, at
    most 25% padding beyond 8 blocks."""
    blocks = max(-(-total // block), 1)
    shift = max(blocks.bit_length() - 3, 0)
    return block * ((-(-blocks >> shift)) << shift)


@dataclass(frozen=True)
class PaddedBatch:
    node: np.ndarray  # (B, N) int64 global node index (0 where padded)
    node_type: np.ndarray  # (B, N) int64
    mask: np.ndarray  # (B, N) bool
    hop: np.ndarray  # (B, N) int64
    rw: np.ndarray  # (B, N, K) float32
    spd: np.ndarray  # (B, N, N) int64
    edge_type: np.ndarray  # (B, N, N) int64, NO_EDGE where no direct edge
    edge_weight: np.ndarray  # (B, N, N) float32
    edge_age: np.ndarray  # (B, N, N) int64 age bucket


@dataclass(frozen=True)
class PackedBatch:
    anchors: np.ndarray  # (B,)
    cutoffs: np.ndarray  # (B,)
    node: np.ndarray  # (L,) int64, 0 for padding
    node_type: np.ndarray  # (L,) int64
    doc: np.ndarray  # (L,) int64 subgraph id, -1 for padding
    local: np.ndarray  # (L,) int64 position within the subgraph
    hop: np.ndarray  # (L,) int64
    rw: np.ndarray  # (L, K) float32
    offsets: np.ndarray  # (B+1,) token offsets
    spd: np.ndarray  # (S,) int64 flat per-subgraph blocks
    spd_offsets: np.ndarray  # (B+1,)
    edge_q: np.ndarray  # (E,) flat token index of each direct edge's source
    edge_k: np.ndarray  # (E,) flat token index of its destination
    edge_type: np.ndarray  # (E,) int64
    edge_weight: np.ndarray  # (E,) float32
    edge_age: np.ndarray  # (E,) int64
    far: int  # the spd value for "farther than the cap / unreachable"
    features: NodeFeatures | None = None  # per-token node features, padded to L

    @property
    def length(self) -> int:
        return len(self.node)

    @property
    def num_tokens(self) -> int:
        return int(self.offsets[-1])

    @property
    def batch_size(self) -> int:
        return len(self.anchors)

    def padded(self) -> PaddedBatch:
        """The same batch as a padded `(B, N)` stack with dense pairwise tensors."""
        sizes = np.diff(self.offsets)
        batch, n = self.batch_size, int(sizes.max(initial=1))
        tokens = np.arange(self.num_tokens)
        doc, local = self.doc[tokens], self.local[tokens]

        def pad(values: np.ndarray, fill: object, dtype: type) -> np.ndarray:
            out = np.full((batch, n) + values.shape[1:], fill, dtype=dtype)
            out[doc, local] = values[tokens]
            return out

        spd = np.full((batch, n, n), self.far, dtype=np.int64)
        for b, size in enumerate(sizes.tolist()):
            spd[b, :size, :size] = self.spd[self.spd_offsets[b] : self.spd_offsets[b + 1]].reshape(
                size, size
            )
        edge_type = np.full((batch, n, n), NO_EDGE, dtype=np.int64)
        edge_weight = np.zeros((batch, n, n), dtype=np.float32)
        edge_age = np.zeros((batch, n, n), dtype=np.int64)
        b, i, j = self.doc[self.edge_q], self.local[self.edge_q], self.local[self.edge_k]
        edge_type[b, i, j] = self.edge_type
        edge_weight[b, i, j] = self.edge_weight
        edge_age[b, i, j] = self.edge_age
        return PaddedBatch(
            node=pad(self.node, 0, np.int64),
            node_type=pad(self.node_type, 0, np.int64),
            mask=pad(np.ones(self.num_tokens, bool), False, bool),
            hop=pad(self.hop, self.far, np.int64),
            rw=pad(self.rw, 0.0, np.float32),
            spd=spd,
            edge_type=edge_type,
            edge_weight=edge_weight,
            edge_age=edge_age,
        )


def pack(
    sub: Subgraphs,
    enc: Encodings,
    far: int,
    *,
    block: int = BLOCK,
    features: NodeFeatures | None = None,
) -> PackedBatch:
    """Flatten a sampled, encoded batch into one bucket-length token sequence; `features`
    (one row per subgraph node) are padded along."""
    total = int(sub.offsets[-1])
    length = bucket_length(max(total, 1), block)
    sizes = sub.sizes()
    doc = np.full(length, -1, dtype=np.int64)
    doc[:total] = np.repeat(np.arange(sub.batch_size), sizes)
    local = np.zeros(length, dtype=np.int64)
    local[:total] = np.arange(total) - np.repeat(sub.offsets[:-1], sizes)

    def tokens(values: np.ndarray, fill: object = 0) -> np.ndarray:
        out = np.full((length,) + values.shape[1:], fill, dtype=values.dtype)
        out[:total] = values
        return out

    slot = np.repeat(np.arange(sub.batch_size), np.diff(sub.edge_offsets))
    base = sub.offsets[slot]
    return PackedBatch(
        anchors=sub.anchors,
        cutoffs=sub.cutoffs,
        node=tokens(sub.nodes.astype(np.int64)),
        node_type=tokens(enc.node_type),
        doc=doc,
        local=local,
        hop=tokens(enc.hop.astype(np.int64), far),
        rw=tokens(enc.rw, 0.0),
        offsets=sub.offsets.astype(np.int64),
        spd=enc.spd.astype(np.int64),
        spd_offsets=enc.spd_offsets,
        edge_q=base + sub.edge_src,
        edge_k=base + sub.edge_dst,
        edge_type=sub.edge_type.astype(np.int64),
        edge_weight=sub.edge_weight,
        edge_age=enc.edge_age_bucket.astype(np.int64),
        far=far,
        features=None if features is None else features.padded(length),
    )
