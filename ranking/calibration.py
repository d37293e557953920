"""Platt scaling: `p = sigmoid(a · logit + b)` fitted on held-out (validation) examples, so
a ranker's probabilities match observed rates (NE and calibration need that, not only
the ordering). Two parameters, fitted by Newton's method on the log loss."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

PROBABILITY_FLOOR = 1e-7  # served probabilities stay inside (0, 1): log loss stays finite


def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))


@dataclass(frozen=True)
class PlattScaling:
    a: float = 1.0
    b: float = 0.0

    @classmethod
    def fit(
        cls, logits: np.ndarray, labels: np.ndarray, *, iterations: int = 50, ridge: float = 1e-6
    ) -> PlattScaling:
        x = np.asarray(logits, dtype=np.float64)
        y = np.asarray(labels, dtype=np.float64)
        if x.shape != y.shape or x.ndim != 1 or len(x) == 0:
            raise ValueError("PlattScaling.fit: logits and labels must be 1-D, same length")
        if y.min() == y.max():
            raise ValueError("PlattScaling.fit: needs both positive and negative labels")
        w = np.array([1.0, 0.0])
        X = np.stack([x, np.ones_like(x)], axis=1)
        for _ in range(iterations):
            p = _sigmoid(X @ w)
            grad = X.T @ (p - y)
            hess = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
            step = np.linalg.solve(hess, grad)
            w -= step
            if np.abs(step).max() < 1e-10:
                break
        return cls(float(w[0]), float(w[1]))

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        return _sigmoid(self.a * np.asarray(logits, dtype=np.float64) + self.b)
