"""Collapse diagnostics of interest clusters, logged every step.

- usage entropy: entropy of the batch's mean cluster probability, divided by log K
  (1.0 = every cluster used equally, 0.0 = everything in one cluster);
- empty share: share of clusters that are nobody's argmax in the batch.
"""

from __future__ import annotations

import math

import torch


@torch.no_grad()
def cluster_usage(probs: torch.Tensor) -> dict[str, float]:
    """Diagnostics of one level's (B, K) cluster probabilities."""
    clusters = probs.shape[1]
    mean = probs.mean(dim=0).clamp_min(1e-12)
    entropy = float(-(mean * mean.log()).sum()) / math.log(clusters) if clusters > 1 else 1.0
    used = torch.zeros(clusters, dtype=torch.bool, device=probs.device)
    used[probs.argmax(dim=1)] = True
    return {"usage_entropy": entropy, "empty_share": 1.0 - float(used.float().mean())}
