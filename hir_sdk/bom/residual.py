"""Residual quantization (RQ): x ~ sum_m C_m[b_m], each codebook fitted on what the previous
ones left.

Notable:
- fit: k-means on x gives C_0; k-means on the residual x - C_0[b_0] gives C_1; and so on.
  Each codebook is fitted once and never revisited, which is what additive quantization
  (`hir_sdk.bom.additive`) improves on; RQ is its starting point and its baseline;
- `beam_size=1` (the default) is plain greedy residual k-means: codes of the training rows
  are the k-means labels, and `encode` is greedy (`hir_sdk.bom.beam_search`);
- with `beam_size=b > 1`, the fit keeps each row's b best partial codes, and codebook m is
  fitted by k-means on the residuals of all of them (b * N rows, so b times the training
  points per codeword), then every partial code is extended by C_m and the b best are kept;
  `encode` searches with the same beam. On 7,231 sentence vectors (384-d) at 8x256 this
  start is what lets AQ beat faiss's RQ and LSQ (see docs/bom.md);
- codebooks: (M, K, D) float32; `history["fit"]` holds the training MSE per vector after
  each codebook (of each row's best partial code), so it shows what each stage buys.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hir_sdk.bom.beam_search import beam_encode, extend_beams, start_beams, sum_codewords
from hir_sdk.bom.kmeans import kmeans
from hir_sdk.bom.quantizer import Quantizer, squared_norms, whole_number


def fit_residual(
    x: np.ndarray,
    num_codebooks: int,
    codebook_size: int,
    *,
    iterations: int,
    seed: int,
    beam: int = 1,
) -> tuple[np.ndarray, np.ndarray, list[float]]:
    """Residual k-means on checked (N, D) float32 rows, greedy or with a beam.

    Args:
        x: (N, D) float32 rows, N >= `codebook_size`.
        num_codebooks: M.
        codebook_size: K.
        iterations: most Lloyd iterations per codebook.
        seed: codebook m's k-means uses child m of `numpy.random.SeedSequence(seed)`.
        beam: partial codes kept per row (1: greedy).

    Returns:
        `(codebooks, codes, mse)`: (M, K, D) float32 codebooks, (N, M) int64 training codes
        (each row's best), and the training MSE per vector after each codebook.
    """
    seeds = np.random.SeedSequence(seed).spawn(num_codebooks)
    codebooks = np.empty((num_codebooks, codebook_size, x.shape[1]), dtype=np.float32)
    residual, errors, codes = start_beams(x)  # (N, 1, D), (N, 1), (N, 1, 0)
    residual = residual.copy()
    mse = []
    for m in range(num_codebooks):
        train = residual.reshape(-1, x.shape[1])  # (N * b, D)
        result = kmeans(train, codebook_size, iterations=iterations, seed=seeds[m])
        codebooks[m] = result.centroids
        if beam == 1:  # the k-means labels are the greedy codes
            residual -= result.centroids[result.labels][:, None, :]
            codes = np.concatenate([codes, result.labels[:, None, None]], axis=2)
        else:
            residual, errors, codes = extend_beams(residual, errors, codes, codebooks[m], beam)
        mse.append(float(squared_norms(residual[:, 0]).mean(dtype=np.float64)))
    return codebooks, np.ascontiguousarray(codes[:, 0]), mse


class ResidualQuantizer(Quantizer):
    """Residual k-means, the baseline (and starting point) of additive quantization.

    Args:
        num_codebooks: M, codes per vector.
        codebook_size: K, codewords per codebook.
        beam_size: partial codes kept per row when fitting and encoding (1: greedy).
    """

    kind = "residual"

    def __init__(
        self, num_codebooks: int = 8, codebook_size: int = 256, *, beam_size: int = 1
    ) -> None:
        super().__init__(num_codebooks, codebook_size)
        self.beam_size = whole_number("beam_size", beam_size, least=1)

    def _init_args(self) -> dict[str, Any]:
        return {**super()._init_args(), "beam_size": self.beam_size}

    def fit(self, x: Any, *, iterations: int = 20, seed: int = 0) -> ResidualQuantizer:
        """Fit the M codebooks one after another on the residuals of `x`.

        Args:
            x: (N, D) training vectors, N >= K.
            iterations: most Lloyd iterations per codebook.
            seed: seeds every codebook's k-means (codebook m uses child m of `seed`).

        Returns:
            self, fitted.
        """
        x = self._start_fit(x, seed=seed, iterations=iterations)
        self.codebooks, _, mse = fit_residual(
            x,
            self.num_codebooks,
            self.codebook_size,
            iterations=iterations,
            seed=seed,
            beam=self.beam_size,
        )
        self.history = {"fit": mse}
        return self

    def _encode(self, x: np.ndarray) -> np.ndarray:
        return beam_encode(x, self._fitted_codebooks(), self.beam_size)[0]

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        return sum_codewords(codes, self._fitted_codebooks())
