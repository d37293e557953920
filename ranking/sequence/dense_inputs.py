"""Dense features for a neural ranker: signed log, missing values made explicit, then
standardized with statistics of the training examples only.

```
x -> sign(x) log(1 + |x|) -> NaN -> 0 (+ one 0/1 "missing" column per column that had a
NaN in training) -> (x - mean) / std
```
"""

from __future__ import annotations

import numpy as np
import polars as pl


class DenseScaler:
    def __init__(self, train: pl.DataFrame) -> None:
        self.columns = list(train.columns)
        x = _signed_log(train.to_numpy().astype(np.float64))
        self.missing = np.flatnonzero(np.isnan(x).any(axis=0))
        full = self._expand(x)
        self.mean = full.mean(axis=0)
        self.std = np.maximum(full.std(axis=0), 1e-6)

    @classmethod
    def restore(
        cls, columns: list[str], missing: np.ndarray, mean: np.ndarray, std: np.ndarray
    ) -> DenseScaler:
        """A scaler with the statistics a fitted one holds (saved with its ranker)."""
        scaler = cls.__new__(cls)
        scaler.columns = list(columns)
        scaler.missing = np.asarray(missing, dtype=np.int64)
        scaler.mean, scaler.std = np.asarray(mean), np.asarray(std)
        return scaler

    @property
    def width(self) -> int:
        return len(self.columns) + len(self.missing)

    def _expand(self, x: np.ndarray) -> np.ndarray:
        flags = np.isnan(x[:, self.missing]).astype(np.float64)
        return np.concatenate([np.nan_to_num(x, nan=0.0), flags], axis=1)

    def transform(self, frame: pl.DataFrame) -> np.ndarray:
        """(n, width) float32."""
        x = _signed_log(frame.select(self.columns).to_numpy().astype(np.float64))
        return ((self._expand(x) - self.mean) / self.std).astype(np.float32)


def _signed_log(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.log1p(np.abs(x))
