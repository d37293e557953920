"""Set aggregation: a segment's bag is the weighted share of members holding each token,
and searching with it equals searching with that union bag built by hand."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, aggregate_tokens
from tests.ranking.retrieval.reference import grid_data

K = 4


def union_bag(codes: np.ndarray, weights: np.ndarray) -> dict[int, float]:
    held: dict[int, float] = defaultdict(float)
    for row, weight in zip(codes, weights, strict=True):
        for m, code in enumerate(row):
            held[m * K + int(code)] += float(weight)
    return {token: w / float(weights.sum()) for token, w in held.items() if w > 0}


def test_aggregate_equals_union_bag_search() -> None:
    rng = np.random.default_rng(0)
    codes, embeddings = grid_data(rng, 60, 3, K, dim=4)
    index = InvertedIndex.build(np.arange(60), codes, K, embeddings)
    members = rng.choice(60, size=9, replace=False)
    weights = rng.integers(0, 4, 9).astype(np.float64)
    weights[0] = 2.0
    bag = aggregate_tokens(codes[members], K, weights)
    expected = union_bag(codes[members], weights)
    assert bag.bag(0) == pytest.approx(expected, rel=1e-7)
    by_hand = TokenBags.from_flat(
        np.zeros(len(expected), dtype=np.int64), list(expected), list(expected.values())
    )
    assert np.array_equal(by_hand.weights, bag.weights)
    query = embeddings[members].mean(axis=0, keepdims=True)
    for kwargs in ({}, {"query_embeddings": query, "num_candidates": 10}):
        ours, theirs = index.search(bag, 7, **kwargs), index.search(by_hand, 7, **kwargs)
        assert np.array_equal(ours.rows, theirs.rows)
        assert np.array_equal(ours.scores, theirs.scores)


def test_one_member_segment_is_its_own_bom() -> None:
    codes = np.array([[3, 0, 2]])
    assert aggregate_tokens(codes, K).bag(0) == TokenBags.from_codes(codes, K).bag(0)
    assert aggregate_tokens(codes, K).bag(0) == {3: 1.0, 4: 1.0, 10: 1.0}


def test_hand_computed_shares() -> None:
    codes = np.array([[0, 1], [0, 2], [3, 1]])
    bag = aggregate_tokens(codes, K, weights=[1.0, 1.0, 2.0])
    assert bag.bag(0) == {0: 0.5, 3: 0.5, 5: 0.75, 6: 0.25}


def test_segments_in_one_call_equal_separate_calls() -> None:
    rng = np.random.default_rng(3)
    codes = rng.integers(0, K, (40, 3))
    segments = rng.integers(0, 5, 40)
    segments[:5] = np.arange(5)  # every segment has a member
    weights = rng.random(40) + 0.1
    together = aggregate_tokens(codes, K, weights, segments=segments)
    assert len(together) == 5
    for s in range(5):
        alone = aggregate_tokens(codes[segments == s], K, weights[segments == s])
        assert together.bag(s) == pytest.approx(alone.bag(0), rel=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"weights": [1.0, -1.0]}, "finite and >= 0"),
        ({"weights": [0.0, 0.0]}, "positive total weight"),
        ({"weights": [1.0]}, r"must be \(2,\)"),
        ({"segments": [0, 2], "num_segments": 3}, "positive total weight"),
        ({"segments": [0, 5], "num_segments": 3}, r"\[0, 3\)"),
    ],
)
def test_bad_aggregation_inputs(kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        aggregate_tokens(np.array([[0, 1], [1, 2]]), K, **kwargs)
