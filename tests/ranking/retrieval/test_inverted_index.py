"""The inverted index equals the pure-Python reference: candidates, overlap scores, ties,
the candidate cut and re-scoring, for sparse and dense bags and any batching."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags
from tests.ranking.retrieval.reference import grid_data, reference_search


def as_pairs(result, b: int) -> list[tuple[int, float]]:
    rows, scores = result.rows[b], result.scores[b]
    return [(int(r), float(s)) for r, s in zip(rows, scores, strict=True) if r >= 0]


def random_bags(rng: np.random.Generator, num: int, vocabulary: int) -> TokenBags:
    """Random sparse bags; weights from a few values so that overlaps tie often."""
    bag_index, tokens, weights = [], [], []
    for b in range(num):
        chosen = rng.choice(vocabulary, size=rng.integers(0, min(vocabulary, 6) + 1), replace=False)
        bag_index += [b] * len(chosen)
        tokens += chosen.tolist()
        weights += rng.choice([0.5, 1.0, 1.0, 2.0, 0.3], size=len(chosen)).tolist()
    return TokenBags.from_flat(
        np.array(bag_index, dtype=np.int64), np.array(tokens, dtype=np.int64), weights, num_bags=num
    )


def check_against_reference(index, codes, embeddings, bags, queries, k, **kwargs) -> None:
    result = index.search(bags, k, query_embeddings=queries, **kwargs)
    assert result.ids.shape == result.scores.shape == result.rows.shape == (len(bags), k)
    for b in range(len(bags)):
        expected = reference_search(
            codes,
            index.codebook_size,
            index.token_weights,
            bags.bag(b),
            k,
            embeddings=embeddings,
            query=None if queries is None else queries[b].astype(np.float64),
            **kwargs,
        )
        assert as_pairs(result, b) == expected
        found = len(expected)
        assert (result.rows[b, found:] == -1).all() and (result.ids[b, found:] == -1).all()
        assert np.isneginf(result.scores[b, found:]).all()
        assert (result.ids[b, :found] == index.item_ids[result.rows[b, :found]]).all()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    num=st.integers(1, 30),
    levels=st.integers(1, 4),
    size=st.integers(1, 5),
    k=st.integers(1, 8),
    extra=st.one_of(st.none(), st.integers(0, 12)),
    rescore=st.booleans(),
    weighting=st.sampled_from(["idf", "uniform"]),
    gather_all=st.booleans(),
)
def test_index_equals_reference(
    seed, num, levels, size, k, extra, rescore, weighting, gather_all
) -> None:
    rng = np.random.default_rng(seed)
    codes, embeddings = grid_data(rng, num, levels, size, dim=3)
    index = InvertedIndex.build(
        np.arange(num) * 7 + 3, codes, size, embeddings, token_weighting=weighting
    )
    bags = random_bags(rng, 5, levels * size)
    queries = (rng.integers(-3, 4, (5, 3)) / 2).astype(np.float32) if rescore else None
    gather = None if gather_all else int(rng.integers(1, levels + 1))
    cut = None if extra is None or not rescore else k + extra
    check_against_reference(
        index, codes, embeddings, bags, queries, k, num_candidates=cut, gather_codebooks=gather
    )


def test_ties_are_broken_by_row() -> None:
    codes = np.zeros((6, 2), dtype=np.int64)  # every item holds the same two tokens
    embeddings = np.ones((6, 2), dtype=np.float32)
    index = InvertedIndex.build(np.arange(6)[::-1], codes, 3, embeddings)
    bags = TokenBags.from_codes(codes[:1], 3)
    by_overlap = index.search(bags, 4)
    assert by_overlap.rows.tolist() == [[0, 1, 2, 3]]
    assert by_overlap.ids.tolist() == [[5, 4, 3, 2]]
    rescored = index.search(bags, 4, query_embeddings=np.ones((1, 2)), num_candidates=5)
    assert rescored.rows.tolist() == [[0, 1, 2, 3]]
    assert rescored.scores.tolist() == [[2.0, 2.0, 2.0, 2.0]]


def test_candidate_cut_happens_before_rescoring() -> None:
    # items 0 and 1 share both query tokens, item 2 only one; item 2 is the best by inner
    # product, so it is returned only when the candidate budget lets it through
    codes = np.array([[0, 0], [0, 0], [0, 1]])
    embeddings = np.array([[1.0, 0.0], [2.0, 0.0], [3.0, 0.0]], dtype=np.float32)
    index = InvertedIndex.build([10, 11, 12], codes, 2, embeddings, token_weighting="uniform")
    bags = TokenBags.from_codes([[0, 0]], 2)
    query = np.array([[1.0, 0.0]], dtype=np.float32)
    assert index.search(bags, 1).ids.tolist() == [[10]]  # overlap 2, tie with 11: row order
    assert index.search(bags, 1, query_embeddings=query, num_candidates=2).ids.tolist() == [[11]]
    assert index.search(bags, 1, query_embeddings=query, num_candidates=3).ids.tolist() == [[12]]
    assert index.search(bags, 1, query_embeddings=query).ids.tolist() == [[12]]


def test_gather_codebooks_limits_candidates_not_scores() -> None:
    codes = np.array([[0, 0], [1, 0], [0, 1]])
    index = InvertedIndex.build([0, 1, 2], codes, 2, token_weighting="uniform")
    bags = TokenBags.from_flat([0, 0], [0, 2], [1.0, 0.5])  # token 0 (codebook 0), 2 = (1, 0)
    everything = index.search(bags, 3)
    assert everything.rows.tolist() == [[0, 2, 1]]
    assert everything.scores.tolist() == [[1.5, 1.0, 0.5]]
    first_only = index.search(bags, 3, gather_codebooks=1)  # item 1 shares only token 2
    assert first_only.rows.tolist() == [[0, 2, -1]]
    assert first_only.scores[0, :2].tolist() == [1.5, 1.0]


def test_batching_threads_and_dense_bags_do_not_change_results() -> None:
    rng = np.random.default_rng(1)
    codes, embeddings = grid_data(rng, 200, 3, 6, dim=4)
    index = InvertedIndex.build(np.arange(200), codes, 6, embeddings)
    bags = random_bags(rng, 37, 18)
    queries = rng.normal(size=(37, 4)).astype(np.float32)
    dense = np.zeros((37, 18), dtype=np.float32)
    dense[bags.bag_of_entry(), bags.tokens] = bags.weights
    base = index.search(bags, 5, query_embeddings=queries, num_candidates=20, num_threads=1)
    for kwargs in ({"batch_size": 1}, {"batch_size": 4, "num_threads": 3}, {"batch_size": 500}):
        other = index.search(bags, 5, query_embeddings=queries, num_candidates=20, **kwargs)
        assert np.array_equal(other.rows, base.rows)
        assert np.array_equal(other.scores, base.scores)
        from_dense = index.search(dense, 5, query_embeddings=queries, num_candidates=20, **kwargs)
        assert np.array_equal(from_dense.rows, base.rows)


def test_postings_are_sorted_csr_and_idf_is_documented_formula() -> None:
    codes = np.array([[1, 0], [0, 0], [1, 2], [1, 0]])
    index = InvertedIndex.build([5, 6, 7, 8], codes, 3)
    assert index.offsets.tolist() == [0, 1, 4, 4, 7, 7, 8]
    postings = [index.postings(t).tolist() for t in range(6)]
    assert postings == [[1], [0, 2, 3], [], [0, 1, 3], [], [2]]
    df = np.diff(index.offsets)
    expected = [math.log((1 + 4) / (1 + d)) + 1 for d in df]
    assert np.allclose(index.token_weights, expected, rtol=1e-6)
    uniform = InvertedIndex.build([5, 6, 7, 8], codes, 3, token_weighting="uniform")
    assert (uniform.token_weights == 1).all()


def test_own_bom_query_returns_the_item_first() -> None:
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 16, (300, 4))
    codes = np.unique(codes, axis=0)  # distinct BoMs, so each item is its own best match
    index = InvertedIndex.build(np.arange(len(codes)) + 1000, codes, 16)
    result = index.search(TokenBags.from_codes(codes, 16), 3)
    assert (result.ids[:, 0] == np.arange(len(codes)) + 1000).all()


def test_empty_bags_return_padding() -> None:
    index = InvertedIndex.build([1, 2], [[0], [1]], 2, np.eye(2, dtype=np.float32))
    bags = TokenBags.from_flat([1], [1], [1.0], num_bags=3)  # bags 0 and 2 are empty
    for batch_size in (1, 3):
        for cut in (None, 2):
            result = index.search(
                bags, 2, query_embeddings=np.eye(3, 2), num_candidates=cut, batch_size=batch_size
            )
            assert result.ids.tolist() == [[-1, -1], [2, -1], [-1, -1]]
            assert np.isneginf(result.scores[0]).all()
        assert index.search(bags, 1, batch_size=batch_size).ids.tolist() == [[-1], [2], [-1]]
