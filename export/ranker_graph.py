"""The online ranker (stage 2) as a graph of standard ops, with its Platt calibration.

TorchRec's `EmbeddingCollection` and `EmbeddingBagCollection` take `KeyedJaggedTensor`s,
which ONNX has no type for. The exported graph takes the same rows padded instead and
does the lookups as plain gathers: the item-id rows of the recent events (zeros on
padding), the ad and owner bags (one id each, the owner's bag empty when there is none)
and the BoM bag summed over its valid tokens. Everything after the lookups is the
trained ranker's own code (`EventTokenizer.combine`, `OnlineRanker.context_of`,
`OnlineRanker.score_pooled`).

```
user (B, Du)   item action age (B, R) long   mask (B, R) bool
[event_hir (B, R, Dh)  event_hir_found (B, R) bool]          only when the ranker reads HIR
ad owner route (B,) long  bom (B, M) long (-1: none)
[hir (B, Dh)  hir_found (B,) bool]   dense (B, F)
-> logits (B, 2) click, conversion   conversion (B,) calibrated probability
```
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn

from hir_sdk.ranking.calibration import PROBABILITY_FLOOR, PlattScaling
from hir_sdk.ranking.sequence.online_ranker import CandidateInputs, OnlineRanker
from hir_sdk.ranking.sequence.tokenizer import hash_ids

OUTPUTS = ("logits", "conversion")


def ranker_input_names(ranker: OnlineRanker) -> list[str]:
    hir = ranker.tokenizer.hir_dim > 0
    names = ["user", "item", "action", "age", "mask"]
    names += ["event_hir", "event_hir_found"] if hir else []
    names += ["ad", "owner", "route", "bom"]
    return [*names, *(["hir", "hir_found"] if hir else []), "dense"]


class RankerGraph(nn.Module):
    """`calibration(OnlineRanker(user, recent, cand))` on padded plain tensors."""

    def __init__(self, ranker: OnlineRanker, calibration: PlattScaling) -> None:
        super().__init__()
        self.ranker = ranker.eval()
        self.a, self.b = float(calibration.a), float(calibration.b)
        self.names = ranker_input_names(ranker)

    def forward(self, *inputs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = dict(zip(self.names, inputs, strict=True))
        r = self.ranker
        tok = r.tokenizer
        mask = x["mask"]
        id_rows = tok.id_table[hash_ids(x["item"].clamp(min=0), tok.id_buckets)]
        id_dense = id_rows * mask[..., None]
        tokens = tok.combine(
            id_dense, x["action"], x["age"], mask, x.get("event_hir"), x.get("event_hir_found")
        )
        u, keys, keep = r.context_of(x["user"], tokens, mask)
        buckets = r.config.id_buckets
        owner = x["owner"]
        bom = x["bom"]
        sparse = torch.cat(
            [
                r.sparse_table("ad_id")[hash_ids(x["ad"], buckets)],
                r.sparse_table("owner_id")[hash_ids(owner.clamp(min=0), buckets)]
                * (owner >= 0)[:, None],
                (r.sparse_table("bom")[bom.clamp(min=0)] * (bom >= 0)[..., None]).sum(dim=1),
            ],
            dim=1,
        )
        batch = x["ad"].shape[0]
        hir = x.get("hir", torch.zeros(batch, 0))
        found = x.get("hir_found", torch.zeros(batch, dtype=torch.bool))
        cand = CandidateInputs(x["ad"], owner, bom, hir, found, x["route"], x["dense"])
        logits = r.score_pooled(sparse, cand, u, keys, keep)
        p = torch.sigmoid(self.a * logits[:, 1] + self.b)
        return logits, p.clamp(PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR)


def ranker_feeds(
    names: Sequence[str],
    user: torch.Tensor | np.ndarray,
    recent: tuple,
    cand: CandidateInputs,
) -> dict[str, np.ndarray]:
    """The inputs `names` (`ranker_input_names`, or the names `ranker.onnx` takes) of
    `RankerGraph` from `OnlineRanker.forward`'s."""
    item, action, age, mask, event_hir, event_hir_found = recent
    values = {
        "user": user,
        "item": item,
        "action": action,
        "age": age,
        "mask": mask,
        "event_hir": event_hir,
        "event_hir_found": event_hir_found,
        "ad": cand.ad,
        "owner": cand.owner,
        "route": cand.route,
        "bom": cand.bom,
        "hir": cand.hir,
        "hir_found": cand.hir_found,
        "dense": cand.dense,
    }
    return {name: _array(values[name]) for name in names}


def _array(value: torch.Tensor | np.ndarray) -> np.ndarray:
    array = value.numpy() if isinstance(value, torch.Tensor) else np.asarray(value)
    kind = {"b": np.bool_, "f": np.float32}.get(array.dtype.kind, np.int64)
    return np.ascontiguousarray(array, dtype=kind)
