"""Heads: the shared metric space and interest-cluster prototypes at several granularities.

    z = normalize(W h_anchor)                                   (B, out_dim), unit norm
    P_0 = normalize(C_0);  P_l[k] = normalize(P_{l-1}[parent(k)] + R_l[k])
    logits_l = z P_l^T / temperature                            (B, K_l)

with `parent(k) = k // (K_l / K_{l-1})`: every fine prototype is its coarse parent plus a
learned residual, so the levels form a hierarchy by construction.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from hir_sdk.model.config import PrototypeConfig


class ProjectionHead(nn.Module):
    def __init__(self, dim: int, out_dim: int) -> None:
        super().__init__()
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, out_dim))

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return F.normalize(self.proj(h), dim=-1)


class PrototypeHeads(nn.Module):
    def __init__(self, out_dim: int, config: PrototypeConfig) -> None:
        super().__init__()
        self.config = config
        self.coarse = nn.Parameter(torch.randn(config.sizes[0], out_dim))
        self.residuals = nn.ParameterList(
            nn.Parameter(0.1 * torch.randn(size, out_dim)) for size in config.sizes[1:]
        )

    def prototypes(self) -> list[torch.Tensor]:
        """Unit-norm prototypes of every level, coarse to fine."""
        levels = [F.normalize(self.coarse, dim=-1)]
        for size, residual in zip(self.config.sizes[1:], self.residuals, strict=True):
            parent = torch.arange(size, device=residual.device) // (size // len(levels[-1]))
            levels.append(F.normalize(levels[-1][parent] + residual, dim=-1))
        return levels

    def parents(self, level: int) -> torch.Tensor:
        """Parent index (in level - 1) of each prototype of `level` >= 1."""
        sizes = self.config.sizes
        return torch.arange(sizes[level]) // (sizes[level] // sizes[level - 1])

    def similarities(self, z: torch.Tensor) -> list[torch.Tensor]:
        """Cosine similarity of unit-norm `z` to every prototype, per level."""
        return [z @ p.T for p in self.prototypes()]

    def forward(self, z: torch.Tensor) -> list[torch.Tensor]:  # (B, out) -> [(B, K_l)]
        return [s / self.config.temperature for s in self.similarities(z)]
