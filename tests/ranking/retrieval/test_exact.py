"""Exact k-NN equals numpy's stable argsort of the inner products, ties by row."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.retrieval import exact_knn
from tests.ranking.retrieval.reference import reference_exact


@pytest.mark.parametrize("chunk_size", [1, 7, 1024])
def test_exact_equals_argsort_on_grid_with_ties(chunk_size) -> None:
    rng = np.random.default_rng(0)
    items = (rng.integers(-2, 3, (80, 3)) / 2).astype(np.float32)  # many exact ties
    queries = (rng.integers(-2, 3, (20, 3)) / 2).astype(np.float32)
    result = exact_knn(queries, items, 10, chunk_size=chunk_size)
    expected = reference_exact(queries, items, 10)
    assert np.array_equal(result.rows, expected)
    assert np.array_equal(result.scores, np.take_along_axis(queries @ items.T, expected, axis=1))


def test_exact_equals_argsort_on_random_floats() -> None:
    rng = np.random.default_rng(1)
    items = rng.normal(size=(500, 16)).astype(np.float32)
    queries = rng.normal(size=(30, 16)).astype(np.float32)
    result = exact_knn(queries, items, 25, item_ids=np.arange(500) + 10_000)
    expected = reference_exact(queries, items, 25)
    assert np.array_equal(result.rows, expected)
    assert np.array_equal(result.ids, expected + 10_000)


def test_tie_across_the_cut_keeps_lowest_rows() -> None:
    items = np.array([[1.0], [3.0], [2.0], [2.0], [2.0], [0.0]], dtype=np.float32)
    result = exact_knn(np.ones((1, 1)), items, 3)
    assert result.rows.tolist() == [[1, 2, 3]]
    assert result.scores.tolist() == [[3.0, 2.0, 2.0]]


def test_k_larger_than_items_is_padded() -> None:
    result = exact_knn(np.ones((2, 2)), np.array([[1.0, 0.0], [0.0, 2.0]]), 4)
    assert result.rows.tolist() == [[1, 0, -1, -1]] * 2
    assert result.ids.tolist() == [[1, 0, -1, -1]] * 2
    assert np.isneginf(result.scores[:, 2:]).all()
