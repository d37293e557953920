"""Dense features for a neural ranker: signed log, missing values made explicit, then
standardized with statistics of the training examples only; with `bins`, each column
also gets a piecewise-linear encoding over its training quantiles.

```
x -> sign(x) log(1 + |x|) -> NaN -> 0 (+ one 0/1 "missing" column per column that had a
NaN in training) -> (x - mean) / std
bins T: edges e_0 <= ... <= e_T, the column's training quantiles (NaN left out);
        piece t = clip((x - e_{t-1}) / (e_t - e_{t-1}), 0, 1), or the step x >= e_{t-1}
        where the two edges are equal; a missing x gives zeros
```

The piecewise-linear pieces let a linear layer give each range of a feature its own
slope, which a network otherwise has to learn from one scaled value; it is the encoding
of Gorishniy et al., "On Embeddings for Numerical Features in Tabular Deep Learning"
(2022), with quantile bins.
"""

from __future__ import annotations

import numpy as np
import polars as pl


class DenseScaler:
    def __init__(self, train: pl.DataFrame, bins: int = 0) -> None:
        if bins < 0:
            raise ValueError(f"DenseScaler: bins must be >= 0, got {bins}")
        self.columns = list(train.columns)
        x = _signed_log(train.to_numpy().astype(np.float64))
        self.missing = np.flatnonzero(np.isnan(x).any(axis=0))
        full = self._expand(x)
        self.mean = full.mean(axis=0)
        self.std = np.maximum(full.std(axis=0), 1e-6)
        self.edges = _quantile_edges(x, bins)  # (F, bins + 1), empty without bins

    @classmethod
    def restore(
        cls,
        columns: list[str],
        missing: np.ndarray,
        mean: np.ndarray,
        std: np.ndarray,
        edges: np.ndarray | None = None,
    ) -> DenseScaler:
        """A scaler with the statistics a fitted one holds (saved with its ranker)."""
        scaler = cls.__new__(cls)
        scaler.columns = list(columns)
        scaler.missing = np.asarray(missing, dtype=np.int64)
        scaler.mean, scaler.std = np.asarray(mean), np.asarray(std)
        empty = np.zeros((len(scaler.columns), 0))
        scaler.edges = empty if edges is None else np.asarray(edges, dtype=np.float64)
        return scaler

    @property
    def bins(self) -> int:
        return max(self.edges.shape[1] - 1, 0)

    @property
    def width(self) -> int:
        return len(self.columns) + len(self.missing) + len(self.columns) * self.bins

    def _expand(self, x: np.ndarray) -> np.ndarray:
        flags = np.isnan(x[:, self.missing]).astype(np.float64)
        return np.concatenate([np.nan_to_num(x, nan=0.0), flags], axis=1)

    def transform(self, frame: pl.DataFrame) -> np.ndarray:
        """(n, width) float32: the standardized columns and flags, then each column's
        pieces."""
        x = _signed_log(frame.select(self.columns).to_numpy().astype(np.float64))
        scaled = (self._expand(x) - self.mean) / self.std
        if not self.bins:
            return scaled.astype(np.float32)
        lo, hi = self.edges[None, :, :-1], self.edges[None, :, 1:]  # (1, F, T)
        v = x[:, :, None]
        with np.errstate(invalid="ignore"):  # NaN compares false: a missing x gives zeros
            ramp = np.clip((v - lo) / np.maximum(hi - lo, 1e-12), 0.0, 1.0)
            pieces = np.where(hi > lo, ramp, v >= lo)
        pieces = np.nan_to_num(pieces, nan=0.0).reshape(len(x), -1)
        return np.concatenate([scaled, pieces], axis=1).astype(np.float32)


def _quantile_edges(x: np.ndarray, bins: int) -> np.ndarray:
    """(F, bins + 1) quantiles of each column's non-missing training values (zeros for a
    column with none)."""
    if not bins:
        return np.zeros((x.shape[1], 0))
    q = np.linspace(0.0, 1.0, bins + 1)
    edges = np.zeros((x.shape[1], bins + 1))
    for j in range(x.shape[1]):
        seen = x[:, j][~np.isnan(x[:, j])]
        if len(seen):
            edges[j] = np.quantile(seen, q)
    return edges


def _signed_log(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))
