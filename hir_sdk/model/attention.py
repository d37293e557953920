"""Multi-head attention over packed subgraphs with structural biases, in two
implementations behind one `Impl` choice.

- FLEX: FlexAttention on the packed `(1, H, L, d)` sequence; the bias is computed on the
  fly by a `score_mod` and cross-subgraph pairs are skipped by a block mask. Nothing of
  size L x L is ever built. Forward runs on CPU and GPU; backward needs a GPU.
- DENSE: the readable reference. Tokens are scattered to a padded `(B, H, N, d)` stack,
  the `(B, H, N, N)` bias is materialized, and `scaled_dot_product_attention` runs. It is
  the CPU training path and the ONNX export path. Asked for the anchors alone (the last
  layer), it runs the anchors' queries against every key, on `(B, H, 1, N)` scores.

`Impl.AUTO` picks FLEX on CUDA or without gradients, DENSE for CPU training; the choice is
logged, and asking for FLEX where it cannot run raises instead of silently falling back.
"""

from __future__ import annotations

import contextlib
import enum
import logging

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812
from torch.nn.attention.flex_attention import BlockMask, flex_attention

from hir_sdk.model.attention_bias import BiasContext, dense_bias, mask_mod, padded_tokens, score_mod

log = logging.getLogger("hir_sdk.model")
_compiled_flex = None
# compiled FlexAttention's CUDA kernels need at least this many dimensions per head
MIN_COMPILED_HEAD_DIM = 16
# compiled FLEX sees new shapes each batch (packed length, pairs, edges); automatic dynamic
# shapes bound the recompiles, but grad modes and length buckets each add some
RECOMPILE_LIMIT = 32
_logged: set[tuple[str, str, bool]] = set()


class Impl(enum.Enum):
    AUTO = "auto"
    FLEX = "flex"
    DENSE = "dense"


def choose_impl(requested: Impl, device: torch.device, grad: bool) -> Impl:
    """The implementation to run; FLEX with gradients on CPU is an error, never a fallback."""
    if requested is Impl.AUTO:
        chosen = Impl.FLEX if device.type == "cuda" or not grad else Impl.DENSE
    elif requested is Impl.FLEX and device.type != "cuda" and grad:
        raise RuntimeError(
            "Impl.FLEX needs a GPU when gradients are on: FlexAttention has no "
            "CPU backward. Use Impl.DENSE (or Impl.AUTO) to train on CPU."
        )
    else:
        chosen = requested
    key = (requested.value, device.type, grad)
    if key not in _logged:
        _logged.add(key)
        log.info(
            "attention: %s -> %s (device %s, grad %s)",
            requested.value,
            chosen.value,
            device.type,
            grad,
        )
    return chosen


def _flex(compiled: bool):  # noqa: ANN202
    global _compiled_flex
    if not compiled:
        return flex_attention
    if _compiled_flex is None:
        # dynamic=None: the first shape is compiled static, and a dimension that changes is
        # recompiled as symbolic once, instead of once per batch
        _compiled_flex = torch.compile(flex_attention, dynamic=None)
    return _compiled_flex


