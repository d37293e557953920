"""Mixture-of-experts heads routed by the candidate's super-interest.

```
h (B, H), route (B,) super-interest id (-1: unknown)
gate  = softmax(G[route + 1])           (B, E)   one learned gate per super-interest
y     = sum_e gate_e · expert_e(h)      (B, T)   T tasks (click, conversion)
```
Each expert is a small MLP with one output per task. With `top_k < E` each super-interest
keeps only its k largest gates (renormalised), so each interest is served by few experts;
the unknown route (an ad with no HIR snapshot yet) has its own gate.
"""

from __future__ import annotations

import torch
from torch import nn


class MoEHeads(nn.Module):
    def __init__(
        self, in_dim: int, hidden: int, experts: int, routes: int, tasks: int, top_k: int
    ) -> None:
        super().__init__()
        if not 1 <= top_k <= experts:
            raise ValueError(f"MoEHeads: need 1 <= top_k <= experts, got {top_k}, {experts}")
        self.top_k = top_k
        self.gates = nn.Embedding(routes + 1, experts)  # row 0: unknown route
        nn.init.normal_(self.gates.weight, std=0.1)
        self.hidden = nn.Parameter(torch.randn(experts, in_dim, hidden) / in_dim**0.5)
        self.hidden_bias = nn.Parameter(torch.zeros(experts, hidden))
        self.head = nn.Parameter(torch.randn(experts, hidden, tasks) / hidden**0.5)
        self.head_bias = nn.Parameter(torch.zeros(experts, tasks))

    def gate(self, route: torch.Tensor) -> torch.Tensor:
        """(B, E) expert weights of each route."""
        logits = self.gates(route.clamp(min=-1) + 1)
        if self.top_k < logits.shape[1]:
            kth = logits.topk(self.top_k, dim=1).values[:, -1:]
            logits = logits.masked_fill(logits < kth, float("-inf"))
        return logits.softmax(dim=1)

    def forward(self, h: torch.Tensor, route: torch.Tensor) -> torch.Tensor:
        """(B, in_dim), (B,) -> (B, tasks) logits."""
        a = torch.relu(torch.einsum("bi,eih->beh", h, self.hidden) + self.hidden_bias)
        y = torch.einsum("beh,eht->bet", a, self.head) + self.head_bias  # (B, E, T)
        return torch.einsum("be,bet->bt", self.gate(route), y)
