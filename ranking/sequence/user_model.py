"""Stage 1, the offline user model: a transformer over a user's long event history.

Notable:
- its output depends on the user's history only, never on the ad candidate, so it is
  computed in batch at refresh times and cached (`UserEmbeddingCache`), keyed by (user,
  snapshot time); the online stage reads the cache;
- events are dense tokens (`EventTokenizer`: action + hashed item id through TorchRec +
  HIR embedding of the item + log-bucketed age), newest last;
- a learned [USER] token attends with the events and carries the summary, so a user with
  no history still gets a (learned, default) embedding rather than a NaN;
- pre-norm encoder layers, SDPA attention with a key padding mask.
"""

from __future__ import annotations

import torch
from torch import nn

from hir_sdk.ranking.sequence.config import UserModelConfig
from hir_sdk.ranking.sequence.tokenizer import EventTokenizer


class UserModel(nn.Module):
    def __init__(self, config: UserModelConfig, num_actions: int, hir_dim: int) -> None:
        super().__init__()
        c = self.config = config
        self.tokenizer = EventTokenizer(c.dim, num_actions, c.id_buckets, hir_dim, "user_model")
        self.user_token = nn.Parameter(torch.randn(c.dim) * 0.02)
        layer = nn.TransformerEncoderLayer(
            c.dim, c.heads, 4 * c.dim, c.dropout, batch_first=True, norm_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, c.layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(c.dim)
        self.out = nn.Linear(c.dim, c.out_dim)

    def forward(
        self,
        item: torch.Tensor,  # (B, L)
        action: torch.Tensor,  # (B, L)
        age: torch.Tensor,  # (B, L) seconds before the snapshot time
        mask: torch.Tensor,  # (B, L) bool
        hir: torch.Tensor | None = None,  # (B, L, hir_dim)
        hir_found: torch.Tensor | None = None,  # (B, L)
    ) -> torch.Tensor:
        tokens = self.tokenizer(item, action, age, mask, hir, hir_found)  # (B, L, D)
        B = tokens.shape[0]
        x = torch.cat([self.user_token.expand(B, 1, -1), tokens], dim=1)  # (B, 1 + L, D)
        keep = torch.cat([mask.new_ones(B, 1), mask], dim=1)
        x = self.encoder(x, src_key_padding_mask=~keep)
        return self.out(self.norm(x[:, 0]))  # (B, out_dim)
