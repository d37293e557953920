"""Codes for additive codebooks (RQ, AQ) by beam search; a beam of one is greedy residual coding.

Notable:
- the codes b of x for codebooks C (M, K, D) should minimise ||x - sum_m C_m[b_m]||^2;
  `sum_codewords` is the decoder (codewords added in the order m = 0..M-1);
- `greedy_encode`: for m = 0..M-1, the codeword of C_m nearest to the current residual;
- `beam_encode`: for m = 0..M-1, extend each of the `beam` best partial codes by every
  codeword of C_m and keep the `beam` best (`extend_beams`), so a code that is second best
  after C_0 but best after C_1 survives. Costs `beam` (n, D) x (D, K) products per codebook;
  `beam=1` is `greedy_encode`;
- the `beam` best of the (beam * K) candidates are taken by `beam` argmins (faster than an
  argpartition for small beams; the lowest index wins ties), and a row's codes depend on
  that row alone, so encoding is deterministic whatever the batch;
- the residuals of every partial code are kept, so a fit can train codebook m on all of
  them (`hir_sdk.bom.residual.fit_residual` with a beam).

```
after codebook m:  residual (n, b, D)   errors (n, b) ||residual||^2   codes (n, b, m + 1)
                   beams sorted by error: [:, 0] is each row's best partial code
```
"""

from __future__ import annotations

import numpy as np

from hir_sdk.bom.kmeans import CHUNK_ROWS, nearest


def sum_codewords(codes: np.ndarray, codebooks: np.ndarray) -> np.ndarray:
    """(N, D) float32 sum_m C_m[codes[:, m]] for codes (N, M) and codebooks (M, K, D)."""
    out = codebooks[0][codes[:, 0]]  # (N, D), a fresh array
    for m in range(1, len(codebooks)):
        out += codebooks[m][codes[:, m]]
    return out


def greedy_encode(x: np.ndarray, codebooks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Greedy residual codes of `x` (N, D) for `codebooks` (M, K, D).

    Returns:
        `(codes, residual)`: (N, M) int64 codes and (N, D) float32 `x - sum_m C_m[b_m]`.
    """
    residual = x.copy()  # (N, D)
    codes = np.empty((len(x), len(codebooks)), dtype=np.int64)  # (N, M)
    for m, codebook in enumerate(codebooks):
        codes[:, m], _ = nearest(residual, codebook)
        residual -= codebook[codes[:, m]]
    return codes, residual


def start_beams(x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The empty partial code of each row: residual (n, 1, D), errors (n, 1), codes (n, 1, 0)."""
    errors = np.einsum("nd,nd->n", x, x)[:, None]
    return x[:, None, :], errors, np.empty((len(x), 1, 0), dtype=np.int64)


def extend_beams(
    residual: np.ndarray,
    errors: np.ndarray,
    codes: np.ndarray,
    codebook: np.ndarray,
    beam: int,
    *,
    chunk_rows: int = CHUNK_ROWS,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Add one codebook (K, D) to every partial code and keep each row's `beam` best.

    Args:
        residual: (n, b, D) float32 residuals of the partial codes.
        errors: (n, b) float32 their squared norms.
        codes: (n, b, m) int64 partial codes.
        codebook: (K, D) float32, the next codebook.
        beam: partial codes to keep per row.
        chunk_rows: rows extended together (bounds the (rows * b, K) cost block).

    Returns:
        `(residual, errors, codes)` of the `min(beam, b * K)` best extensions, best first.
    """
    n, width, dim = residual.shape
    if n > chunk_rows:
        parts = []
        for s in range(0, n, chunk_rows):
            rows = slice(s, s + chunk_rows)
            parts.append(extend_beams(residual[rows], errors[rows], codes[rows], codebook, beam))
        residual, errors, codes = (np.concatenate(part) for part in zip(*parts, strict=True))
        return residual, errors, codes
    size = len(codebook)
    half_norms = 0.5 * np.einsum("kd,kd->k", codebook, codebook)  # (K,)
    cost = residual.reshape(n * width, dim) @ codebook.T  # (n*b, K): r.c
    np.subtract(half_norms, cost, out=cost)
    cost *= 2  # ||c||^2 - 2 r.c
    cost = cost.reshape(n, width, size)
    cost += errors[:, :, None]  # ||r - c||^2 for every partial code and codeword
    cost = cost.reshape(n, width * size)
    keep = min(beam, width * size)
    rows = np.arange(n)
    top = np.empty((n, keep), dtype=np.int64)
    kept = np.empty((n, keep), dtype=np.float32)
    for i in range(keep):
        top[:, i] = cost.argmin(axis=1)
        kept[:, i] = cost[rows, top[:, i]]
        cost[rows, top[:, i]] = np.inf
    parent, word = np.divmod(top, size)  # (n, keep) each
    residual = residual[rows[:, None], parent] - codebook[word]  # (n, keep, D)
    codes = np.concatenate([codes[rows[:, None], parent], word[:, :, None]], axis=2)
    return residual, kept, codes


def beam_encode(x: np.ndarray, codebooks: np.ndarray, beam: int) -> tuple[np.ndarray, np.ndarray]:
    """Beam-search codes of `x` (n, D) for additive `codebooks` (M, K, D).

    Returns:
        `(codes, residual)`: (n, M) int64 codes of the best beam and (n, D) float32
        `x - sum_m C_m[b_m]`.
    """
    if beam == 1:
        return greedy_encode(x, codebooks)
    residual, errors, codes = start_beams(x)
    for codebook in codebooks:
        residual, errors, codes = extend_beams(residual, errors, codes, codebook, beam)
    return codes[:, 0], np.ascontiguousarray(residual[:, 0])
