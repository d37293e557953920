"""The encoder as ONNX exports it: packed tokens, with attention over padded subgraphs.

The trained `HierarchicalEncoder` reads a packed token sequence and pads it to
`(B, N)` inside its DENSE attention path with data-dependent indexing. The exported
graph keeps every per-token layer (node encoder, projections, MLPs) on the packed
tokens, as the torch path does, and takes the indexing between the two layouts as
inputs (`encoder_feeds` builds them in numpy from the same `EncoderInputs`, with the
parameter-free neighbour-content step, as the structural encodings are), so every
shape in the graph is a plain dynamic dimension:

```
L tokens (subgraph after subgraph, anchor first), B subgraphs, N = largest subgraph
node_type hop recency (L,) long   rw (L, K)  dhe (L, C)  content (L, D)  stats (L, S)
has_content (L,) bool             neighbours (L, D): `node_encoder.neighbour_content`
token (B, N) long: the token in each slot, L for padding      valid (B, N) bool
slot (L,) long: each token's position b * N + n in the padded (B, N) layout
spd (B, N, N) long                edge_index (B, N, N) long: the edge joining the pair,
edge_type edge_age (E,) long        E (the zero row) for none; edge_weight (E,) float
-> embedding (B, out_dim)  clusters (B, levels) long  logits_l (B, K_l) per level
```
Attention pads each layer's packed query-key-value rows by gathering `token` (a zero
row for padding) and unpads its output by gathering `slot`: padded slots cost only in
the attention itself, never in the per-token layers. The last layer runs the anchors'
queries only, and its MLP on the B anchors, as the torch model does. `PackedEncoder`
reuses the trained modules (node encoder, tables, attention weights, heads); only the
glue that the packed path does by indexing is written again here, and `tests/export`
checks the two against each other.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812

from hir_sdk.model import HierarchicalEncoder
from hir_sdk.model.inputs import EncoderInputs

# every input an encoder graph may take, in order (`encoder_input_names` picks among them)
KNOWN_INPUTS = (
    *("node_type", "hop", "rw", "dhe", "recency", "has_content", "content", "neighbours"),
    *("stats", "token", "valid", "slot", "spd", "edge_index"),
    *("edge_type", "edge_weight", "edge_age"),
)


def encoder_input_names(encoder: HierarchicalEncoder) -> list[str]:
    """The graph's inputs, in order; content and stats only when the model has them."""
    c = encoder.config
    left_out = set() if c.content_dim else {"content", "neighbours"}
    left_out |= set() if c.stats_dim else {"stats"}
    return [name for name in KNOWN_INPUTS if name not in left_out]


def encoder_output_names(encoder: HierarchicalEncoder) -> list[str]:
    levels = len(encoder.config.prototypes.sizes)
    return ["embedding", "clusters", *(f"logits_{level}" for level in range(levels))]


class PackedEncoder(nn.Module):
    """`HierarchicalEncoder` (eval) on the inputs of `encoder_feeds`."""

    def __init__(self, encoder: HierarchicalEncoder) -> None:
        super().__init__()
        self.encoder = encoder.eval()
        self.names = encoder_input_names(encoder)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, ...]:
        x = dict(zip(self.names, inputs, strict=True))
        enc, c = self.encoder, self.encoder.config
        node_type, has_content = x["node_type"], x["has_content"]
        content = x.get("content", torch.zeros(*node_type.shape, 0))
        neighbours = x.get("neighbours")  # None without content
        stats = x.get("stats", torch.zeros(*node_type.shape, 0))
        h = enc.nodes.combine(
            node_type, x["dhe"], x["rw"], x["hop"], has_content, content, neighbours, stats
        )  # (L, dim)
        token, slot = x["token"], x["slot"]
        batch, n = token.shape
        bias = self._bias(x, enc)
        anchor = token[:, 0]
        for block in enc.blocks[:-1]:
            qkv = block.attn.qkv(block.norm1(h))  # (L, 3 * dim)
            padded = _rows(torch.cat([qkv, qkv.new_zeros(1, qkv.shape[1])]), token)  # (B, N, 3d)
            attended = _rows(_attend(padded, bias, c.heads).reshape(batch * n, -1), slot)  # (L, d)
            h = h + block.attn.out(attended)
            h = h + block.mlp(block.norm2(h))
        # the last layer on the anchors alone, as the torch path runs it
        last = enc.blocks[-1]
        normed = last.norm1(h)
        weight, shift = last.attn.qkv.weight, last.attn.qkv.bias
        q = F.linear(_rows(normed, anchor), weight[: c.dim], shift[: c.dim])  # (B, dim)
        kv = F.linear(normed, weight[c.dim :], shift[c.dim :])  # (L, 2 * dim)
        padded = _rows(torch.cat([kv, kv.new_zeros(1, kv.shape[1])]), token)  # (B, N, 2d)
        h = _rows(h, anchor) + last.attn.out(_attend_anchors(q, padded, bias, c.heads))
        h = h + last.mlp(last.norm2(h))  # (B, dim)
        z = enc.project(enc.norm(h), node_type[anchor], track=False)
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
        token = x["token"]
        node_type = _rows(torch.cat([x["node_type"], x["node_type"].new_zeros(1)]), token)
        recency = _rows(torch.cat([x["recency"], x["recency"].new_zeros(1)]), token)
        pair = node_type[:, :, None] * s.num_types + node_type[:, None, :]
        code = (x["spd"] * len(types) + pair) * len(ages) + recency[:, None, :]
        code = torch.where(x["valid"][:, None, :], code, table.shape[0] - 1)  # padded keys
        edges = s.edges(x["edge_type"], x["edge_weight"], x["edge_age"])
        edges = torch.cat([edges, edges.new_zeros(1, heads)])  # (E + 1, H): "no edge" last
        return (_rows(table, code) + _rows(edges, x["edge_index"])).permute(0, 3, 1, 2)


