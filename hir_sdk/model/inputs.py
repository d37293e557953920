"""The encoder's input tensors, from a packed batch of sampled views.

```
tokens (L, packed):  node_type  hop  rw (K)  stats (S)  content (D)  has_content  dhe (C)
                     recency (bucket)  doc (-1 = padding)  local
pairs (block-diagonal only): spd flat per subgraph at spd_offsets[doc]
edges (E): q, k token indices, type, weight, age bucket
```
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from hir_sdk.model.config import EncoderConfig
from hir_sdk.sampling.packing import PackedBatch


@dataclass(frozen=True)
class EncoderInputs:
    node_type: torch.Tensor  # (L,) long
    hop: torch.Tensor  # (L,) long
    rw: torch.Tensor  # (L, K) float
    stats: torch.Tensor  # (L, S) float
    content: torch.Tensor  # (L, D) float
    has_content: torch.Tensor  # (L,) bool
    dhe: torch.Tensor  # (L, C) float in [-1, 1], zeros for rare nodes
    recency: torch.Tensor  # (L,) long age bucket of the node's latest visible edge
    doc: torch.Tensor  # (L,) long, -1 for padding
    local: torch.Tensor  # (L,) long
    offsets: torch.Tensor  # (B+1,) long
    spd: torch.Tensor  # (S,) long
    spd_offsets: torch.Tensor  # (B+1,) long
    edge_q: torch.Tensor  # (E,) long
    edge_k: torch.Tensor  # (E,) long
    edge_type: torch.Tensor  # (E,) long
    edge_weight: torch.Tensor  # (E,) float
    edge_age: torch.Tensor  # (E,) long

    @property
    def batch_size(self) -> int:
        return len(self.offsets) - 1

    @property
    def length(self) -> int:
        return len(self.doc)

    def to(self, device: torch.device | str) -> EncoderInputs:
        return EncoderInputs(**{f.name: getattr(self, f.name).to(device) for f in fields(self)})

    def without_anchor_id(self) -> EncoderInputs:
        """The same inputs with each subgraph's anchor id hash zeroed: an encoder has to
        say what the anchor is from its content, statistics and neighbourhood."""
        dhe = self.dhe.clone()
        dhe[self.offsets[:-1]] = 0
        return replace(self, dhe=dhe)


def _t(array: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(array)).to(dtype)


def inputs_from_packed(batch: PackedBatch) -> EncoderInputs:
    """Tensors for the encoder; the packed batch must carry node features
    (`BatchBuilder` adds them)."""
    if batch.features is None:
        raise ValueError("this PackedBatch has no node features; build it with BatchBuilder")
    f = batch.features
    return EncoderInputs(
        node_type=_t(batch.node_type, torch.long),
        hop=_t(batch.hop, torch.long),
        rw=_t(batch.rw, torch.float32),
        stats=_t(f.stats, torch.float32),
        content=_t(f.content, torch.float32),
        has_content=_t(f.has_content, torch.bool),
        dhe=_t(f.dhe, torch.float32),
        recency=_t(f.recency, torch.long),
        doc=_t(batch.doc, torch.long),
        local=_t(batch.local, torch.long),
        offsets=_t(batch.offsets, torch.long),
        spd=_t(batch.spd, torch.long),
        spd_offsets=_t(batch.spd_offsets, torch.long),
        edge_q=_t(batch.edge_q, torch.long),
        edge_k=_t(batch.edge_k, torch.long),
        edge_type=_t(batch.edge_type, torch.long),
        edge_weight=_t(batch.edge_weight, torch.float32),
        edge_age=_t(batch.edge_age, torch.long),
    )


def random_inputs(
    sizes: Sequence[int], config: EncoderConfig, *, seed: int = 0, length: int | None = None
) -> EncoderInputs:
    """A packed batch of random subgraphs of `sizes` nodes, for tests and benchmarks.

    Random node features, spd blocks (0 on the diagonal, else 1..far), and one random edge
    per node inside its subgraph; tokens past `sum(sizes)` (up to `length`) are padding.
    """
    rng = np.random.default_rng(seed)
    sizes = np.asarray(sizes, dtype=np.int64)
    total = int(sizes.sum())
    length = total if length is None else length
    if length < total:
        raise ValueError(f"length {length} < {total} tokens")
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    doc = np.full(length, -1)
    doc[:total] = np.repeat(np.arange(len(sizes)), sizes)
    local = np.zeros(length, dtype=np.int64)
    local[:total] = np.arange(total) - offsets[doc[:total]]
    spd_offsets = np.concatenate([[0], np.cumsum(sizes**2)])
    pair_doc = np.repeat(np.arange(len(sizes)), sizes**2)
    within = np.arange(spd_offsets[-1]) - spd_offsets[pair_doc]
    spd = rng.integers(1, config.spd_values, len(pair_doc))
    spd[within // sizes[pair_doc] == within % sizes[pair_doc]] = 0
    owner = doc[:total]
    edge_q = offsets[owner] + (rng.random(total) * sizes[owner]).astype(np.int64)
    edge_k = offsets[owner] + (rng.random(total) * sizes[owner]).astype(np.int64)
    return EncoderInputs(
        node_type=_t(rng.integers(0, config.num_node_types, length), torch.long),
        hop=_t(rng.integers(0, config.spd_values, length), torch.long),
        rw=_t(rng.random((length, config.rw_steps)), torch.float32),
        stats=_t(rng.random((length, config.stats_dim)), torch.float32),
        content=_t(rng.normal(size=(length, config.content_dim)), torch.float32),
        has_content=_t(rng.random(length) < 0.5, torch.bool),
        dhe=_t(rng.uniform(-1, 1, (length, config.deep_hash.codes)), torch.float32),
        recency=_t(rng.integers(0, config.age_buckets, length), torch.long),
        doc=_t(doc, torch.long),
        local=_t(local, torch.long),
        offsets=_t(offsets, torch.long),
        spd=_t(spd, torch.long),
        spd_offsets=_t(spd_offsets, torch.long),
        edge_q=_t(edge_q, torch.long),
        edge_k=_t(edge_k, torch.long),
        edge_type=_t(rng.integers(0, config.num_edge_types, total), torch.long),
        edge_weight=_t(rng.random(total), torch.float32),
        edge_age=_t(rng.integers(0, config.age_buckets, total), torch.long),
    )
