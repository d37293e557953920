"""Balanced cluster targets over more rows than one batch holds.

Sinkhorn-Knopp balances a batch's assignment so that every cluster gets an equal share.
Two things make a single batch a poor population to balance over:

- size: 64 anchors cannot be spread evenly over 1,024 fine clusters;
- node types: a batch mixes users, ads and products, and the cheapest balanced solution
  is to give each type its own clusters, which tells nothing about interests.

So the targets are balanced over the batch plus a FIFO queue of recent teacher embeddings
(as in SwAV), separately within each node type: every type spreads over all clusters, and
an interest cluster has to hold users *and* the ads they engage with.

```
queue  z (Q, out_dim)  type (Q,)      filled oldest-first, -1 type = empty slot
rows of type t:  [batch rows of t ; queue rows of t]  -> Sinkhorn -> keep the batch rows
```
The queue holds teacher embeddings (not similarities), so its rows are re-scored against
the current prototypes at every step; it is part of the checkpoint state.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from hir_sdk.training.sinkhorn import sinkhorn_knopp

EMPTY = -1


class ClusterQueue:
    def __init__(self, size: int, dim: int, device: torch.device | str = "cpu") -> None:
        if size < 0:
            raise ValueError("ClusterQueue: size must be >= 0")
        self.z = torch.zeros(size, dim, device=device)  # (Q, dim)
        self.types = torch.full((size,), EMPTY, dtype=torch.long, device=device)  # (Q,)

    @property
    def size(self) -> int:
        return len(self.types)

    @torch.no_grad()
    def push(self, z: torch.Tensor, types: torch.Tensor) -> None:
        """Append `z (B, dim)` (newest last), dropping the oldest rows."""
        if self.size == 0:
            return
        self.z = torch.cat([self.z, z.detach().float()])[-self.size :]
        self.types = torch.cat([self.types, types])[-self.size :]

    @torch.no_grad()
    def targets(
        self,
        similarities: Callable[[torch.Tensor], list[torch.Tensor]],
        z: torch.Tensor,
        types: torch.Tensor,
        *,
        epsilon: float,
        iterations: int,
    ) -> list[torch.Tensor]:
        """Balanced targets (B, K_l) per level for teacher embeddings `z` of node `types`."""
        filled = self.types != EMPTY
        rows = torch.cat([z.float(), self.z[filled]])
        row_types = torch.cat([types, self.types[filled]])
        sims = similarities(rows)
        out = [torch.empty_like(s[: len(z)]) for s in sims]
        for t in torch.unique(types):
            mine = (row_types == t).nonzero().squeeze(1)
            batch_rows = mine[mine < len(z)]
            for level, s in enumerate(sims):
                q = sinkhorn_knopp(s[mine], epsilon=epsilon, iterations=iterations)
                out[level][batch_rows] = q[: len(batch_rows)]
        return out

    def state_dict(self) -> dict[str, torch.Tensor]:
        return {"z": self.z.cpu(), "types": self.types.cpu()}

    def load_state_dict(self, state: dict[str, torch.Tensor]) -> None:
        if state["z"].shape != self.z.shape:
            raise ValueError(
                f"ClusterQueue: saved queue {tuple(state['z'].shape)} does not fit "
                f"{tuple(self.z.shape)}"
            )
        self.z = state["z"].to(self.z.device)
        self.types = state["types"].to(self.types.device)
