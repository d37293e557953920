"""The encoder in the padded layout ONNX exports: packed subgraphs -> one row per subgraph.

The trained `HierarchicalEncoder` reads a packed token sequence and pads it to
`(B, N)` inside its DENSE attention path with data-dependent indexing. The exported
graph takes that padding as its input instead (`encoder_feeds` builds it in numpy from
the same `EncoderInputs`), so every shape in the graph is a plain dynamic dimension:

```
B subgraphs, N = largest subgraph, E edges; slot 0 of each row is the anchor
node_type hop recency (B, N) long   rw (B, N, K)  stats (B, N, S)  content (B, N, D)
has_content valid (B, N) bool       dhe (B, N, C)
spd (B, N, N) long                  edge_index (B, N, N) long: the edge joining the pair,
adjacency (B, N, N) float             E (the zero row) for none
edge_type edge_age (E,) long        edge_weight (E,) float
-> embedding (B, out_dim)  clusters (B, levels) long  logits_l (B, K_l) per level
```
`PaddedEncoder` reuses the trained modules (node encoder, tables, attention weights,
heads); only the glue that the packed path does by indexing is written again here, and
`tests/export` checks the two against each other.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from hir_sdk.model import HierarchicalEncoder
from hir_sdk.model.inputs import EncoderInputs


def encoder_input_names(encoder: HierarchicalEncoder) -> list[str]:
    """The graph's inputs, in order; content and stats only when the model has them."""
    c = encoder.config
    names = ["node_type", "hop", "rw", "dhe", "recency", "valid", "has_content"]
    names += ["content"] if c.content_dim else []
    names += ["stats"] if c.stats_dim else []
    return [*names, "spd", "edge_index", "adjacency", "edge_type", "edge_weight", "edge_age"]


def encoder_output_names(encoder: HierarchicalEncoder) -> list[str]:
    levels = len(encoder.config.prototypes.sizes)
    return ["embedding", "clusters", *(f"logits_{level}" for level in range(levels))]


class PaddedEncoder(nn.Module):
    """`HierarchicalEncoder` (eval) on the padded inputs of `encoder_feeds`."""

    def __init__(self, encoder: HierarchicalEncoder) -> None:
        super().__init__()
        self.encoder = encoder.eval()
        self.names = encoder_input_names(encoder)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = dict(zip(self.names, inputs, strict=True))
        enc, c = self.encoder, self.encoder.config
        node_type = x["node_type"]
        has_content = x["has_content"]
        content = x.get("content", torch.zeros(*node_type.shape, 0))
        neighbours = None
        if c.content_dim:  # the packed path's neighbour_content: one propagation step
            total = x["adjacency"] @ (content * has_content[..., None])
            neighbours = F.normalize(total, dim=-1)
        stats = x.get("stats", torch.zeros(*node_type.shape, 0))
        h = enc.nodes.combine(
            node_type, x["dhe"], x["rw"], x["hop"], has_content, content, neighbours, stats
        )
        bias = self._bias(x, enc)
        for block in enc.blocks:
            h = h + block.attn.out(_attend(block.attn.qkv(block.norm1(h)), bias, c.heads))
            h = h + block.mlp(block.norm2(h))
        anchors = enc.norm(h)[:, 0]
        z = enc.project(anchors, node_type[:, 0], track=False)
        logits = enc.prototypes(z)
        clusters = torch.stack([lg.argmax(dim=1) for lg in logits], dim=1)
        return (z, clusters, *logits)

    @staticmethod
    def _bias(x: dict[str, torch.Tensor], enc: HierarchicalEncoder) -> torch.Tensor:
        """(B, H, N, N): `attention_bias._value` per pair with -inf on padded keys, built
        as `attention_bias._inference_bias` builds it (same additions, same order): the
        spd, type-pair and recency tables summed ahead into one row per code plus a -inf
        row: one gather for those, one for the edge biases."""
        s = enc.bias
        spd, types, ages = s.spd.weight, s.pair.weight, s.time.weight
        heads = spd.shape[1]
        table = (spd[:, None, None, :] + types[None, :, None, :]) + ages[None, None, :, :]
        table = table.reshape(-1, heads)
        table = torch.cat([table, table.new_full((1, heads), float("-inf"))])  # (codes + 1, H)
        node_type = x["node_type"]
        pair = node_type[:, :, None] * s.num_types + node_type[:, None, :]
        code = (x["spd"] * len(types) + pair) * len(ages) + x["recency"][:, None, :]
        code = torch.where(x["valid"][:, None, :], code, table.shape[0] - 1)  # padded keys
        edges = s.edges(x["edge_type"], x["edge_weight"], x["edge_age"])
        edges = torch.cat([edges, edges.new_zeros(1, heads)])  # (E + 1, H): "no edge" last
        return (table[code] + edges[x["edge_index"]]).permute(0, 3, 1, 2)


