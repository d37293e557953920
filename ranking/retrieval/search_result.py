"""`SearchResult`: the top-k answer of every search in this package, padded to k columns."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SearchResult:
    """Top-k items per query, best first (score descending, then item row ascending).

    Queries with fewer than k results are padded with id -1, row -1 and score -inf.

    Attributes:
        ids: (B, k) int64 item ids.
        scores: (B, k) float32 scores (inner products, or overlap scores when the index
            did not re-score).
        rows: (B, k) int64 item rows in the searched collection.
    """

    ids: np.ndarray
    scores: np.ndarray
    rows: np.ndarray

    @classmethod
    def from_rows(cls, rows: np.ndarray, scores: np.ndarray, item_ids: np.ndarray) -> SearchResult:
        """Result from (B, k) rows (-1 = empty slot), their scores and the (N,) id table."""
        ids = np.where(rows >= 0, item_ids[np.maximum(rows, 0)], -1)
        scores = np.where(rows >= 0, scores, np.float32(-np.inf)).astype(np.float32)
        return cls(ids.astype(np.int64), scores, rows.astype(np.int64))
