"""Retrieval then ranking: candidates come from the user's snapshot tokens, the order from
the multi-stage ranker's calibrated scores."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.retrieval import probe_bags
from hir_sdk.ranking.retrieve_and_rank import RetrieveAndRank
from hir_sdk.ranking.sequence import (
    MultiStageConfig,
    MultiStageRanker,
    OnlineRankerConfig,
    RankingExamples,
    UserModelConfig,
)

SMALL = MultiStageConfig(
    user_model=UserModelConfig(dim=16, heads=2, layers=1, out_dim=8, history=32),
    ranker=OnlineRankerConfig(dim=16, heads=2, recent=8, hidden=16, experts=2, top_k=1),
    epochs=1,
)


@pytest.fixture(scope="module")
def pipeline(snapshot, tiny_graph):
    g = tiny_graph
    features = AsOfFeatures(g)
    data = {}
    for w in ("validation", "test"):
        f = build_examples(g, w).frame
        dense = features.compute(*(f[c].to_numpy() for c in ("user", "ad", "ts")))
        data[w] = RankingExamples.of(f, dense)
    ranker = MultiStageRanker(g, HirLookup(g, [snapshot]), SMALL)
    ranker.fit(data["validation"], data["test"])  # a unit test: any two windows will do
    return RetrieveAndRank(ranker, features, candidates=30)


def test_recommendations_are_ranked_retrieved_candidates(pipeline, snapshot, tiny_graph):
    g = tiny_graph
    users = g.type_offsets[g.type_code("user")] + np.arange(0, 200, 10)
    t = np.full(len(users), g.manifest.time.test_start)
    out = pipeline.recommend(users, t, k=5)
    lookup = pipeline.lookup
    found = lookup.lookup(users, t).found
    assert found.sum() >= 10
    assert (out.candidates[~found] == -1).all() and (out.ads[~found] == -1).all()
    in_snapshot = set(lookup.snapshots[0].table["node_id"].to_list())
    for i in np.flatnonzero(found):
        cand = out.candidates[i][out.candidates[i] >= 0]
        assert len(cand) == 30 and len(set(cand.tolist())) == 30
        assert set(g.node_ids_of(cand).tolist()) <= in_snapshot
        assert (g.node_type_of(cand) == g.type_code("ad")).all()
        assert set(out.ads[i].tolist()) <= set(cand.tolist())
        assert (np.diff(out.scores[i]) <= 0).all()
    # the scores are the ranker's own calibrated probabilities for those (user, ad, t)
    i = int(np.flatnonzero(found)[0])
    ads = out.ads[i]
    u, ts = np.full(5, users[i]), np.full(5, t[i])
    direct = pipeline.ranker.predict(
        RankingExamples(
            user=u,
            ad=ads,
            owner=pipeline.features.owners.at(ads, ts),
            ts=ts,
            label=np.zeros(5, dtype=np.float32),
            dense=pipeline.features.compute(u, ads, ts),
        )
    )
    np.testing.assert_allclose(out.scores[i], direct, rtol=1e-6)
    # the candidates are the best 30 ads by inner product among those holding one of the
    # user's probed codewords (each codebook's 16 nearest that some ad holds, at most K - 1)
    rows = lookup.lookup(np.array([users[i]]), t[:1])
    ad_rows = lookup.lookup(out.candidates[i], np.full(30, t[i]))
    z_ads = lookup.lookup(np.arange(*pipeline._ad_range), np.full(1, t[i]))
    index = pipeline.index(int(lookup.snapshot_of(t[:1])[0]))
    quantizer = lookup.snapshots[0].quantizer
    scores = np.einsum("bd,mkd->bmk", rows.z, quantizer.codebooks)
    bag = probe_bags(scores, min(16, index.codebook_size - 1), occupied=index.occupied())
    probed = bag.tokens  # global token ids m * K + c, as the snapshot's tokens
    holds = np.isin(z_ads.tokens, probed).any(axis=1) & z_ads.found
    assert holds.sum() >= 30
    best = np.sort(z_ads.z[holds] @ rows.z[0])[::-1][:30]
    np.testing.assert_allclose(np.sort(ad_rows.z @ rows.z[0])[::-1], best, rtol=1e-5, atol=1e-6)


def test_without_probes_candidates_share_the_users_own_tokens(pipeline, tiny_graph):
    g = tiny_graph
    own = RetrieveAndRank(pipeline.ranker, pipeline.features, candidates=30, probes=0)
    lookup = own.lookup
    users = g.type_offsets[g.type_code("user")] + np.arange(0, 200, 10)
    t = np.full(len(users), g.manifest.time.test_start)
    found = lookup.lookup(users, t).found
    candidates = own.retrieve(users, t)
    i = int(np.flatnonzero(found)[0])
    cand = candidates[i][candidates[i] >= 0]
    rows = lookup.lookup(np.array([users[i]]), t[:1])
    z_ads = lookup.lookup(np.arange(*own._ad_range), np.full(1, t[i]))
    shares = (z_ads.tokens == rows.tokens[0]).any(axis=1) & z_ads.found
    assert 0 < len(cand) <= min(30, shares.sum())
    best = np.sort(z_ads.z[shares] @ rows.z[0])[::-1][: len(cand)]
    ad_rows = lookup.lookup(cand, np.full(len(cand), t[i]))
    np.testing.assert_allclose(np.sort(ad_rows.z @ rows.z[0])[::-1], best, rtol=1e-5, atol=1e-6)
