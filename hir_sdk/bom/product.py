"""Product quantization (PQ): split the D dims into M slices of D / M, k-means on each slice.

Notable:
- the baseline that cannot model correlations between slices: a cluster stretched across
  two slices costs codewords in both, which is where additive quantization wins;
- D must be a multiple of M (an `InputError` at fit time otherwise);
- codebooks: (M, K, D / M) float32; a vector's code m is its nearest codeword of slice m,
  and decoding concatenates the M chosen codewords;
- `history["fit"]` holds the training MSE per vector after each slice's k-means (the error
  of the slices fitted so far; the slices not yet fitted count as zero error).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hir_sdk.bom.kmeans import kmeans, nearest
from hir_sdk.bom.quantizer import Quantizer
from hir_sdk.errors import InputError


class ProductQuantizer(Quantizer):
    """Product quantization: M independent k-means codebooks, one per slice of the dims.

    Args:
        num_codebooks: M, codes per vector (and slices of the dims).
        codebook_size: K, codewords per codebook.
    """

    kind = "product"

    def _codebook_shape(self, dim: int) -> tuple[int, ...]:
        return (self.num_codebooks, self.codebook_size, dim // self.num_codebooks)

    def _check_width(self, dim: int) -> None:
        if dim % self.num_codebooks:
            raise InputError(
                f"product quantization needs D to be a multiple of num_codebooks="
                f"{self.num_codebooks}, got D={dim}"
            )

    def _slices(self) -> list[slice]:
        assert self.dim is not None
        width = self.dim // self.num_codebooks
        return [slice(m * width, (m + 1) * width) for m in range(self.num_codebooks)]

    def fit(self, x: Any, *, iterations: int = 20, seed: int = 0) -> ProductQuantizer:
        """Fit one k-means codebook per slice of the dims.

        Args:
            x: (N, D) training vectors, N >= K and D a multiple of M.
            iterations: most Lloyd iterations per codebook.
            seed: seeds every codebook's k-means (codebook m uses child m of `seed`).

        Returns:
            self, fitted.
        """
        x = self._start_fit(x, seed=seed, iterations=iterations)
        seeds = np.random.SeedSequence(seed).spawn(self.num_codebooks)
        codebooks = np.empty(self._codebook_shape(x.shape[1]), dtype=np.float32)
        total, mse = 0.0, []
        for m, part in enumerate(self._slices()):
            sub = np.ascontiguousarray(x[:, part])  # (N, D / M)
            result = kmeans(sub, self.codebook_size, iterations=iterations, seed=seeds[m])
            codebooks[m] = result.centroids
            total += result.inertia
            mse.append(total / len(x))
        self.codebooks = codebooks
        self.history = {"fit": mse}
        return self

    def _encode(self, x: np.ndarray) -> np.ndarray:
        codebooks = self._fitted_codebooks()
        codes = np.empty((len(x), self.num_codebooks), dtype=np.int64)  # (N, M)
        for m, part in enumerate(self._slices()):
            codes[:, m], _ = nearest(np.ascontiguousarray(x[:, part]), codebooks[m])
        return codes

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        codebooks = self._fitted_codebooks()
        parts = [codebooks[m][codes[:, m]] for m in range(self.num_codebooks)]  # M x (N, D/M)
        return np.concatenate(parts, axis=1)  # (N, D)
