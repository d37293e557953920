"""Small structured data for the quantizer tests, and quantizers fitted on it once.

`mixture`: a Gaussian mixture whose clusters are stretched along random 2-d planes, plus
a little isotropic noise. Each cluster spans all dims, so slices of the dims (PQ) are
correlated, and each stretch is a continuous direction that a sum of codewords from
several codebooks follows better than a greedy residual split does.
"""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.bom import AdditiveQuantizer, ProductQuantizer, ResidualQuantizer

M, K = 4, 16  # codebooks and codewords of the shared fitted quantizers


def mixture(
    n: int = 2000, dim: int = 16, clusters: int = 8, seed: int = 0, draw: int = 0
) -> np.ndarray:
    """(n, dim) float32 rows of an anisotropic Gaussian mixture: `seed` fixes the clusters,
    `draw` the rows drawn from them."""
    rng = np.random.default_rng(seed)
    centers = 4.0 * rng.standard_normal((clusters, dim))  # (C, D)
    stretch = 1.5 * rng.standard_normal((clusters, dim, 2))  # (C, D, 2)
    rng = np.random.default_rng([seed, draw])
    label = rng.integers(clusters, size=n)  # (n,)
    z = rng.standard_normal((n, 2))  # (n, 2)
    noise = 0.2 * rng.standard_normal((n, dim))
    return (centers[label] + np.einsum("ndr,nr->nd", stretch[label], z) + noise).astype(np.float32)


@pytest.fixture(scope="session")
def data() -> np.ndarray:
    return mixture()


@pytest.fixture(scope="session")
def additive(data: np.ndarray) -> AdditiveQuantizer:
    return AdditiveQuantizer(M, K).fit(data, iterations=5, seed=0)


@pytest.fixture(scope="session")
def residual(data: np.ndarray) -> ResidualQuantizer:
    return ResidualQuantizer(M, K).fit(data, seed=0)


@pytest.fixture(scope="session")
def product(data: np.ndarray) -> ProductQuantizer:
    return ProductQuantizer(M, K).fit(data, seed=0)
