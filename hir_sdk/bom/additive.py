"""Additive (composite) quantization (AQ): x ~ sum_m C_m[b_m], all M codebooks fitted jointly.

Notable:
- start: residual k-means (`fit_residual`), by default twice: greedy (one residual per
  row) and with the encoder's beam (codebook m fitted on the residuals of each row's
  `beam_size` best partial codes, as faiss's RQ trains), keeping the one with the lower
  training error. Neither wins everywhere: on clustered data the beam's second-best
  partial codes have large residuals that waste codewords; on 7,231 sentence vectors at
  8x256 the beam start's extra training points took the held-out error of AQ from 0.30
  to 0.23 (docs/bom.md);
- fit alternates (a) assignment, encoding the training rows exactly as `encode` will
  (beam search + ICM, `hir_sdk.bom.icm`), and (b) the joint least-squares codebook
  update (`hir_sdk.bom.least_squares`), which never raises the error for the codes given;
  the assignment is the encoder used later, so the codebooks fit the codes it can find
  (keeping a row's previous codes when they are better lowers the training error, but
  the codebooks then fit codes that `encode` cannot reach: the error measured by encoding
  was worse, so fit does not do it);
- `beam_size` = 4 by default: with greedy codes (`beam_size=1`) ICM stalls in poor local
  optima once the codebooks are fitted jointly (see docs/bom.md for the measurements);
- encoding runs `ENCODE_ROWS` rows at a time; a row's codes never depend on the others;
- codebooks: (M, K, D) float32; `history` holds the training MSE per vector at the start
  (`init`, the RQ error) and after each assignment (`assign`) and update (`update`):
  `update[i] <= assign[i]` always.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hir_sdk.bom.beam_search import sum_codewords
from hir_sdk.bom.icm import icm_encode
from hir_sdk.bom.least_squares import least_squares_codebooks
from hir_sdk.bom.quantizer import Quantizer, squared_norms, whole_number
from hir_sdk.bom.residual import fit_residual

ENCODE_ROWS = 4_096  # rows encoded together: their (rows, beam, D) residuals stay small
STARTS = ("best", "greedy", "beam")


class AdditiveQuantizer(Quantizer):
    """Additive (composite) quantization: M full-width codebooks whose codewords add up.

    Args:
        num_codebooks: M, codes per vector.
        codebook_size: K, codewords per codebook.
        beam_size: beam width of the codes ICM starts from (1: greedy residual codes).
        icm_passes: most ICM passes after the beam search.
    """

    kind = "additive"

    def __init__(
        self,
        num_codebooks: int = 8,
        codebook_size: int = 256,
        *,
        beam_size: int = 4,
        icm_passes: int = 3,
    ) -> None:
        super().__init__(num_codebooks, codebook_size)
        self.beam_size = whole_number("beam_size", beam_size, least=1)
        self.icm_passes = whole_number("icm_passes", icm_passes, least=0)

    def _init_args(self) -> dict[str, Any]:
        return {**super()._init_args(), "beam_size": self.beam_size, "icm_passes": self.icm_passes}

    def fit_bytes(self, dim: int) -> int:
        """Adds the least-squares update's (M*K, M*K) float64 system, which LAPACK copies,
        and the (K, K) code-pair counts (`hir_sdk.bom.least_squares`)."""
        size = self.num_codebooks * self.codebook_size
        return super().fit_bytes(dim) + 2 * 8 * size * size + 8 * self.codebook_size**2

    def fit(
        self,
        x: Any,
        *,
        iterations: int = 10,
        seed: int = 0,
        kmeans_iterations: int = 20,
        ridge: float = 1e-3,
        start: str = "best",
    ) -> AdditiveQuantizer:
        """Fit: residual k-means, then `iterations` rounds of assignment + LS update.

        Args:
            x: (N, D) training vectors, N >= K.
            iterations: rounds of (assignment, least-squares codebook update).
            seed: seeds the residual k-means start (nothing later is random).
            kmeans_iterations: most Lloyd iterations per codebook of the start.
            ridge: pull of the LS update towards the previous codebooks, relative to the
                mean count of a codeword (> 0).
            start: `"greedy"` (residual k-means), `"beam"` (residual k-means on the
                residuals of each row's `beam_size` best partial codes) or `"best"`
                (both; the one with the lower training error wins).

        Returns:
            self, fitted.
        """
        whole_number("iterations", iterations, least=0)
        if not ridge > 0:
            raise ValueError(f"ridge must be > 0, got {ridge!r}")
        if start not in STARTS:
            raise ValueError(f"start must be one of {STARTS}, got {start!r}")
        x = self._start_fit(
            x,
            seed=seed,
            iterations=iterations,
            kmeans_iterations=kmeans_iterations,
            ridge=ridge,
            start=start,
        )
        history: dict[str, list[float]] = {}
        codebooks = self._start(x, start, kmeans_iterations, seed, history)
        history.update(assign=[], update=[])
        for _ in range(iterations):
            codes, errors = self._assign(x, codebooks)
            history["assign"].append(float(errors.mean(dtype=np.float64)))
            codebooks = least_squares_codebooks(x, codes, codebooks, ridge)
            errors = squared_norms(x - sum_codewords(codes, codebooks))
            history["update"].append(float(errors.mean(dtype=np.float64)))
        self.codebooks = codebooks
        self.history = history
        return self

    def _start(
        self, x: np.ndarray, start: str, iterations: int, seed: int, history: dict
    ) -> np.ndarray:
        """Codebooks of the start(s) asked for; each start's MSE per stage goes to
        `history["init_<start>"]` and the chosen one's final MSE to `history["init"]`."""
        beams = {"greedy": 1, "beam": self.beam_size}
        names = ["greedy", "beam"] if start == "best" else [start]
        if self.beam_size == 1:
            names = ["greedy"]  # a beam of one is the greedy start
        found = []
        for name in names:
            codebooks, _, mse = fit_residual(
                x,
                self.num_codebooks,
                self.codebook_size,
                iterations=iterations,
                seed=seed,
                beam=beams[name],
            )
            history[f"init_{name}"] = mse
            found.append((mse[-1], codebooks))
        error, codebooks = min(found, key=lambda pair: pair[0])  # ties: the greedy one
        history["init"] = [error]
        return codebooks

    def _assign(self, x: np.ndarray, codebooks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(N, M) codes and (N,) squared errors of `x`, `ENCODE_ROWS` rows at a time."""
        codes = np.empty((len(x), self.num_codebooks), dtype=np.int64)
        errors = np.empty(len(x), dtype=np.float32)
        for start in range(0, len(x), ENCODE_ROWS):
            rows = slice(start, start + ENCODE_ROWS)
            codes[rows], errors[rows] = icm_encode(
                x[rows], codebooks, beam=self.beam_size, passes=self.icm_passes
            )
        return codes, errors

    def _encode(self, x: np.ndarray) -> np.ndarray:
        return self._assign(x, self._fitted_codebooks())[0]

    def _decode(self, codes: np.ndarray) -> np.ndarray:
        return sum_codewords(codes, self._fitted_codebooks())
