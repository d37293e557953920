"""`RankingExamples`: deep-funnel examples as the multi-stage ranker reads them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl


@dataclass(frozen=True)
class RankingExamples:
    """Examples as the ranker reads them: global indices, request times, labels, and the
    dense as-of feature frame (one row each)."""

    user: np.ndarray
    ad: np.ndarray
    owner: np.ndarray
    ts: np.ndarray
    label: np.ndarray
    dense: pl.DataFrame

    @classmethod
    def of(cls, frame: pl.DataFrame, dense: pl.DataFrame) -> RankingExamples:
        return cls(
            *(frame[c].to_numpy().astype(np.int64) for c in ("user", "ad", "owner", "ts")),
            frame["label"].to_numpy().astype(np.float32),
            dense,
        )

    def take(self, rows: np.ndarray) -> RankingExamples:
        return RankingExamples(
            self.user[rows],
            self.ad[rows],
            self.owner[rows],
            self.ts[rows],
            self.label[rows],
            self.dense[rows],
        )

    def __len__(self) -> int:
        return len(self.user)