def _rows(table: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """`table[index]` for an integer index of any shape, as one row gather (ONNX Gather,
    which onnxruntime runs far faster than the GatherND that indexing exports to)."""
    rows = table.index_select(0, index.reshape(-1))
    return rows.reshape(*index.shape, *table.shape[1:])


def _attend_anchors(
    q: torch.Tensor, kv: torch.Tensor, bias: torch.Tensor, heads: int
) -> torch.Tensor:
    """(B, dim) anchor queries, (B, N, 2 * dim) padded keys and values -> (B, dim): the
    anchors' rows (slot 0) of `_attend`."""
    batch, n, width = kv.shape
    dim = width // 2
    k, v = kv.view(batch, n, 2, heads, dim // heads).permute(2, 0, 3, 1, 4).unbind(0)
    q = q.view(batch, heads, 1, dim // heads)
    scores = (q @ k.transpose(-1, -2)) * (dim // heads) ** -0.5 + bias[:, :, :1]
    return (scores.softmax(dim=-1) @ v).reshape(batch, dim)  # (B, H, 1, d) -> (B, dim)


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
    """The inputs `names` (`encoder_input_names`, or the names `encoder.onnx` takes) of
    `PackedEncoder` for a packed batch: its real tokens, and the padded layout's index."""
    a = {name: tensor.numpy() for name, tensor in vars(x).items()}
    offsets, doc, local = a["offsets"], a["doc"], a["local"]
    sizes = np.diff(offsets)
    batch, n = len(sizes), int(sizes.max()) if len(sizes) else 1
    length = int(offsets[-1])  # the tokens after it pad the packed sequence: dropped
    position = np.arange(n)
    valid = position[None, :] < sizes[:, None]  # (B, N)
    per_token = ("node_type", "hop", "rw", "dhe", "recency", "content", "stats", "has_content")
    feeds = {name: a[name][:length] for name in per_token}
    feeds["token"] = np.where(valid, offsets[:-1, None] + position[None, :], length)
    feeds["valid"] = valid
    feeds["slot"] = doc[:length] * n + local[:length]
    if "neighbours" in names:  # parameter-free, like the structural encodings
        feeds["neighbours"] = _neighbour_content(x)[:length]
    # the flat per-subgraph spd blocks scattered into (B, N, N), padded pairs 0; the
    # cells an edge joins get that edge's index, every other cell "no edge"
    spd = np.zeros((batch, n, n), dtype=np.int64)
    spd[valid[:, :, None] & valid[:, None, :]] = a["spd"]  # C order: block by block, rows
    edges = len(a["edge_q"])
    edge_index = np.full(batch * n * n, edges, dtype=np.int64)
    pairs, codes = _edge_codes(a, n)
    edge_index[pairs] = codes
    feeds.update(
        spd=spd,
        edge_index=edge_index.reshape(batch, n, n),
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


def _neighbour_content(x: EncoderInputs) -> np.ndarray:
    """`node_encoder.neighbour_content` as one sparse (L, L) x (L, D) product: the same
    sums, added in another order (float rounding apart), at a fraction of the time of
    the torch path's ordered sum, which reproduces `index_add` bit for bit for training."""
    target = torch.cat([x.edge_q, x.edge_k]).numpy()
    source = torch.cat([x.edge_k, x.edge_q]).numpy()
    length = len(x.content)
    has_content = x.has_content.numpy()
    pairs, count = np.unique(target * length + source, return_counts=True)  # edges per pair
    rows = np.zeros(length + 1, dtype=np.int64)
    np.cumsum(np.bincount(pairs // length, minlength=length), out=rows[1:])
    with warnings.catch_warnings():  # "sparse CSR support is in beta"
        warnings.simplefilter("ignore", UserWarning)
        adjacency = torch.sparse_csr_tensor(
            torch.from_numpy(rows),
            torch.from_numpy(pairs % length),
            torch.from_numpy((count * has_content[pairs % length]).astype(np.float32)),
            (length, length),
            check_invariants=True,
        )
        total = adjacency @ x.content  # sources without content weigh 0
    return F.normalize(total, dim=-1).numpy()


def _edge_codes(a: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, np.ndarray]:
    """The padded (B, N, N) cells that an edge joins and the edge index each gets: the
    rule of `StructuralBias.context` (own direction beats the reverse of another; then
    the highest index). Only the edges' cells are touched, not every pair."""
    doc, local = a["doc"], a["local"]
    q, k = a["edge_q"], a["edge_k"]
    edges = len(q)
    codes = np.arange(edges)
    cell = np.concatenate(
        [(doc[k] * n + local[k]) * n + local[q], (doc[q] * n + local[q]) * n + local[k]]
    )
    ranked = np.concatenate([codes, codes + edges])  # own direction ranks above reverse
    order = np.lexsort((ranked, cell))  # by cell, then rank: each cell's best comes last
    cell, ranked = cell[order], ranked[order]
    last = np.ones(cell.size, dtype=bool)  # (a batch may have no edges at all)
    last[:-1] = cell[1:] != cell[:-1]
    best = ranked[last]
    return cell[last], np.where(best >= edges, best - edges, best)
