"""Structural attention biases, shared by every layer, in two layouts of the same values.

For query token q and key token k of the same subgraph, per head h:

    bias(q, k, h) = T_spd[spd(q, k), h]                       capped shortest-path distance
                  + T_pair[type(q) * n_types + type(k), h]    node-type pair
                  + T_time[recency(k), h]                     how recently k was active
                  + b_e[h]  if an edge e joins q and k        edge encoder (either direction)

`BiasContext` holds what both layouts need: the flat per-subgraph pair blocks (spd and the
edge code, never an L x L matrix) and the per-edge biases. `dense_bias` materializes the
padded `(B, H, N, N)` bias for the DENSE path; `score_mod` returns the FlexAttention
function that computes the same value on the fly for the FLEX path.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from hir_sdk.model.config import EncoderConfig
from hir_sdk.model.edge_encoder import EdgeEncoder
from hir_sdk.model.inputs import EncoderInputs


@dataclass(frozen=True)
class BiasContext:
    doc: torch.Tensor  # (L,) subgraph of each token, -1 padding
    local: torch.Tensor  # (L,)
    node_type: torch.Tensor  # (L,)
    recency: torch.Tensor  # (L,)
    sizes: torch.Tensor  # (B,) tokens per subgraph
    offsets: torch.Tensor  # (B+1,) token offsets
    spd: torch.Tensor  # (S,) flat per-subgraph blocks
    spd_offsets: torch.Tensor  # (B+1,)
    edge_code: torch.Tensor  # (S,) edge index joining the pair, E (the zero row) for none
    edge_bias: torch.Tensor  # (E + 1, H); the last row is zeros, for pairs without an edge
    spd_table: torch.Tensor  # (spd values, H)
    pair_table: torch.Tensor  # (n_types^2, H)
    time_table: torch.Tensor  # (age buckets, H)
    num_types: int

    def pair_index(self, q: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        """Flat block index of token pairs (valid when both are in one subgraph)."""
        d = self.doc[q].clamp(min=0)
        idx = self.spd_offsets[d] + self.local[q] * self.sizes[d] + self.local[k]
        return idx.clamp(0, max(len(self.spd) - 1, 0))


class StructuralBias(nn.Module):
    def __init__(self, config: EncoderConfig) -> None:
        super().__init__()
        h = config.heads
        self.num_types = config.num_node_types
        self.spd = nn.Embedding(config.spd_values, h)
        self.pair = nn.Embedding(config.num_node_types**2, h)
        self.time = nn.Embedding(config.age_buckets, h)
        self.edges = EdgeEncoder(config)
        for table in (self.spd, self.pair, self.time):
            nn.init.zeros_(table.weight)

    def context(self, x: EncoderInputs) -> BiasContext:
        sizes = x.offsets[1:] - x.offsets[:-1]
        ctx = BiasContext(
            doc=x.doc,
            local=x.local,
            node_type=x.node_type,
            recency=x.recency,
            sizes=sizes,
            offsets=x.offsets,
            spd=x.spd,
            spd_offsets=x.spd_offsets,
            edge_code=torch.full_like(x.spd, -1),
            edge_bias=_with_zero_row(self.edges(x.edge_type, x.edge_weight, x.edge_age)),
            spd_table=self.spd.weight,
            pair_table=self.pair.weight,
            time_table=self.time.weight,
            num_types=self.num_types,
        )
        # each pair gets the edge joining it; an edge in the pair's own direction wins over
        # the reverse of another, decided by a max (order-independent, so deterministic)
        edges = len(x.edge_q)
        codes = torch.arange(edges, device=x.spd.device)
        index = torch.cat([ctx.pair_index(x.edge_k, x.edge_q), ctx.pair_index(x.edge_q, x.edge_k)])
        ranked = torch.cat([codes, codes + edges])
        best = torch.full_like(x.spd, -1).scatter_reduce(0, index, ranked, "amax")
        code = torch.where(best >= edges, best - edges, best)
        ctx.edge_code.copy_(torch.where(code >= 0, code, edges))
        return ctx


def _value(ctx: BiasContext, q: torch.Tensor, k: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """The bias of token pairs `(q, k)` for heads `h` (all broadcastable)."""
    idx = ctx.pair_index(q, k)
    bias = (
        ctx.spd_table[ctx.spd[idx], h]
        + ctx.pair_table[ctx.node_type[q] * ctx.num_types + ctx.node_type[k], h]
        + ctx.time_table[ctx.recency[k], h]
    )
    return bias + ctx.edge_bias[ctx.edge_code[idx], h]


def _with_zero_row(edge_bias: torch.Tensor) -> torch.Tensor:
    """(E, H) -> (E + 1, H): a batch without any edge still has a row to index."""
    return torch.cat([edge_bias, edge_bias.new_zeros(1, edge_bias.shape[1])])


def padded_tokens(ctx: BiasContext) -> tuple[torch.Tensor, torch.Tensor]:
    """(B, N) flat token index of each padded slot (0 where padded) and its validity."""
    n = int(ctx.sizes.max()) if len(ctx.sizes) else 1
    slot = torch.arange(n, device=ctx.sizes.device)
    valid = slot[None, :] < ctx.sizes[:, None]
    token = torch.where(valid, ctx.offsets[:-1, None] + slot[None, :], torch.zeros_like(slot))
    return token, valid


def dense_bias(ctx: BiasContext) -> torch.Tensor:
    """(B, H, N, N) bias with -inf on padded keys: the DENSE path's attention mask."""
    token, valid = padded_tokens(ctx)
    if _eager_inference():
        return _inference_bias(ctx, token, valid)
    heads = ctx.spd_table.shape[1]
    q = token[:, :, None, None]
    k = token[:, None, :, None]
    h = torch.arange(heads, device=token.device)[None, None, None, :]
    bias = _value(ctx, q, k, h)  # (B, N, N, H)
    bias = bias.masked_fill(~valid[:, None, :, None], float("-inf"))
    return bias.permute(0, 3, 1, 2)


