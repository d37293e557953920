"""The encoder's input tensors, from a packed batch of sampled views.

```
tokens (L, packed):  node_type  hop  rw (K)  stats (S)  content (D)  has_content  dhe (C)
                     recency (bucket)  doc (-1 = padding)  local
pairs (block-diagonal only): spd flat per subgraph at spd_offsets[doc]
edges (E): q, k token indices, type, weight, age bucket
```
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np
import torch

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
