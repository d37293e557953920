"""The Hierarchical Encoder: node encoder -> graph transformer with structural attention
biases -> anchor embedding in the shared metric space -> interest-cluster logits.

Notable:
- one packed token sequence per batch of subgraphs; the anchor is each subgraph's first
  token, and its final state is the subgraph's representation;
- pre-norm blocks, `x += Attn(LN(x), bias)`, `x += MLP(LN(x))`; the structural bias
  (hop distance, node-type pair, recency, direct edges) is computed once per forward and
  shared by every layer;
- `Impl.FLEX` and `Impl.DENSE` compute the same function (tested against each other);
  `Impl.AUTO` chooses by device and grad mode (see `hir_sdk.model.attention`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from hir_sdk.model.attention import BiasedAttention, Impl, choose_impl, flex_block_mask
from hir_sdk.model.attention_bias import BiasContext, StructuralBias, dense_bias
from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.heads import ProjectionHead, PrototypeHeads
from hir_sdk.model.inputs import EncoderInputs
from hir_sdk.model.node_encoder import NodeEncoder


@dataclass(frozen=True)
class EncoderOutput:
    tokens: torch.Tensor  # (L, dim) final token states
    anchors: torch.Tensor  # (B, dim) anchor token states
    embedding: torch.Tensor  # (B, out_dim) unit-norm embeddings
    logits: list[torch.Tensor]  # per prototype level, (B, K_l)
    impl: Impl


class Block(nn.Module):
    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(config.dim)
        self.attn = BiasedAttention(config.dim, config.heads, config.dropout)
        self.norm2 = nn.LayerNorm(config.dim)
        self.mlp = nn.Sequential(
            nn.Linear(config.dim, config.mlp_ratio * config.dim),
            nn.GELU(),
            nn.Linear(config.mlp_ratio * config.dim, config.dim),
        )
        self.drop = nn.Dropout(config.dropout)

    def forward(
        self, x: torch.Tensor, ctx: BiasContext, impl: Impl, **attn: object
    ) -> torch.Tensor:
        x = x + self.drop(self.attn(self.norm1(x), ctx, impl, **attn))
        return x + self.drop(self.mlp(self.norm2(x)))


class HierarchicalEncoder(nn.Module):
    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        self.config = config
        self.nodes = NodeEncoder(config)
        self.bias = StructuralBias(config)
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.layers))
        self.norm = nn.LayerNorm(config.dim)
        self.project = ProjectionHead(
            config.dim, config.out_dim, config.num_node_types, center=config.center_types
        )
        self.prototypes = PrototypeHeads(config.out_dim, config.prototypes)

    def forward(
        self,
        x: EncoderInputs,
        impl: Impl = Impl.AUTO,
        *,
        compile_flex: bool = False,
        track_centers: bool | None = None,
    ) -> EncoderOutput:
        """Encode a packed batch. `track_centers` (default: training mode) updates the
        projection's per-type running means from this batch."""
        device = x.doc.device
        chosen = choose_impl(impl, device, torch.is_grad_enabled())
        ctx = self.bias.context(x)
        attn: dict[str, object] = {}
        if chosen is Impl.FLEX:
            attn = {"block_mask": flex_block_mask(ctx, x.length, device), "compiled": compile_flex}
        else:
            attn = {"bias": dense_bias(ctx)}
        h = self.nodes(x)
        for block in self.blocks:
            h = block(h, ctx, chosen, **attn)
        h = self.norm(h)
        anchors = h[x.offsets[:-1]]
        track = self.training if track_centers is None else track_centers
        z = self.project(anchors, x.node_type[x.offsets[:-1]], track=track)
        return EncoderOutput(
            tokens=h, anchors=anchors, embedding=z, logits=self.prototypes(z), impl=chosen
        )
