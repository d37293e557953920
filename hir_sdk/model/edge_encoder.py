"""Edge encoder: a direct edge's type, weight and age -> one attention bias per head.

    b_e[h] = E_type[type, h] + w_h * log(1 + weight) + E_age[age bucket, h]

Applied to both (src, dst) and (dst, src) token pairs.
"""

from __future__ import annotations

import torch
from torch import nn

from hir_sdk.model.config import EncoderConfig


class EdgeEncoder(nn.Module):
    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.edge_type = nn.Embedding(config.num_edge_types, config.heads)
        self.weight = nn.Parameter(torch.zeros(config.heads))
        self.age = nn.Embedding(config.age_buckets, config.heads)
        nn.init.zeros_(self.edge_type.weight)
        nn.init.zeros_(self.age.weight)

    def forward(
        self, edge_type: torch.Tensor, weight: torch.Tensor, age: torch.Tensor
    ) -> torch.Tensor:  # (E,) x3 -> (E, H)
        return (
            self.edge_type(edge_type) + torch.log1p(weight)[:, None] * self.weight + self.age(age)
        )
