"""Dense tokenization of events: one D-vector per event from what it is and when it was.

```
event = (item, action, age, hir)
token = E_action[action] + E_id[hash(item)] + E_age[bucket(age)] + W_hir · hir   (D,)
```
- `E_id` is a TorchRec `EmbeddingCollection` (unpooled: one row per event) over hashed
  item ids, so a ranker's id tables shard like any TorchRec table;
- ages are bucketed on a log scale (minutes to months: 48 buckets);
- `hir` is the item's HIR embedding as of the request (zeros when it has none), with a
  learned "has HIR" offset.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from torch import nn
from torchrec import EmbeddingCollection, EmbeddingConfig, KeyedJaggedTensor

AGE_BUCKETS = 48
_HASH = 0x9E3779B1  # Knuth's multiplicative hash constant


def hash_ids(ids: np.ndarray | torch.Tensor, buckets: int) -> np.ndarray | torch.Tensor:
    """Deterministic hash of non-negative ids into `[0, buckets)`."""
    return (ids * _HASH) % buckets


def _log_bucket(age_s: torch.Tensor) -> torch.Tensor:
    """The bucket's definition: 2 per doubling of (1 + age in minutes)."""
    minutes = age_s.clamp(min=0).double() / 60.0
    return (2.0 * torch.log2(minutes + 1.0)).long().clamp(0, AGE_BUCKETS - 1)


def _thresholds() -> torch.Tensor:
    """(AGE_BUCKETS - 1,) the smallest whole age in seconds of each bucket from 1 on,
    found exactly from `_log_bucket` (a search around the closed form)."""
    out = []
    for bucket in range(1, AGE_BUCKETS):
        guess = int(60.0 * (2.0 ** (bucket / 2.0) - 1.0))
        near = torch.arange(max(guess - 4, 0), guess + 5)
        out.append(int(near[_log_bucket(near) >= bucket][0]))
    return torch.tensor(out, dtype=torch.int64)


AGE_THRESHOLDS = _thresholds()


def event_age_buckets(age_s: torch.Tensor) -> torch.Tensor:
    """Log-scale bucket of an age in whole seconds: 2 buckets per doubling from one
    minute. Counted against integer thresholds, so every backend (and the ONNX export,
    whose log2 rounds differently at exact powers of two) gives the same bucket."""
    return (age_s[..., None] >= AGE_THRESHOLDS.to(age_s.device)).sum(dim=-1)


class EventTokenizer(nn.Module):
    """(B, L) events -> (B, L, D) tokens (see the module docstring).

    Args:
        dim: token width D.
        num_actions: number of edge types (action codes are edge type codes).
        id_buckets: rows of the hashed item-id table.
        hir_dim: width of the HIR embeddings fed per event (0: none).
        table: name of the id table (feature `<table>_item`), unique within a model.
    """

    def __init__(
        self, dim: int, num_actions: int, id_buckets: int, hir_dim: int, table: str
    ) -> None:
        super().__init__()
        self.dim, self.id_buckets, self.hir_dim = dim, id_buckets, hir_dim
        self.feature = f"{table}_item"
        self.action = nn.Embedding(num_actions, dim)
        self.age = nn.Embedding(AGE_BUCKETS, dim)
        self.ids = EmbeddingCollection(
            tables=[
                EmbeddingConfig(
                    name=f"t_{table}_item",
                    embedding_dim=dim,
                    num_embeddings=id_buckets,
                    feature_names=[self.feature],
                )
            ]
        )
        nn.init.normal_(self.ids.embeddings[f"t_{table}_item"].weight, std=1.0 / math.sqrt(dim))
        self.hir = nn.Linear(hir_dim, dim) if hir_dim else None
        self.has_hir = nn.Parameter(torch.zeros(dim)) if hir_dim else None

    def forward(
        self,
        item: torch.Tensor,  # (B, L) int64, -1 on padding
        action: torch.Tensor,  # (B, L) int64, -1 on padding
        age: torch.Tensor,  # (B, L) int64 seconds
        mask: torch.Tensor,  # (B, L) bool
        hir: torch.Tensor | None = None,  # (B, L, hir_dim) float
        hir_found: torch.Tensor | None = None,  # (B, L) bool
    ) -> torch.Tensor:
        B, L = item.shape
        ids = hash_ids(item[mask], self.id_buckets)
        kjt = KeyedJaggedTensor.from_lengths_sync(
            keys=[self.feature], values=ids, lengths=mask.sum(dim=1).to(torch.int64)
        )
        id_rows = self.ids(kjt)[self.feature].values()  # (n_events, D), row-major order
        id_dense = id_rows.new_zeros(B, L, self.dim)
        id_dense[mask] = id_rows
        return self.combine(id_dense, action, age, mask, hir, hir_found)

    @property
    def id_table(self) -> torch.Tensor:
        """(id_buckets, D) rows of the hashed item-id table."""
        return self.ids.embeddings[f"t_{self.feature}"].weight

    def combine(
        self,
        id_dense: torch.Tensor,  # (B, L, D) item-id rows, zeros on padding
        action: torch.Tensor,
        age: torch.Tensor,
        mask: torch.Tensor,
        hir: torch.Tensor | None = None,
        hir_found: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """The token formula once the id rows are looked up (by TorchRec here, by a plain
        gather in the ONNX export)."""
        tokens = self.action(action.clamp(min=0)) + self.age(event_age_buckets(age)) + id_dense
        if self.hir is not None:
            if hir is None or hir_found is None:
                raise ValueError("this tokenizer was built with hir_dim > 0: pass hir, hir_found")
            tokens = tokens + self.hir(hir) + hir_found[..., None] * self.has_hir
        return tokens * mask[..., None]  # (B, L, D), zeros on padding