class BiasedAttention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(
        self,
        x: torch.Tensor,
        ctx: BiasContext,
        impl: Impl,
        *,
        block_mask: object = None,
        bias: torch.Tensor | None = None,
        compiled: bool = False,
        anchors: torch.Tensor | None = None,
    ) -> torch.Tensor:  # (L, dim) -> (L, dim), or (B, dim) for the `anchors` alone
        """Attention of every token, or with `anchors` (the packed index of each subgraph's
        first token) of the anchors' queries only: keys and values still come from every
        token, but the rest of the layer runs on B rows instead of L."""
        length, dim = x.shape
        if anchors is not None and impl is Impl.DENSE:
            return self.out(self._dense_anchors(x, ctx, bias, anchors))
        q, k, v = self.qkv(x).view(length, 3, self.heads, dim // self.heads).unbind(1)
        if impl is Impl.FLEX:
            if compiled and x.is_cuda and dim // self.heads < MIN_COMPILED_HEAD_DIM:
                raise ValueError(
                    f"compiled FlexAttention on CUDA needs at least {MIN_COMPILED_HEAD_DIM} "
                    f"dimensions per head; this layer has {dim // self.heads} ({dim} / "
                    f"{self.heads} heads): use fewer heads, or run FLEX uncompiled"
                )
            limit = (
                torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT)
                if compiled
                else contextlib.nullcontext()
            )
            with limit:
                out = _flex(compiled)(
                    q.transpose(0, 1)[None],
                    k.transpose(0, 1)[None],
                    v.transpose(0, 1)[None],
                    score_mod=score_mod(ctx),
                    block_mask=block_mask,
                )[0].transpose(0, 1)
        elif impl is Impl.DENSE:
            out = self._dense(q, k, v, ctx, bias)
        else:
            raise ValueError(f"resolve {impl} with choose_impl first")
        out = out.reshape(length, dim)
        return self.out(out if anchors is None else out[anchors])

    def _dense_anchors(
        self, x: torch.Tensor, ctx: BiasContext, bias: torch.Tensor | None, anchors: torch.Tensor
    ) -> torch.Tensor:  # (L, dim) -> (B, dim): the anchors' attention outputs
        length, dim = x.shape
        heads, width = self.heads, dim // self.heads
        weight, shift = self.qkv.weight, self.qkv.bias  # rows: queries, keys, values
        q = F.linear(x[anchors], weight[:dim], shift[:dim]).view(-1, heads, 1, width)
        k, v = F.linear(x, weight[dim:], shift[dim:]).view(length, 2, heads, width).unbind(1)
        token, _ = padded_tokens(ctx)  # (B, N); each anchor sits in slot 0
        bias = dense_bias(ctx) if bias is None else bias
        out = F.scaled_dot_product_attention(
            q,
            _padded(k, token),
            _padded(v, token),
            attn_mask=bias[:, :, :1],  # the anchors' rows (B, H, 1, N)
            dropout_p=self.dropout if self.training else 0.0,
        )  # (B, H, 1, d)
        return out.reshape(-1, dim)

    def _dense(
        self,
        q: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        ctx: BiasContext,
        bias: torch.Tensor | None,
    ) -> torch.Tensor:
        token, valid = padded_tokens(ctx)  # (B, N)
        bias = dense_bias(ctx) if bias is None else bias
        drop = self.dropout if self.training else 0.0
        out = F.scaled_dot_product_attention(
            _padded(q, token), _padded(k, token), _padded(v, token), attn_mask=bias, dropout_p=drop
        )
        flat = torch.zeros_like(q)
        flat[token[valid]] = out.permute(0, 2, 1, 3)[valid]
        return flat


def _padded(t: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """(L, H, d) packed rows -> (B, H, N, d) by the padded layout's token index."""
    return t[token].permute(0, 2, 1, 3)


def flex_block_mask(
    ctx: BiasContext, length: int, device: torch.device, block: int = 128
) -> BlockMask:
    """Block mask over the packed sequence: tokens attend within their own subgraph.

    Built directly from the document ids in O(blocks^2) memory, never L x L: subgraphs are
    contiguous runs of tokens, so a query block meets exactly the key blocks whose
    document range overlaps its own (a contiguous range of blocks), and a block pair is
    *full* (no per-token mask needed) when both blocks hold a single, shared document.
    Padding tokens form one more document at the end.
    """
    doc = ctx.doc.clone()
    doc[doc < 0] = len(ctx.sizes)  # padding: its own last document
    blocks = -(-length // block)
    padded = torch.full(
        (blocks * block,), int(doc[-1]) if length else 0, dtype=doc.dtype, device=doc.device
    )
    padded[:length] = doc
    per_block = padded.view(blocks, block)
    lo, hi = per_block.min(dim=1).values, per_block.max(dim=1).values  # docs are sorted
    j = torch.arange(blocks, device=doc.device)
    first = torch.searchsorted(hi.contiguous(), lo.contiguous())  # first key block reaching
    last = torch.searchsorted(lo.contiguous(), hi.contiguous(), right=True) - 1
    meets = (j[None, :] >= first[:, None]) & (j[None, :] <= last[:, None])
    single = lo == hi
    full = meets & single[:, None] & single[None, :] & (lo[:, None] == lo[None, :])
    partial = meets & ~full

    def as_kv(mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        counts = mask.sum(dim=1).to(torch.int32)
        order = torch.argsort((~mask).to(torch.int8), dim=1, stable=True).to(torch.int32)
        return counts[None, None].to(device), order[None, None].to(device)

    kv_num, kv_idx = as_kv(partial)
    full_num, full_idx = as_kv(full)
    return BlockMask.from_kv_blocks(
        kv_num,
        kv_idx,
        full_num,
        full_idx,
        BLOCK_SIZE=block,
        mask_mod=mask_mod(ctx),
        seq_lengths=(length, length),
    )
