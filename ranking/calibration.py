"""Platt scaling: `p = sigmoid(a · logit + b)` fitted on held-out (validation) examples, so
a ranker's probabilities match observed rates (NE and calibration need that, not only
the ordering). Two parameters, fitted by Newton's method on the log loss of the
standardized logits, each step halved until the loss falls: logits in a narrow range
(a tree model's margins) make plain Newton from (1, 0) diverge."""

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
        centre, scale = float(x.mean()), float(x.std()) or 1.0
        X = np.stack([(x - centre) / scale, np.ones_like(x)], axis=1)
        w = np.array([scale, centre])  # starts at the identity map: a = 1, b = 0

        def loss(w: np.ndarray) -> float:
            z = X @ w
            return float(np.sum(np.logaddexp(0.0, z) - y * z))

        current = loss(w)
        for _ in range(iterations):
            p = _sigmoid(X @ w)
            grad = X.T @ (p - y)
            hess = (X * (p * (1 - p))[:, None]).T @ X + ridge * np.eye(2)
            step = np.linalg.solve(hess, grad)
            shrink = 1.0
            while shrink > 1e-6 and loss(w - shrink * step) > current:
                shrink /= 2
            w = w - shrink * step
            current = loss(w)
            if np.abs(shrink * step).max() < 1e-10:
                break
        # sigmoid(w0 (x - centre) / scale + w1) = sigmoid(a x + b)
        return cls(float(w[0] / scale), float(w[1] - w[0] * centre / scale))

    def __call__(self, logits: np.ndarray) -> np.ndarray:
        return _sigmoid(self.a * np.asarray(logits, dtype=np.float64) + self.b)
