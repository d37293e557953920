"""Node encoder: what a token is, before attention.

    h0 = LayerNorm( E_type[t] + MLP_dhe(dhe code)            # id, no per-id table
                    + LN_c(W_c content)  (or u_t if the node has no content)
                    + LN_n(W_n neighbour_content)
                    + W_s stats + W_rw rw + E_hop[hop] )

The content terms are layer-normalized: the projection of a unit 384-d vector is ~30x
smaller than the type embedding, and without the norm it never mattered. `u_t` is a
learned per-type "unknown content" vector. `neighbour_content` is the normalized mean
content of the token's direct-edge neighbours inside its subgraph (one parameter-free
propagation step): a user, who has no text of their own, is described by the ads and
products they engaged with, and only through edges visible at the view's cutoff, so it
leaks nothing. The deep hash embedding (DHE) maps the node's dense hash code through a
small shared MLP, so its parameter count does not depend on how many ids exist, and ids
never seen in training still get an embedding.
"""

from __future__ import annotations

import numpy as np
import torch
from torch import nn

from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.inputs import EncoderInputs


class DeepHashEmbedding(nn.Module):
    """Dense hash code (`codes` values in [-1, 1]) -> MLP -> `dim`; zero codes -> zero."""

    def __init__(self, codes: int, hidden: int, dim: int) -> None:
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(codes, hidden), nn.Mish(), nn.Linear(hidden, dim))

    def forward(self, code: torch.Tensor) -> torch.Tensor:  # (L, C) -> (L, dim)
        known = code.abs().sum(dim=-1, keepdim=True) > 0
        return self.mlp(code) * known


class NodeEncoder(nn.Module):
    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        c = config
        self.node_type = nn.Embedding(c.num_node_types, c.dim)
        self.dhe = DeepHashEmbedding(c.deep_hash.codes, c.deep_hash.hidden, c.dim)
        self.content = nn.Linear(c.content_dim, c.dim) if c.content_dim else None
        self.neighbour_content = nn.Linear(c.content_dim, c.dim) if c.content_dim else None
        # content enters at the scale of the other parts (a raw projection of a unit vector
        # is ~30x smaller than the type embedding and would be drowned out)
        self.content_norm = nn.LayerNorm(c.dim) if c.content_dim else None
        self.neighbour_norm = nn.LayerNorm(c.dim) if c.content_dim else None
        self.unknown = nn.Parameter(torch.zeros(c.num_node_types, c.dim))
        self.stats = nn.Linear(c.stats_dim, c.dim) if c.stats_dim else None
        self.rw = nn.Linear(c.rw_steps, c.dim)
        self.hop = nn.Embedding(c.spd_values, c.dim)
        self.norm = nn.LayerNorm(c.dim)
        nn.init.normal_(self.unknown, std=0.02)

    def forward(self, x: EncoderInputs) -> torch.Tensor:  # -> (L, dim)
        neighbours = neighbour_content(x) if self.content is not None else None
        return self.combine(
            x.node_type, x.dhe, x.rw, x.hop, x.has_content, x.content, neighbours, x.stats
        )

    def combine(
        self,
        node_type: torch.Tensor,  # (..., ) long
        dhe: torch.Tensor,  # (..., C)
        rw: torch.Tensor,  # (..., K)
        hop: torch.Tensor,  # (...,) long
        has_content: torch.Tensor,  # (...,) bool
        content: torch.Tensor,  # (..., D)
        neighbours: torch.Tensor | None,  # (..., D) neighbour content (None without content)
        stats: torch.Tensor,  # (..., S)
    ) -> torch.Tensor:  # -> (..., dim)
        """The token formula on per-token features of any leading shape: the packed
        `(L,)` layout here, the padded `(B, N)` one of the ONNX export."""
        h = self.node_type(node_type) + self.dhe(dhe) + self.rw(rw) + self.hop(hop)
        unknown = self.unknown[node_type]
        if self.content is not None and self.neighbour_content is not None:
            own = self.content_norm(self.content(content))
            h = h + torch.where(has_content[..., None], own, unknown)
            h = h + self.neighbour_norm(self.neighbour_content(neighbours))
        else:
            h = h + unknown
        if self.stats is not None:
            h = h + self.stats(stats)
        return self.norm(h)


def neighbour_content(x: EncoderInputs) -> torch.Tensor:  # -> (L, content_dim)
    """Unit-norm mean content of each token's direct-edge neighbours (both directions,
    counted once per edge) that have content; zeros where there are none."""
    content = x.content * x.has_content[:, None]
    target = torch.cat([x.edge_q, x.edge_k])
    source = torch.cat([x.edge_k, x.edge_q])
    return torch.nn.functional.normalize(_ordered_sum(content, target, source), dim=-1)


def _ordered_sum(rows: torch.Tensor, target: torch.Tensor, source: torch.Tensor) -> torch.Tensor:
    """`zeros.index_add(0, target, rows[source])`, bit for bit, in a few vectorized steps.

    `index_add` on CPU adds the rows one at a time in index order, so every output row
    is a sequential float sum of its contributions. Step `j` here adds the `j`-th
    contribution of every output row that has one, which keeps that order per row
    (a row gets one addition per step) without a per-edge loop. Needs no gradient
    (`rows` is model input); the index bookkeeping runs in numpy, which sorts small
    integer arrays far faster than torch on CPU.
    """
    if rows.requires_grad or rows.device.type != "cpu":
        return torch.zeros_like(rows).index_add(0, target, rows[source])
    values = rows.numpy()
    target, source = target.numpy(), source.numpy()
    total = np.zeros_like(values)
    order = np.argsort(target, kind="stable")
    target, source = target[order], source[order]
    counts = np.bincount(target, minlength=len(values))
    rank = np.arange(len(target)) - (np.cumsum(counts) - counts)[target]
    by_rank = np.argsort(rank, kind="stable")
    lo = 0
    for size in np.bincount(rank).tolist():
        step = by_rank[lo : lo + size]
        t = target[step]
        total[t] = total[t] + values[source[step]]
        lo += size
    return torch.from_numpy(total)
