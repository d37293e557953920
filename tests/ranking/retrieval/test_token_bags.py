"""Jagged weighted bags: construction rules, merging, slicing; multi-probe weights; the
(score, row) int64 keys behind every deterministic top-k."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, probe_bags, probe_weights
from hir_sdk.ranking.retrieval.ordered_topk import PAD_KEY, decode_keys, encode_keys, ordered_topk


def test_from_flat_sorts_merges_and_drops_zeros() -> None:
    bags = TokenBags.from_flat([1, 0, 1, 1, 0], [9, 4, 2, 9, 5], [1.0, 2.0, 0.5, 0.25, 0.0])
    assert bags.offsets.tolist() == [0, 1, 3]
    assert bags.bag(0) == {4: 2.0}
    assert bags.bag(1) == {2: 0.5, 9: 1.25}
    assert bags.slice(1, 2).bag(0) == {2: 0.5, 9: 1.25}
    assert len(TokenBags.from_flat([], [], num_bags=4)) == 4


def test_from_codes_uses_global_token_ids() -> None:
    bags = TokenBags.from_codes(np.array([[2, 0, 1], [0, 0, 0]]), 3)
    assert bags.bag(0) == {2: 1.0, 3: 1.0, 7: 1.0}
    assert bags.tokens.tolist() == [2, 3, 7, 0, 3, 6]


@pytest.mark.parametrize(
    ("offsets", "tokens", "weights", "message"),
    [
        ([0, 2], [3, 1], [1.0, 1.0], "sorted and unique"),
        ([0, 2], [1, 1], [1.0, 1.0], "sorted and unique"),
        ([0, 1], [1], [0.0], "finite and > 0"),
        ([0, 1], [1], [np.nan], "finite and > 0"),
        ([1, 1], [1], [1.0], "starting at 0"),
        ([0, 3, 2], [1, 2], [1.0, 1.0], "must not decrease"),
        ([0, 3], [1, 2], [1.0, 1.0], "equal length"),
        ([0, 1], [-1], [1.0], ">= 0"),
    ],
)
def test_invalid_bags(offsets, tokens, weights, message) -> None:
    with pytest.raises(InputError, match=message):
        TokenBags(np.array(offsets), np.array(tokens), np.array(weights))


def test_sorted_across_bag_boundaries_is_fine() -> None:
    bags = TokenBags(np.array([0, 2, 2, 3]), np.array([4, 5, 1]), np.ones(3))
    assert bags.bag(1) == {} and bags.bag(2) == {1: 1.0}


def test_probe_weights_hand_made() -> None:
    scores = np.array([[[3.0, 1.0, 2.0, 0.0], [0.5, 0.5, 0.25, 1.0]]])  # (1, 2, 4)
    assert probe_weights(scores, 2).tolist() == [[2.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.5]]
    # codebook 1: the 2nd highest ties with the 3rd, so only one codeword is above it
    assert probe_weights(scores, [3, 0]).tolist() == [[3.0, 1.0, 2.0, 0.0] + [0.0] * 4]
    assert probe_weights(scores, [0, 1]).tolist() == [[0.0] * 4 + [0.0, 0.0, 0.0, 0.5]]
    with pytest.raises(InputError, match="probes"):
        probe_weights(scores, 4)
    with pytest.raises(InputError, match="probes"):
        probe_weights(scores, [1, 2, 3])
    with pytest.raises(InputError, match="finite"):
        probe_weights(scores * np.nan, 1)


floats = st.floats(allow_nan=False, width=32)


@pytest.mark.parametrize("probes", [1, 3, [2, 0, 5], 7])
def test_probe_bags_are_the_dense_probe_weights(probes) -> None:
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 6, (40, 3, 8)).astype(np.float32)  # small ints: many ties
    sparse = probe_bags(scores, probes)
    dense = np.zeros((40, 24), dtype=np.float32)
    dense[sparse.bag_of_entry(), sparse.tokens] = sparse.weights
    np.testing.assert_array_equal(dense, probe_weights(scores, probes))
    # and the index answers both alike
    codes = rng.integers(0, 8, (300, 3))
    index = InvertedIndex.build(np.arange(300), codes, 8, token_weighting="uniform")
    a, b = index.search(sparse, 10), index.search(probe_weights(scores, probes), 10)
    np.testing.assert_array_equal(a.rows, b.rows)
    np.testing.assert_array_equal(a.scores, b.scores)


def test_probe_bags_of_the_first_codebook_only() -> None:
    scores = np.array([[[0.1, 0.9, 0.5, 0.7]]], dtype=np.float32)  # (B=1, M'=1, K=4)
    bags = probe_bags(scores, 2)  # probes codewords 1 and 3, above the third best (0.5)
    assert bags.tokens.tolist() == [1, 3]
    np.testing.assert_allclose(bags.weights, [0.4, 0.2], rtol=1e-6)
    with pytest.raises(InputError, match="probes"):
        probe_bags(scores, 4)


@given(
    st.lists(
        st.tuples(floats, st.integers(0, 2**31 - 2)),
        min_size=1,
        max_size=40,
        unique_by=lambda pair: pair[1],
    )
)
def test_keys_order_by_score_then_row(pairs) -> None:
    scores = np.array([s for s, _ in pairs], dtype=np.float32)
    rows = np.array([r for _, r in pairs], dtype=np.int64)
    keys = encode_keys(scores, rows)
    decoded_scores, decoded_rows = decode_keys(keys)
    assert np.array_equal(decoded_rows, rows)
    assert np.array_equal(decoded_scores, scores + np.float32(0.0))  # -0.0 folds onto 0.0
    expected = sorted(range(len(pairs)), key=lambda i: (-float(scores[i]), int(rows[i])))
    assert np.argsort(keys)[::-1].tolist() == expected
    top = ordered_topk(keys[None, :], 5)[0]
    assert top.tolist() == sorted(keys.tolist(), reverse=True)[:5]


def test_pad_key_sorts_last_and_decodes_empty() -> None:
    keys = np.array([[PAD_KEY, encode_keys(np.float32(-np.inf), 3)]])
    assert ordered_topk(keys, 2)[0, 1] == PAD_KEY
    scores, rows = decode_keys(keys)
    assert rows.tolist() == [[-1, 3]] and np.isneginf(scores).all()


def test_probes_skip_codewords_no_item_holds() -> None:
    """The items hold codewords 0 and 2 of each codebook; the query's best codewords are 1
    and 3 (a region only users fill). Unmasked, one probe per codebook finds no item;
    with `occupied` it probes the best held codeword and finds the items holding it."""
    codes = np.array([[0, 2], [2, 0], [2, 2]])  # (3 items, M=2)
    index = InvertedIndex.build(np.array([10, 11, 12]), codes, 4, token_weighting="uniform")
    held = index.occupied()
    assert held.tolist() == [[True, False, True, False]] * 2
    scores = np.array([[[0.1, 0.9, 0.3, 0.8], [0.2, 0.7, 0.1, 0.6]]], dtype=np.float32)
    assert index.search(probe_weights(scores, 1), 3).ids[0].tolist().count(-1) == 3
    dense = probe_weights(scores, 1, occupied=held)
    # codebook 0: codeword 2 (0.3) above the next held one (0.1); codebook 1: codeword 0
    np.testing.assert_allclose(dense[0], [0, 0, 0.2, 0, 0.1, 0, 0, 0], atol=1e-6)
    sparse = probe_bags(scores[:, :1], 1, occupied=held)  # first codebook, (M, K) mask
    assert sparse.tokens.tolist() == [2]
    found = index.search(dense, 3)  # item 10 holds neither probed codeword
    assert found.ids[0].tolist() == [11, 12, -1]  # 11 holds both, 12 the first
    with pytest.raises(InputError, match="occupied"):
        probe_weights(scores, 1, occupied=held[:, :3])
