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
    """`z = normalize(W h - mean_t)`: the projection, centred on its node type's running
    mean, then put on the unit sphere.

    Without the centring, what node type a token is dominates its embedding (within one
    type, embeddings sit in a narrow cone), so clusters and nearest neighbours sort by
    type before interest. The per-type means are buffers, updated with momentum
    `center_momentum` from each batch the caller tracks (no gradient; the encoder tracks
    in training mode, and the trainer tracks the teacher's own batches). With
    `center=False` (the default encoder config) it is the plain `normalize(W h)`.
    """

    def __init__(
        self,
        dim: int,
        out_dim: int,
        num_types: int,
        center_momentum: float = 0.9,
        *,
        center: bool = True,
    ) -> None:
        super().__init__()
        self.center = center
        self.proj = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, out_dim))
        self.center_momentum = center_momentum
        self.register_buffer("centers", torch.zeros(num_types, out_dim))  # (T, out_dim)
        self.register_buffer("seen", torch.zeros(num_types, dtype=torch.bool))  # (T,)

    def forward(
        self, h: torch.Tensor, node_type: torch.Tensor, *, track: bool = False
    ) -> torch.Tensor:
        y = self.proj(h)  # (B, out_dim)
        if not self.center:
            return F.normalize(y, dim=-1)
        if track:
            self._update(y.detach().float(), node_type)
        return F.normalize(y - self.centers[node_type].to(y.dtype), dim=-1)

    @torch.no_grad()
    def _update(self, y: torch.Tensor, node_type: torch.Tensor) -> None:
        types = len(self.centers)
        count = torch.zeros(types, device=y.device).index_add_(
            0, node_type, torch.ones_like(node_type, dtype=y.dtype)
        )
        total = torch.zeros_like(self.centers).index_add_(0, node_type, y)
        present = count > 0
        mean = total / count.clamp_min(1)[:, None]
        m = torch.where(self.seen, self.center_momentum, 0.0)[:, None]
        updated = m * self.centers + (1 - m) * mean
        self.centers.copy_(torch.where(present[:, None], updated, self.centers))
        self.seen |= present


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
