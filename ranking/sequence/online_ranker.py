"""Stage 2, the online ranker: cheap per candidate, whatever the length of the history.

```
cached user embedding u (B, Du)      <- stage 1, read from the cache, not recomputed
recent events (B, R)  --EventTokenizer-->  (B, R, D)  + u as one more token
candidate: ad id, owner id, BoM tokens --EmbeddingBagCollection (sum)--> + HIR ad z
           + dense as-of features --> c (B, D)
target-aware attention: c queries the history tokens (multi-head)  --> a (B, D)
[c, a, u, c*u] --MLP--> h --MoE heads routed by the ad's super-interest--> click, conversion
```
Its cost depends on R (a few dozen recent events), not on the long history, which only
stage 1 reads.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn
from torchrec import EmbeddingBagCollection, EmbeddingBagConfig, KeyedJaggedTensor, PoolingType

from hir_sdk.ranking.sequence.config import OnlineRankerConfig
from hir_sdk.ranking.sequence.moe import MoEHeads
from hir_sdk.ranking.sequence.tokenizer import EventTokenizer, hash_ids

TASKS = ("click", "conversion")
SPARSE_FEATURES = ("ad_id", "owner_id", "bom")


@dataclass(frozen=True)
class CandidateInputs:
    """One row per (request, candidate)."""

    ad: torch.Tensor  # (B,) global ad index
    owner: torch.Tensor  # (B,) global owner index, -1 when none
    bom: torch.Tensor  # (B, M) BoM token ids, -1 when the ad has none
    hir: torch.Tensor  # (B, hir_dim) HIR ad embedding (zeros when none)
    hir_found: torch.Tensor  # (B,) bool
    route: torch.Tensor  # (B,) super-interest of the ad, -1 when unknown
    dense: torch.Tensor  # (B, F) scaled dense features


def candidate_kjt(ad: torch.Tensor, owner: torch.Tensor, bom: torch.Tensor, buckets: int):
    """The candidate's sparse features as one `KeyedJaggedTensor`:

    ```
    key       row 0         row 1        ...
    ad_id     [h(ad_0)]     [h(ad_1)]
    owner_id  [h(owner_0)]  []           (no owner: empty bag)
    bom       [t_0 .. t_M]  [t_0 .. t_M] (token ids; empty when the ad has none)
    ```
    """
    has_owner = owner >= 0
    has_bom = bom >= 0
    values = torch.cat([hash_ids(ad, buckets), hash_ids(owner[has_owner], buckets), bom[has_bom]])
    lengths = torch.cat(
        [torch.ones_like(ad), has_owner.to(torch.int64), has_bom.sum(dim=1).to(torch.int64)]
    )
    return KeyedJaggedTensor.from_lengths_sync(
        keys=list(SPARSE_FEATURES), values=values, lengths=lengths
    )


class OnlineRanker(nn.Module):
    def __init__(
        self,
        config: OnlineRankerConfig,
        *,
        num_actions: int,
        user_dim: int,
        hir_dim: int,
        dense_dim: int,
        bom_vocab: int,
        routes: int,
    ) -> None:
        super().__init__()
        c = self.config = config
        self.tokenizer = EventTokenizer(c.dim, num_actions, c.id_buckets, hir_dim, "ranker")
        self.sparse = EmbeddingBagCollection(
            tables=[
                EmbeddingBagConfig(
                    name=f"t_{name}",
                    embedding_dim=c.dim,
                    num_embeddings=bom_vocab if name == "bom" else c.id_buckets,
                    feature_names=[name],
                    pooling=PoolingType.SUM,
                )
                for name in SPARSE_FEATURES
            ]
        )
        self.user = nn.Linear(user_dim, c.dim)
        self.candidate = nn.Sequential(
            nn.Linear(len(SPARSE_FEATURES) * c.dim + hir_dim + 1 + dense_dim, c.dim),
            nn.LayerNorm(c.dim),
        )
        self.attention = nn.MultiheadAttention(c.dim, c.heads, dropout=0.0, batch_first=True)
        self.trunk = nn.Sequential(nn.Linear(4 * c.dim, c.hidden), nn.ReLU(), nn.Dropout(c.dropout))
        self.heads = MoEHeads(c.hidden, c.hidden // 2, c.experts, routes, len(TASKS), c.top_k)

    def context(
        self,
        user: torch.Tensor,  # (B, Du) cached stage-1 embedding
        recent: tuple[torch.Tensor, ...],  # item, action, age, mask, hir, hir_found: (B, R, ..)
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """The request side, computed once per request and shared by its candidates:
        (u (B, D), history tokens with u first (B, 1 + R, D), their keep mask (B, 1 + R))."""
        mask = recent[3]
        return self.context_of(user, self.tokenizer(*recent), mask)  # tokens (B, R, D)

    def context_of(
        self, user: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """`context` once the recent events are tokens (B, R, D) with their mask (B, R)."""
        u = self.user(user)
        keys = torch.cat([u[:, None], tokens], dim=1)  # u is always a valid key
        keep = torch.cat([torch.ones_like(mask[:, :1]), mask], dim=1)
        return u, keys, keep

    def score(
        self,
        cand: CandidateInputs,
        u: torch.Tensor,
        keys: torch.Tensor,
        keep: torch.Tensor,
    ) -> torch.Tensor:
        """(B, len(TASKS)) logits of candidates against their requests' `context` rows
        (broadcast views are fine: one request's context expanded to its candidates)."""
        pooled = self.sparse(candidate_kjt(cand.ad, cand.owner, cand.bom, self.config.id_buckets))
        return self.score_pooled(pooled.values(), cand, u, keys, keep)

    def sparse_table(self, name: str) -> torch.Tensor:
        """(rows, D) weights of the bag table of sparse feature `name` (SPARSE_FEATURES)."""
        return self.sparse.embedding_bags[f"t_{name}"].weight

    def score_pooled(
        self,
        sparse: torch.Tensor,  # (B, 3 * D) pooled bags, in SPARSE_FEATURES order
        cand: CandidateInputs,
        u: torch.Tensor,
        keys: torch.Tensor,
        keep: torch.Tensor,
    ) -> torch.Tensor:
        """`score` once the candidate's bags are pooled (by TorchRec here, by plain gathers
        and sums in the ONNX export); `cand`'s id fields are not read."""
        found = cand.hir_found[:, None].to(sparse.dtype)
        q = self.candidate(torch.cat([sparse, cand.hir, found, cand.dense], dim=1))  # (B, D)
        a, _ = self.attention(q[:, None], keys, keys, key_padding_mask=~keep, need_weights=False)
        h = self.trunk(torch.cat([q, a[:, 0], u, q * u], dim=1))
        return self.heads(h, cand.route)

    def forward(
        self,
        user: torch.Tensor,  # (B, Du)
        recent: tuple[torch.Tensor, ...],  # (B, R, ..) each
        cand: CandidateInputs,
    ) -> torch.Tensor:
        """(B, len(TASKS)) logits: click, conversion; one request per row."""
        return self.score(cand, *self.context(user, recent))
