"""Retrieval, then ranking: BoM retrieval produces each request's candidates, the
multi-stage ranker orders them.

```
request (user, t)
  --> snapshot = latest HIR snapshot with as_of <= t
  --> the user's embedding in it, as a multi-probe bag (each codebook's `probes` nearest
      codewords that some ad holds; `probes = 0`: the user's own BoM tokens)
      --InvertedIndex over the snapshot's ads-->
      `candidates` ads (weighted token overlap, re-scored by inner product)
  --> (user, ad, t) examples with as-of dense features --MultiStageRanker--> P(conversion)
  --> top k by that probability
```
One inverted index per snapshot (its ads, their tokens and embeddings), built on first
use. A user missing from the snapshot (new since) gets no candidates: the result rows are
padded with -1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, probe_queries
from hir_sdk.ranking.retrieval.multi_probe import DEFAULT_PROBES
from hir_sdk.ranking.sequence.multistage import MultiStageRanker, RankingExamples


@dataclass(frozen=True)
class Recommendations:
    ads: np.ndarray  # (B, k) global ad indices, best first, -1 padding
    scores: np.ndarray  # (B, k) calibrated conversion probabilities, NaN padding
    candidates: np.ndarray  # (B, C) what retrieval returned, -1 padding


class RetrieveAndRank:
    def __init__(
        self,
        ranker: MultiStageRanker,
        features: AsOfFeatures,
        *,
        ad_type: str | None = None,
        candidates: int = 200,
        probes: int = DEFAULT_PROBES,
    ) -> None:
        if ranker.hir is None:
            raise ValueError("RetrieveAndRank needs a ranker built with HIR snapshots")
        self.ranker, self.features = ranker, features
        self.lookup = ranker.hir
        self.num_candidates = candidates
        self.probes = probes
        graph = ranker.graph
        if ad_type is None:  # what the exposure edges show users
            candidates = graph.manifest.exposed_types[1]
            if len(candidates) != 1:
                raise ValueError(
                    f"the exposures show {len(candidates)} node types {list(candidates)}: "
                    "name the one to retrieve (ad_type)"
                )
            ad_type = candidates[0]
        code = graph.type_code(ad_type)
        self._ad_range = (int(graph.type_offsets[code]), int(graph.type_offsets[code + 1]))
        self._indexes: dict[int, InvertedIndex] = {}

    def index(self, snapshot: int) -> InvertedIndex:
        """The inverted index over the ads of snapshot number `snapshot`."""
        if snapshot not in self._indexes:
            snap = self.lookup.snapshots[snapshot]
            lo, hi = self._ad_range
            ads = np.arange(lo, hi)
            rows = self.lookup.lookup(ads, np.full(len(ads), snap.as_of))
            ads = ads[rows.found]
            codes = snap.quantizer.codes(rows.tokens[rows.found])
            self._indexes[snapshot] = InvertedIndex.build(
                ads, codes, snap.quantizer.codebook_size, rows.z[rows.found]
            )
        return self._indexes[snapshot]

    def retrieve(self, users: np.ndarray, t: np.ndarray) -> np.ndarray:
        """(B, C) candidate ads per request (-1 padding)."""
        users, t = np.asarray(users, dtype=np.int64), np.asarray(t, dtype=np.int64)
        out = np.full((len(users), self.num_candidates), -1, dtype=np.int64)
        which = self.lookup.snapshot_of(t)
        rows = self.lookup.lookup(users, t)
        for snapshot in np.unique(which[which >= 0]):
            mine = np.flatnonzero((which == snapshot) & rows.found)
            if len(mine) == 0:
                continue
            index = self.index(int(snapshot))
            quantizer = self.lookup.snapshots[snapshot].quantizer
            if self.probes > 0:
                probes = min(self.probes, index.codebook_size - 1)
                bags = probe_queries(
                    rows.z[mine], quantizer.codebooks, probes, occupied=index.occupied()
                )
            else:
                bags = TokenBags.from_codes(quantizer.codes(rows.tokens[mine]), index.codebook_size)
            result = index.search(
                bags,
                min(self.num_candidates, index.num_items),
                query_embeddings=rows.z[mine],
            )
            out[mine, : result.ids.shape[1]] = result.ids
        return out

    def recommend(self, users: np.ndarray, t: np.ndarray, k: int) -> Recommendations:
        """Top-k ads per request (user, t), retrieved then ranked."""
        users, t = np.asarray(users, dtype=np.int64), np.asarray(t, dtype=np.int64)
        candidates = self.retrieve(users, t)
        request, slot = np.nonzero(candidates >= 0)
        ad = candidates[request, slot]
        scores = np.full(candidates.shape, np.nan)
        if len(ad):
            u, ts = users[request], t[request]
            examples = RankingExamples(
                user=u,
                ad=ad,
                owner=self.features.owners.at(ad, ts),
                ts=ts,
                label=np.zeros(len(ad), dtype=np.float32),
                dense=self.features.compute(u, ad, ts),
            )
            scores[request, slot] = self.ranker.predict(examples)
        order = np.argsort(np.where(np.isnan(scores), np.inf, -scores), axis=1, kind="stable")
        top = order[:, :k]
        best = np.take_along_axis(candidates, top, axis=1)
        best_scores = np.take_along_axis(scores, top, axis=1)
        return Recommendations(ads=best, scores=best_scores, candidates=candidates)
