"""The Hierarchical Encoder: node encoder -> graph transformer with structural attention
biases -> anchor embedding in the shared metric space -> interest-cluster logits.

Notable:
- one packed token sequence per batch of subgraphs; the anchor is each subgraph's first
  token, and its final state is the subgraph's representation, so the last layer runs
  only the anchors' queries (every token's keys and values), and its MLP on them alone;
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

from hir_sdk.model.attention import (
    MIN_COMPILED_HEAD_DIM,
    BiasedAttention,
    Impl,
    choose_impl,
    flex_block_mask,
)
from hir_sdk.model.attention_bias import BiasContext, StructuralBias, dense_bias
from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.heads import ProjectionHead, PrototypeHeads
from hir_sdk.model.inputs import EncoderInputs
from hir_sdk.model.node_encoder import NodeEncoder


@dataclass(frozen=True)
class EncoderOutput:
    tokens: torch.Tensor | None  # (L, dim) final token states, with `every_token` only
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
        self,
        x: torch.Tensor,
        ctx: BiasContext,
        impl: Impl,
        *,
        anchors: torch.Tensor | None = None,
        **attn: object,
    ) -> torch.Tensor:
        """(L, dim) -> (L, dim); with `anchors` (their packed indices), the anchors' new
        states (B, dim) only."""
        out = self.drop(self.attn(self.norm1(x), ctx, impl, anchors=anchors, **attn))
        x = (x if anchors is None else x[anchors]) + out
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
        compile_flex: bool | None = None,
        track_centers: bool | None = None,
        every_token: bool = False,
    ) -> EncoderOutput:
        """Encode a packed batch. `track_centers` (default: training mode) updates the
        projection's per-type running means from this batch. Only the anchors' final
        states are read, so the last layer runs on them alone (its keys and values still
        come from every token); `every_token` runs it on every token and returns all
        their final states as `tokens` (the same anchors, up to float rounding).

        `compile_flex` (FLEX only; default: on CUDA when the heads are wide enough for the
        compiled kernels) runs FlexAttention compiled: uncompiled FLEX with gradients on
        CUDA takes PyTorch's slow reference path, and on CPU compiling costs more than it
        saves for inference."""
        device = x.doc.device
        chosen = choose_impl(impl, device, torch.is_grad_enabled())
        ctx = self.bias.context(x)
        attn: dict[str, object] = {}
        if chosen is Impl.FLEX:
            if compile_flex is None:
                wide = self.config.dim // self.config.heads >= MIN_COMPILED_HEAD_DIM
                compile_flex = device.type == "cuda" and wide
            attn = {"block_mask": flex_block_mask(ctx, x.length, device), "compiled": compile_flex}
        else:
            attn = {"bias": dense_bias(ctx)}
        h = self.nodes(x)
        first = x.offsets[:-1]  # each subgraph's anchor token
        for i, block in enumerate(self.blocks):
            last = i == len(self.blocks) - 1 and not every_token
            h = block(h, ctx, chosen, anchors=first if last else None, **attn)
        h = self.norm(h)
        anchors = h[first] if every_token else h
        track = self.training if track_centers is None else track_centers
        z = self.project(anchors, x.node_type[first], track=track)
        return EncoderOutput(
            tokens=h if every_token else None,
            anchors=anchors,
            embedding=z,
            logits=self.prototypes(z),
            impl=chosen,
        )
