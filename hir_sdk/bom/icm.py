"""Encoding for additive codebooks: beam search, then ICM passes, keeping the better codes.

Notable:
- codes b of x for codebooks C (M, K, D) minimise ||x - sum_m C_m[b_m]||^2, a problem
  with no exact fast solver once the codebooks are fitted jointly: we search, starting
  from beam-search codes (`hir_sdk.bom.beam_search`);
- ICM (iterated conditional modes, `icm_refine`): for each m in turn, with the other codes
  fixed, b_m = argmin_k ||x - sum_{j != m} C_j[b_j] - C_m[k]||^2, vectorised as one
  (n, D) x (D, K) product per codebook; a row none of whose codes moved during a pass is
  settled and skipped by the later passes;
- `icm_encode` keeps, per row, the better of the beam codes and the ICM codes, with errors
  recomputed exactly (`sum_codewords`), so ICM is never worse than its starting point;
- a row's codes depend on that row alone (never on the other rows of the batch), and ties
  go to the lower index, so encoding is deterministic.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.bom.beam_search import beam_encode, sum_codewords
from hir_sdk.bom.quantizer import squared_norms


def icm_refine(residual: np.ndarray, codes: np.ndarray, codebooks: np.ndarray, passes: int) -> None:
    """ICM passes over every codebook, updating `residual` (n, D) and `codes` (n, M) in place."""
    half_norms = 0.5 * np.einsum("mkd,mkd->mk", codebooks, codebooks)  # (M, K)
    active = np.arange(len(codes))  # rows still moving
    for _ in range(passes):
        if len(active) == 0:
            break
        everyone = len(active) == len(codes)
        r = residual if everyone else residual[active]  # (a, D)
        b = codes if everyone else codes[active]  # (a, M)
        moved = np.zeros(len(active), dtype=bool)
        for m, codebook in enumerate(codebooks):
            r += codebook[b[:, m]]  # the residual without codebook m
            new = (half_norms[m] - r @ codebook.T).argmin(axis=1)  # (a,)
            moved |= new != b[:, m]
            b[:, m] = new
            r -= codebook[new]
        if not everyone:
            residual[active], codes[active] = r, b
        active = active[moved]


def icm_encode(
    x: np.ndarray, codebooks: np.ndarray, *, beam: int = 1, passes: int = 3
) -> tuple[np.ndarray, np.ndarray]:
    """Codes of `x` (n, D) for additive `codebooks` (M, K, D): beam search, then ICM.

    Args:
        x: (n, D) float32 rows.
        codebooks: (M, K, D) float32.
        beam: beam width of the starting codes (1: greedy).
        passes: most ICM passes (0: the beam codes as they are).

    Returns:
        `(codes, errors)`: (n, M) int64 codes and (n,) float32 ||x - x_hat||^2.
    """
    start, residual = beam_encode(x, codebooks, beam)  # (n, M), (n, D)
    if passes == 0:
        return start, squared_norms(x - sum_codewords(start, codebooks))
    refined = start.copy()
    icm_refine(residual, refined, codebooks, passes)
    errors = np.stack([squared_norms(x - sum_codewords(c, codebooks)) for c in (start, refined)])
    better = errors[1] < errors[0]  # (n,): ties keep the starting codes
    codes = np.where(better[:, None], refined, start)
    return codes, np.where(better, errors[1], errors[0])
