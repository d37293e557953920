"""The shared protocol of the peers (`benchmarks/peers/protocol.py`): the labels a peer's
settings are chosen on are HIR's validation labels and read nothing after the window."""

from __future__ import annotations

import numpy as np
import polars as pl
from peers.protocol import ratings, window_likes

from hir_sdk.evaluation.examples import build_examples
from tests.benchmarks.conftest import scrambled_after


def test_the_validation_likes_are_hirs_validation_labels(graph):
    likes = window_likes(graph, "validation")
    frame = build_examples(graph, "validation").frame
    np.testing.assert_array_equal(likes.user, frame["user"].to_numpy())
    np.testing.assert_array_equal(likes.ad, frame["ad"].to_numpy())
    np.testing.assert_array_equal(likes.liked, frame["label"].to_numpy() == 1)
    assert frame.filter(pl.col("label") == 1).height == likes.liked.sum() > 0


def test_the_validation_likes_read_nothing_at_or_after_the_test_start(graph):
    """What the RecBole peers' epoch count is chosen on; `ratings`' any-time like flags
    would read the test window (a like there marks an earlier rating of the pair)."""
    t = graph.manifest.time
    scrambled = scrambled_after(graph, t.test_start)
    a, b = window_likes(graph, "validation"), window_likes(scrambled, "validation")
    for x, y in zip((a.user, a.ad, a.ts, a.liked), (b.user, b.ad, b.ts, b.liked), strict=True):
        np.testing.assert_array_equal(x, y)
    old = ratings(graph).between(t.validation_start, t.test_start)
    old_scrambled = ratings(scrambled).between(t.validation_start, t.test_start)
    assert not np.array_equal(old.liked, old_scrambled.liked)  # the flags that leaked
