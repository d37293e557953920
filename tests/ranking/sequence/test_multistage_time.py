"""The multi-stage ranker's time rules on a small hand-made funnel: a prediction at `t`
reads nothing dated at or after `t`, the fit reads nothing dated at or after the test
start, and a click label reads no further than its example's conversion label."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.ranking.sequence import (
    MultiStageConfig,
    MultiStageRanker,
    OnlineRankerConfig,
    RankingExamples,
    UserModelConfig,
)
from tests.conftest import DAY, T0
from tests.hand_graph import CLICK, IMPRESSION, PURCHASE, RUNS, funnel_manifest, hand_graph

USERS, ADS, ADVERTISERS = 8, 6, 2
COUNTS = [USERS, ADS, ADVERTISERS]
SMALL = MultiStageConfig(
    user_model=UserModelConfig(dim=8, heads=1, layers=1, out_dim=8, history=16, id_buckets=64),
    ranker=OnlineRankerConfig(
        dim=8, heads=1, recent=4, hidden=16, experts=2, top_k=1, id_buckets=64
    ),
    epochs=2,
    batch_size=64,
)
VALIDATION_START, TEST_START = T0 + 6 * DAY, T0 + 8 * DAY  # funnel_manifest's windows
WINDOW = DAY // 2  # the attribution window here: every window keeps labelled exposures


def _graph(edges):
    manifest = dataclasses.replace(funnel_manifest(), attribution_window_days=WINDOW / DAY)
    return hand_graph(manifest, COUNTS, edges)


def _edges(seed: int = 0) -> list[tuple[int, int, int, int]]:
    """Each ad runs for one advertiser from the start; each user sees ads over the ten
    days, clicks some an hour or so later and buys from some a few hours later (more
    often from the ads of "their" advertiser)."""
    rng = np.random.default_rng(seed)
    edges = [(USERS + ADS + a % ADVERTISERS, USERS + a, RUNS, T0) for a in range(ADS)]
    for user in range(USERS):
        for ts in np.sort(rng.integers(T0 + 3_600, T0 + 10 * DAY, 45)).tolist():
            ad = int(rng.integers(0, ADS))
            edges.append((user, USERS + ad, IMPRESSION, ts))
            if rng.random() < 0.3:
                edges.append((user, USERS + ad, CLICK, ts + int(rng.integers(60, 7_200))))
            if rng.random() < (0.15 if ad % ADVERTISERS == user % ADVERTISERS else 0.03):
                edges.append((user, USERS + ad, PURCHASE, ts + int(rng.integers(600, WINDOW))))
    return edges


def _examples(graph, window: str) -> RankingExamples:
    frame = build_examples(graph, window).frame
    keys = (frame[c].to_numpy() for c in ("user", "ad", "ts"))
    return RankingExamples.of(frame, AsOfFeatures(graph).compute(*keys))


def _fit(graph, config: MultiStageConfig = SMALL) -> MultiStageRanker:
    ranker = MultiStageRanker(graph, None, config)
    return ranker.fit(_examples(graph, "train"), _examples(graph, "validation"))


def _onto(ranker: MultiStageRanker, graph) -> MultiStageRanker:
    """The fitted `ranker`'s weights, scaler and calibration, reading `graph`."""
    other = MultiStageRanker(graph, None, ranker.config)
    other.make_stages(ranker.sizes)
    other.user_model.load_state_dict(ranker.user_model.state_dict())
    other.ranker.load_state_dict(ranker.ranker.state_dict())
    other.scaler, other.calibration = ranker.scaler, ranker.calibration
    return other


def _queries(graph, cutoff: int) -> RankingExamples:
    """Every (user, ad) at `cutoff`, and the test window's exposures before it."""
    user = np.repeat(np.arange(USERS), ADS)
    ad = np.tile(USERS + np.arange(ADS), USERS)
    t = np.full(len(user), cutoff)
    seen = (graph.etype == IMPRESSION) & (graph.ts >= TEST_START) & (graph.ts < cutoff)
    user, ad = np.concatenate([user, graph.src[seen]]), np.concatenate([ad, graph.dst[seen]])
    t = np.concatenate([t, graph.ts[seen]])
    zeros = np.zeros(len(t), dtype=np.int64)
    frame = {"user": user, "ad": ad, "owner": zeros, "ts": t, "label": zeros}
    return RankingExamples.of(pl.DataFrame(frame), AsOfFeatures(graph).compute(user, ad, t))


def test_a_prediction_at_t_reads_nothing_at_or_after_t():
    """The same fitted ranker on the log cut at `t`, with new impressions, clicks,
    purchases and an owner change at `t` and one second later, predicts the same for
    every request at or before `t`: at a refresh time (stage 1's snapshot is `t` itself)
    and inside a refresh period."""
    edges = _edges()
    ranker = _fit(_graph(edges))
    for cutoff in (TEST_START + DAY, TEST_START + DAY // 2 + 17):
        later = []
        for user in range(USERS):
            ad = USERS + user % ADS
            for dt in (0, 1):
                later += [(user, ad, et, cutoff + dt) for et in (IMPRESSION, CLICK, PURCHASE)]
        later.append((USERS + ADS + 1, USERS, RUNS, cutoff))  # ad 0 changes advertiser
        cut = [e for e in edges if e[3] < cutoff]
        full = _graph(edges)
        changed = _graph(cut + later)
        want = _onto(ranker, full).predict(_queries(full, cutoff))
        got = _onto(ranker, changed).predict(_queries(changed, cutoff))
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-9)


def test_the_fit_reads_nothing_at_or_after_the_test_start():
    """Moving, dropping and adding edges at or after the test start (purchases the
    validation labels might have read, clicks the click labels might have) leaves the
    fitted weights, early stopping and calibration as they were."""
    edges = _edges()
    rng = np.random.default_rng(1)
    later = [
        (s, d, et, ts + int(rng.integers(0, DAY)) if ts >= TEST_START else ts)
        for s, d, et, ts in edges
        if ts < TEST_START or rng.random() < 0.7
    ]
    later += [
        (u, USERS + u % ADS, et, TEST_START) for u in range(USERS) for et in (CLICK, PURCHASE)
    ]
    a = _fit(_graph(edges))
    b = _fit(_graph(later))
    assert a.history_log == b.history_log
    assert a.calibration == b.calibration
    for x, y in ((a.user_model, b.user_model), (a.ranker, b.ranker)):
        for (k, v), (_, w) in zip(x.state_dict().items(), y.state_dict().items(), strict=True):
            assert v.equal(w), k


def test_a_click_label_reads_no_further_than_the_conversion_label():
    """A training example's conversion label is read until the validation start (its
    attribution window ends before it); its click label, with the click window (a day)
    longer than the attribution window (half a day), must not read a click at or after
    that time either."""
    exposed = VALIDATION_START - WINDOW - 3_600  # labelled: its window ends before it
    edges = [
        *_edges(),
        (0, USERS, IMPRESSION, exposed),
        (0, USERS, CLICK, VALIDATION_START + 60),
    ]
    graph = _graph(edges)
    train = _examples(graph, "train")
    assert (train.ts == exposed).any()
    cut = _graph([e for e in edges if e[2] != CLICK or e[3] < VALIDATION_START])
    want = MultiStageRanker(cut, None, SMALL).click_labels(train)
    np.testing.assert_array_equal(MultiStageRanker(graph, None, SMALL).click_labels(train), want)
