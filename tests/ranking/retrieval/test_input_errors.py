"""Every caller mistake is an `InputError` that says what is wrong."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, exact_knn

CODES = np.array([[0, 1], [2, 0], [1, 1]])
EMB = np.eye(3, 4, dtype=np.float32)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (([1, 2, 3], [[0, 1], [3, 0], [1, 1]], 3), {}, r"codes must lie in \[0, 3\)"),
        (([1, 2, 3], [[0, 1], [-1, 0], [1, 1]], 3), {}, "row 1"),
        (([1, 2, 3], [0, 1, 2], 3), {}, r"shape \(N, M\)"),
        (([1, 2, 3], CODES.astype(float), 3), {}, "integers"),
        (([1, 2], CODES, 3), {}, r"item_ids must be \(3,\)"),
        (([1, 2, 1], CODES, 3), {}, "unique"),
        (([1, 2, 3], CODES, 0), {}, "codebook_size"),
        (([1, 2, 3], CODES, 3, EMB[:2]), {}, "3 rows"),
        (([1, 2, 3], CODES, 3, np.where(EMB > 0, np.nan, 0)), {}, "finite"),
        (([1, 2, 3], CODES, 3), {"token_weighting": "bm25"}, "token_weighting"),
        (([], np.zeros((0, 2), dtype=np.int64), 3), {}, "1 to"),
    ],
)
def test_build_errors(args, kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        InvertedIndex.build(*args, **kwargs)


INDEX = InvertedIndex.build([1, 2, 3], CODES, 3, EMB)
BAGS = TokenBags.from_codes(CODES[:2], 3)


@pytest.mark.parametrize(
    ("bags", "k", "kwargs", "message"),
    [
        (BAGS, 0, {}, "k must be"),
        (BAGS, -2, {}, "k must be"),
        (BAGS, 1.5, {}, "k must be"),
        (BAGS, 2, {"query_embeddings": EMB[:2], "num_candidates": 1}, "must be >= k"),
        (BAGS, 2, {"query_embeddings": EMB[:2], "num_candidates": 0}, "num_candidates"),
        (BAGS, 2, {"query_embeddings": EMB[:1]}, "2 rows"),
        (BAGS, 2, {"query_embeddings": EMB[:2, :3]}, "dimension 4"),
        (BAGS, 2, {"query_embeddings": np.where(EMB[:2] > 0, np.inf, 0)}, "finite"),
        (BAGS, 2, {"gather_codebooks": 3}, "gather_codebooks"),
        (BAGS, 2, {"batch_size": 0}, "batch_size"),
        (TokenBags.from_flat([0], [6]), 2, {}, "< M\\*K = 6"),
        (np.ones((2, 5)), 2, {}, "M\\*K = 6"),
        (-np.ones((2, 6)), 2, {}, ">= 0"),
        ([[0, 1]], 2, {}, "M\\*K = 6"),
    ],
)
def test_search_errors(bags, k, kwargs, message) -> None:
    with pytest.raises(InputError, match=message):
        INDEX.search(bags, k, **kwargs)


def test_postings_token_range() -> None:
    with pytest.raises(InputError, match=r"\[0, M\*K = 6\)"):
        INDEX.postings(6)


def test_query_embeddings_need_index_embeddings() -> None:
    bare = InvertedIndex.build([1, 2, 3], CODES, 3)
    with pytest.raises(InputError, match="holds no embeddings"):
        bare.search(BAGS, 1, query_embeddings=EMB[:2])


@pytest.mark.parametrize(
    ("queries", "items", "k", "message"),
    [
        (EMB, EMB, 0, "k must be"),
        (EMB[:, :3], EMB, 1, "dimension 4"),
        (np.where(EMB > 0, np.nan, 0), EMB, 1, "finite"),
        (EMB, np.full((2, 4), np.inf), 1, "finite"),
        (EMB[0], EMB, 1, r"shape \(N, D\)"),
    ],
)
def test_exact_errors(queries, items, k, message) -> None:
    with pytest.raises(InputError, match=message):
        exact_knn(queries, items, k)
