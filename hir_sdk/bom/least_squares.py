"""The least-squares codebook update of additive quantization: all codebooks at once.

With B the (N, M*K) one-hot matrix of fixed codes (row n has a 1 in column m*K + b_nm for
each m) and C the (M*K, D) stacked codebooks, the update solves

    min_C ||X - B C||^2 + lam ||C - C_prev||^2
    <=>  (B^T B + lam I) C = B^T X + lam C_prev

Notable:
- B is never formed: B^T B is M diagonal blocks of codeword counts plus M(M-1)/2
  off-diagonal (K, K) blocks of code-pair counts (`np.bincount` of b_m * K + b_j), and
  B^T X is M blocks of per-codeword row sums (`group_sums`);
- the ridge anchors the solution at the previous codebooks: B^T B is singular (a vector
  added to every codeword of C_m and taken from every codeword of C_j changes nothing, and
  unused codewords have empty rows), and lam > 0 makes the system definite, keeps unused
  codewords where they were, and guarantees the step never raises the error (C_prev is a
  candidate, so ||X - B C||^2 <= ||X - B C_prev||^2);
- lam = ridge * N / K (relative to the mean count of a codeword); the (M*K, M*K) system is
  solved in float64 by LAPACK (`numpy.linalg.solve`), then rounded to float32. numpy, not
  torch: importing torch takes seconds, and nothing else here needs it.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.bom.kmeans import group_sums


def normal_equations(x: np.ndarray, codes: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(B^T B, B^T X): (M*K, M*K) and (M*K, D) float64 for rows `x` (N, D), codes (N, M)."""
    num_codebooks = codes.shape[1]
    size = num_codebooks * k
    gram = np.zeros((size, size), dtype=np.float64)  # (M*K, M*K)
    rhs = np.empty((size, x.shape[1]), dtype=np.float64)  # (M*K, D)
    for m in range(num_codebooks):
        block = slice(m * k, (m + 1) * k)
        gram[block, block] = np.diag(np.bincount(codes[:, m], minlength=k))
        rhs[block] = group_sums(codes[:, m], x, k)
        for j in range(m + 1, num_codebooks):
            pairs = np.bincount(codes[:, m] * k + codes[:, j], minlength=k * k).reshape(k, k)
            gram[block, j * k : (j + 1) * k] = pairs
            gram[j * k : (j + 1) * k, block] = pairs.T
    return gram, rhs


def least_squares_codebooks(
    x: np.ndarray, codes: np.ndarray, previous: np.ndarray, ridge: float
) -> np.ndarray:
    """Codebooks minimising ||X - B C||^2 + lam ||C - previous||^2 for fixed codes.

    Args:
        x: (N, D) float32 rows.
        codes: (N, M) int64 codes of the rows.
        previous: (M, K, D) float32 current codebooks (the ridge's anchor).
        ridge: lam / (N / K), the ridge relative to the mean count of a codeword; > 0.

    Returns:
        (M, K, D) float32 codebooks.
    """
    num_codebooks, k, dim = previous.shape
    gram, rhs = normal_equations(x, codes, k)
    lam = ridge * len(x) / k
    gram[np.diag_indices(len(gram))] += lam
    rhs += lam * previous.reshape(num_codebooks * k, dim)
    solution = np.linalg.solve(gram, rhs)  # (M*K, D) float64
    return solution.astype(np.float32).reshape(num_codebooks, k, dim)
