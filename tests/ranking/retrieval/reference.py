"""A naive pure-Python inverted index: the readable reference the fast one must equal.

Dicts of token -> rows, a loop per candidate. Arithmetic mirrors the documented float32
rules: w_t * g(t) is a float32 product and an item's overlap adds its shared tokens in
codebook order. g(t) is taken from the index under test (its formula is tested on its own).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np


def reference_search(
    codes: np.ndarray,
    codebook_size: int,
    token_weights: np.ndarray,
    bag: dict[int, float],
    k: int,
    *,
    embeddings: np.ndarray | None = None,
    query: np.ndarray | None = None,
    num_candidates: int | None = None,
    gather_codebooks: int | None = None,
) -> list[tuple[int, float]]:
    """Best k (row, score) pairs for one bag: overlap, or inner product after re-scoring."""
    num, levels = codes.shape
    gather = levels if gather_codebooks is None else gather_codebooks
    postings: dict[int, list[int]] = defaultdict(list)
    for row in range(num):
        for m in range(levels):
            postings[m * codebook_size + int(codes[row, m])].append(row)
    candidates: set[int] = set()
    for token, weight in bag.items():
        if weight > 0 and token // codebook_size < gather:
            candidates.update(postings[token])
    overlap = {}
    for row in candidates:
        total = np.float32(0.0)
        for m in range(levels):
            token = m * codebook_size + int(codes[row, m])
            if bag.get(token, 0.0) > 0:
                total = np.float32(total + np.float32(bag[token]) * token_weights[token])
        overlap[row] = total
    ranked = sorted(candidates, key=lambda row: (-overlap[row], row))
    if query is None:
        return [(row, float(overlap[row])) for row in ranked[:k]]
    assert embeddings is not None
    if num_candidates is not None:
        ranked = ranked[:num_candidates]
    ip = {row: float(np.dot(embeddings[row].astype(np.float64), query)) for row in ranked}
    return [(row, ip[row]) for row in sorted(ranked, key=lambda row: (-ip[row], row))[:k]]


def reference_exact(queries: np.ndarray, items: np.ndarray, k: int) -> np.ndarray:
    """(B, min(k, N)) rows by numpy's stable argsort of -inner product (ties: lower row)."""
    scores = queries.astype(np.float64) @ items.astype(np.float64).T  # (B, N)
    return np.argsort(-scores, axis=1, kind="stable")[:, :k]


def grid_data(
    rng: np.random.Generator, num: int, levels: int, size: int, dim: int
) -> tuple[np.ndarray, np.ndarray]:
    """(num, levels) codes and (num, dim) embeddings on a half-integer grid: every inner
    product is exact in float32 whatever the summation order, and ties are common."""
    codes = rng.integers(0, size, (num, levels))
    embeddings = (rng.integers(-3, 4, (num, dim)) / 2).astype(np.float32)
    return codes, embeddings
