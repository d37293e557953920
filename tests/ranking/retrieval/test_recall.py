"""Recall@k on hand-checked cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval import neighbor_recall, per_query_neighbor_recall


def test_hand_made_cases() -> None:
    retrieved = np.array([[1, 2, 3], [4, 5, 6], [7, -1, -1], [9, 9, 8]])
    reference = np.array([[3, 2, 9], [7, 8, 10], [7, 11, -1], [8, 9, 12]])
    per_query = per_query_neighbor_recall(retrieved, reference)
    assert per_query.tolist() == pytest.approx([2 / 3, 0.0, 1 / 2, 2 / 3])
    assert neighbor_recall(retrieved, reference) == pytest.approx((2 / 3 + 0 + 1 / 2 + 2 / 3) / 4)


def test_cut_off_applies_to_both_sides() -> None:
    retrieved = np.array([[5, 1, 2, 3]])
    reference = np.array([[1, 2, 4, 5]])
    assert neighbor_recall(retrieved, reference, k=2) == 0.5  # {5, 1} vs {1, 2}
    assert neighbor_recall(retrieved, reference, k=1) == 0.0
    assert neighbor_recall(retrieved, reference) == 0.75


def test_empty_reference_is_nan_and_left_out_of_the_mean() -> None:
    per_query = per_query_neighbor_recall([[1, 2], [3, 4]], [[-1, -1], [3, 9]])
    assert math.isnan(per_query[0]) and per_query[1] == 0.5
    assert neighbor_recall([[1, 2], [3, 4]], [[-1, -1], [3, 9]]) == 0.5
    assert math.isnan(neighbor_recall([[1]], [[-1]]))


def test_large_ids_and_identity() -> None:
    ids = np.array([[2**62, 7, -5], [0, 1, 2]])
    assert neighbor_recall(ids, ids) == 1.0


@pytest.mark.parametrize(
    ("retrieved", "reference", "k"),
    [
        ([[1, 2]], [[1, 2], [3, 4]], None),
        ([[1, 2]], [[1, 2, 3]], 3),
        ([[1.0, 2.0]], [[1, 2]], None),
        ([[1, 2]], [[1, 2]], 0),
    ],
)
def test_bad_inputs(retrieved, reference, k) -> None:
    with pytest.raises(InputError):
        neighbor_recall(retrieved, reference, k)
