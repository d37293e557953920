"""`probe_queries`: the bags of `probe_bags` over exact codeword scores, for any batch (the
same tokens always; the same weights wherever a codebook has more occupied codewords than
probes)."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import TokenBags, embedding_probes, probe_bags, probe_queries
from hir_sdk.ranking.retrieval.rescoring import exact_ip


def _data(seed: int, num: int = 600, levels: int = 3, size: int = 64, dim: int = 24):
    rng = np.random.default_rng(seed)
    queries = rng.standard_normal((num, dim)).astype(np.float32)
    books = rng.standard_normal((levels, size, dim)).astype(np.float32)
    # near-ties: codewords that differ from another in the last bits only
    books[:, 1] = books[:, 0] * np.float32(1 + 2**-22)
    return queries, books


def _exact_scores(queries: np.ndarray, books: np.ndarray) -> np.ndarray:
    """(B, M, K) exact_ip of every query and codeword, pair by pair."""
    return np.stack([exact_ip(book[None, :, :], queries[:, None, :]) for book in books], 1)


def _same(a: TokenBags, b: TokenBags) -> bool:
    return all(
        np.array_equal(getattr(a, f), getattr(b, f)) for f in ("offsets", "tokens", "weights")
    )


@pytest.mark.parametrize("probes", [1, 4, [3, 0, 9], 20])
def test_equals_probe_bags_of_exact_scores(probes) -> None:
    queries, books = _data(0)
    occupied = np.random.default_rng(1).random(books.shape[:2]) > 0.25
    got = probe_queries(queries, books, probes, occupied=occupied)
    expected = probe_bags(_exact_scores(queries, books), probes, occupied=occupied)
    assert _same(got, expected)
    assert np.diff(got.offsets).min() > 0  # every query probed something


def test_a_querys_bag_does_not_depend_on_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    queries, books = _data(2, num=900)
    whole = probe_queries(queries, books, 6)
    for lo, hi in ((0, 1), (5, 6), (17, 530), (301, 900)):
        part = probe_queries(queries[lo:hi], books, 6)
        first, last = whole.offsets[lo], whole.offsets[hi]
        np.testing.assert_array_equal(part.tokens, whole.tokens[first:last])
        np.testing.assert_array_equal(part.weights, whole.weights[first:last])
    monkeypatch.setattr(embedding_probes, "CHUNK_ROWS", 7)  # many small matmuls
    assert _same(probe_queries(queries, books, 6), whole)


def test_a_codebook_with_few_occupied_codewords_is_probed_whole() -> None:
    queries, books = _data(3, num=50, levels=2)
    queries[0] *= np.float32(1e7)  # a large norm: the floor must stay below every score
    books[0, 30] = -queries[0] / np.float32(1e7)  # its score is about -|q| |c|
    occupied = np.zeros(books.shape[:2], dtype=bool)
    occupied[0, [4, 9, 30]] = True  # 3 codewords, 5 probes
    occupied[1] = True
    bags = probe_queries(queries, books, 5, occupied=occupied)
    exact = _exact_scores(queries, books)
    reference = probe_bags(exact, 5, occupied=occupied)  # the same tokens
    np.testing.assert_array_equal(bags.offsets, reference.offsets)
    np.testing.assert_array_equal(bags.tokens, reference.tokens)
    terms = queries.shape[1] + 1
    gamma = terms * 2.0**-24 / (1.0 - terms * 2.0**-24)
    bound = -(
        np.linalg.norm(queries.astype(np.float64), axis=1)
        * np.linalg.norm(books[0, [4, 9, 30]].astype(np.float64), axis=1).max()
        * (1.0 + 2.0 * gamma)
        + 1.0
    )
    floor = np.nextafter(bound.astype(np.float32), np.float32(-np.inf))
    assert (floor < exact[:, 0, [4, 9, 30]].min(axis=1)).all()
    for b in range(len(queries)):
        tokens = bags.tokens[bags.offsets[b] : bags.offsets[b + 1]]
        weights = bags.weights[bags.offsets[b] : bags.offsets[b + 1]]
        assert tokens[:3].tolist() == [4, 9, 30]
        np.testing.assert_array_equal(weights[:3], exact[b, 0, [4, 9, 30]] - floor[b])
        assert (weights > 0).all() and len(tokens) <= 3 + 5


def test_bad_arguments_are_named() -> None:
    queries, books = _data(4, num=5)
    with pytest.raises(InputError, match="probes"):
        probe_queries(queries, books, 64)
    with pytest.raises(InputError, match="probes"):
        probe_queries(queries, books, [1, 2])
    with pytest.raises(InputError, match="occupied"):
        probe_queries(queries, books, 2, occupied=np.ones((3, 10), dtype=bool))
    with pytest.raises(InputError, match="codebooks"):
        probe_queries(queries, books[0], 2)
    with pytest.raises(InputError, match="dimension"):
        probe_queries(queries[:, :5], books, 2)
    with pytest.raises(InputError, match="finite"):
        probe_queries(queries * np.float32(np.nan), books, 2)
