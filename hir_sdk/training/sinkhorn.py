"""Sinkhorn-Knopp: turn a batch's cluster scores into a balanced soft assignment.

Given scores `S (B, K)`, find `Q = diag(u) exp(S / eps) diag(v)` whose rows sum to 1 (each
example is fully assigned) and whose columns sum to `B / K` (every cluster gets an equal
share of the batch), by alternating row and column normalization. Balancing the
teacher's targets is what keeps self-distillation from collapsing onto a few clusters.
"""

from __future__ import annotations

import torch


@torch.no_grad()
def sinkhorn_knopp(
    scores: torch.Tensor, *, epsilon: float = 0.05, iterations: int = 3
) -> torch.Tensor:
    """(B, K) scores -> (B, K) assignment with rows summing to 1 and columns near B / K."""
    if scores.ndim != 2:
        raise ValueError(f"sinkhorn_knopp expects (B, K) scores, got {tuple(scores.shape)}")
    if not epsilon > 0 or iterations < 1:
        raise ValueError("sinkhorn_knopp needs epsilon > 0 and iterations >= 1")
    logits = scores.float() / epsilon
    q = torch.exp(logits - logits.max())  # (B, K), stable
    batch, clusters = q.shape
    q /= q.sum()
    for _ in range(iterations):
        q /= q.sum(dim=0, keepdim=True)  # columns: each cluster 1/K of the mass
        q /= clusters
        q /= q.sum(dim=1, keepdim=True)  # rows: each example 1/B of the mass
        q /= batch
    return (q * batch).to(scores.dtype)