def _eager_inference() -> bool:
    """No gradients and no tracing or compiling: `_inference_bias` may replace `_value`."""
    return not (torch.is_grad_enabled() or torch.jit.is_tracing() or torch.compiler.is_compiling())


def _inference_bias(ctx: BiasContext, token: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """`dense_bias`'s values, bit for bit, in far fewer passes, and contiguous (attention
    would otherwise copy the permuted bias in every layer). Inference only: no gradient
    reaches the tables.

    The three small tables are summed ahead into one row per (spd, type pair, recency)
    code, with the same float additions in the same order, plus a row of -inf for padded
    keys; indices are built once per pair (not per pair and head) by broadcasting
    per-token parts. Pairs without an edge add the zero row, i.e. `+ 0.0`; pairs with an
    edge (few) get their own edge row added apart, found from the flat per-subgraph
    blocks. Rows of padded queries (whose outputs are dropped) carry no edge rows.
    """
    spd, types, ages = ctx.spd_table, ctx.pair_table, ctx.time_table
    table = (spd[:, None, None, :] + types[None, :, None, :]) + ages[None, None, :, :]
    table = table.reshape(-1, table.shape[-1])
    masked = table.new_full((1, table.shape[1]), float("-inf"))
    by_head = torch.cat([table + 0.0, masked]).T.contiguous()  # (H, codes + 1)
    doc = ctx.doc[token].clamp(min=0)  # as pair_index, per token
    local = ctx.local[token]
    row = ctx.spd_offsets[doc] + local * ctx.sizes[doc]
    idx = (row[:, :, None] + local[:, None, :]).clamp_(0, max(len(ctx.spd) - 1, 0))
    node_type = ctx.node_type[token]
    code = ctx.spd[idx] * len(types) + (node_type * ctx.num_types)[:, :, None]
    code += node_type[:, None, :]
    code *= len(ages)
    code += ctx.recency[token][:, None, :]
    code.masked_fill_(~valid[:, None, :], len(table))  # padded keys: the -inf row
    batch, n = token.shape
    bias = torch.empty(batch, len(by_head), n, n, dtype=table.dtype, device=table.device)
    for h, values in enumerate(by_head):
        bias[:, h] = values[code]
    # the pairs an edge joins, found in the flat blocks (few), not in all B x N x N pairs
    pair = torch.nonzero(ctx.edge_code != len(ctx.edge_bias) - 1).squeeze(1)
    b = torch.searchsorted(ctx.spd_offsets, pair, right=True) - 1
    rel = pair - ctx.spd_offsets[b]  # q * size + k within its subgraph's block
    q = rel.div(ctx.sizes[b], rounding_mode="floor")
    k = rel - q * ctx.sizes[b]
    bias.permute(0, 2, 3, 1)[b, q, k] = table[code[b, q, k]] + ctx.edge_bias[ctx.edge_code[pair]]
    return bias


def score_mod(ctx: BiasContext):  # noqa: ANN201 - FlexAttention's callable type
    """FlexAttention `score_mod` adding the structural bias on the fly."""

    def structural_bias(score, b, h, q_idx, kv_idx):  # noqa: ANN001, ANN202
        return score + _value(ctx, q_idx, kv_idx, h)

    return structural_bias


def mask_mod(ctx: BiasContext):  # noqa: ANN201
    """FlexAttention `mask_mod`: attend only within the same subgraph (document)."""
    doc = ctx.doc

    def same_subgraph(b, h, q_idx, kv_idx):  # noqa: ANN001, ANN202
        return doc[q_idx] == doc[kv_idx]

    return same_subgraph