def _attend(qkv: torch.Tensor, bias: torch.Tensor, heads: int) -> torch.Tensor:
    """(B, N, 3 * dim) projections -> (B, N, dim) biased multi-head attention."""
    batch, n, width = qkv.shape
    dim = width // 3
    q, k, v = qkv.view(batch, n, 3, heads, dim // heads).permute(2, 0, 3, 1, 4).unbind(0)
    # scaled_dot_product_attention written out: its decomposition does not export with
    # dynamic shapes (a view of a permuted tensor); the values agree to float rounding
    scores = (q @ k.transpose(-1, -2)) * (dim // heads) ** -0.5 + bias
    out = scores.softmax(dim=-1) @ v  # (B, H, N, d)
    return out.transpose(1, 2).reshape(batch, n, dim)


def encoder_feeds(x: EncoderInputs, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The padded inputs `names` (`encoder_input_names`, or the names `encoder.onnx`
    takes) of `PaddedEncoder` for a packed batch."""
    a = {name: tensor.numpy() for name, tensor in vars(x).items()}
    offsets, doc, local = a["offsets"], a["doc"], a["local"]
    sizes = np.diff(offsets)
    batch, n = len(sizes), int(sizes.max()) if len(sizes) else 1
    slot = np.arange(n)
    valid = slot[None, :] < sizes[:, None]  # (B, N)
    token = np.where(valid, offsets[:-1, None] + slot[None, :], 0)
    feeds = {
        name: a[name][token] for name in ("node_type", "hop", "rw", "dhe", "recency", "content")
    }
    feeds["stats"] = a["stats"][token]
    feeds["has_content"] = a["has_content"][token] & valid
    feeds["valid"] = valid
    # pair blocks: the flat per-subgraph blocks (spd, and the edge joining each pair as
    # the packed path finds it) scattered into (B, N, N); padded pairs: spd 0, no edge
    pair_doc = np.repeat(np.arange(batch), sizes**2)
    within = np.arange(len(pair_doc)) - a["spd_offsets"][pair_doc]
    size = sizes[pair_doc]
    cell = (pair_doc * n + within // size) * n + within % size
    spd = np.zeros(batch * n * n, dtype=np.int64)
    spd[cell] = a["spd"]
    edges = len(a["edge_q"])
    edge_index = np.full(batch * n * n, edges, dtype=np.int64)
    edge_index[cell] = _edge_codes(a, edges)
    spd, edge_index = spd.reshape(batch, n, n), edge_index.reshape(batch, n, n)
    q, k = a["edge_q"], a["edge_k"]  # each edge feeds both ends, as neighbour_content
    cell = np.concatenate(
        [(doc[q] * n + local[q]) * n + local[k], (doc[k] * n + local[k]) * n + local[q]]
    )
    adjacency = np.bincount(cell, minlength=batch * n * n).astype(np.float32).reshape(batch, n, n)
    feeds.update(
        spd=spd,
        edge_index=edge_index,
        adjacency=adjacency,
        edge_type=a["edge_type"],
        edge_weight=a["edge_weight"],
        edge_age=a["edge_age"],
    )
    dtypes = {np.dtype(bool): np.bool_, np.dtype(np.float32): np.float32}
    out = {}
    for name in names:
        value = np.asarray(feeds[name])
        out[name] = np.ascontiguousarray(value, dtype=dtypes.get(value.dtype, np.int64))
    return out


def _edge_codes(a: dict[str, np.ndarray], edges: int) -> np.ndarray:
    """(S,) edge index joining each flat pair, `edges` for none: the rule of
    `StructuralBias.context` (own direction beats the reverse of another; then the
    highest index)."""
    sizes = np.diff(a["offsets"])

    def pair_index(q: np.ndarray, k: np.ndarray) -> np.ndarray:
        d = a["doc"][q]
        return a["spd_offsets"][d] + a["local"][q] * sizes[d] + a["local"][k]

    best = np.full(len(a["spd"]), -1, dtype=np.int64)
    codes = np.arange(edges)
    q, k = a["edge_q"], a["edge_k"]
    index = np.concatenate([pair_index(k, q), pair_index(q, k)])
    ranked = np.concatenate([codes, codes + edges])
    order = np.lexsort((ranked, index))  # by pair, then rank: each pair's max comes last
    index, ranked = index[order], ranked[order]
    last = np.append(index[1:] != index[:-1], True)
    best[index[last]] = ranked[last]
    code = np.where(best >= edges, best - edges, best)
    return np.where(code >= 0, code, edges)
