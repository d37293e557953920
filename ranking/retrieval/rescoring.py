"""Re-scoring candidates by inner product, bit-reproducibly and fast.

A BLAS matmul's float32 rounding depends on the matrix shapes and on memory alignment, so
a query's inner product with an item could change in its last bits with the other
queries of a batch, the batch size or the candidate padding. The index therefore defines
the re-scoring score as

    ip(q, v) = (v * q).sum()   float32 products, numpy's pairwise float32 sum over D

which depends on q and v alone. Scoring every candidate that way costs a (C, D) product
array per query, so the scans first score the candidates with a matmul of any shape
("fast" scores) and score exactly only those within a rounding margin of their bag's k-th
best fast score:

- Both scores are within E = gamma(D + 1) * |q| * max|v| of the real inner product
  (gamma(n) = n u / (1 - n u), u = 2**-24, the float32 unit roundoff; any summation
  order, with or without fused multiply-adds), so they differ by at most 2E.
- Let t be the k-th best fast score. At least k candidates then have ip >= t - 2E, so
  the k-th best ip is >= t - 2E, and every candidate of the true top k has a fast score
  >= t - 4E. Candidates below t - 8E are dropped (a factor 2 to spare).

The kept candidates (about k, plus the few within the margin) are scored exactly and
ordered by (ip desc, row asc), so the answer equals scoring every candidate exactly.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from hir_sdk.ranking.retrieval.ordered_topk import PAD_KEY, encode_keys, ordered_topk

UNIT_ROUNDOFF = 2.0**-24
GATHER_ROWS = 4096  # candidates gathered per exact-scoring step: 1 MiB at D = 64


def exact_ip(vectors: np.ndarray, queries: np.ndarray) -> np.ndarray:
    """(L,) float32 ip(q, v) of (L, D) float32 vectors and (L, D) float32 queries."""
    return (vectors * queries).sum(axis=-1, dtype=np.float32)


def exact_ip_at(
    vectors: np.ndarray, positions: np.ndarray, queries: np.ndarray, bag: np.ndarray
) -> np.ndarray:
    """(L,) float32 `exact_ip` of rows `positions` of (N, D) `vectors` with rows `bag` of
    (B, D) `queries`, gathered `GATHER_ROWS` at a time: the same values as gathering all
    first, without (L, D) temporaries (large short-lived arrays cost a page fault per
    page each time the allocator hands their memory back to the system)."""
    out = np.empty(len(positions), dtype=np.float32)
    for first in range(0, len(positions), GATHER_ROWS):
        part = slice(first, first + GATHER_ROWS)
        rows = np.take(vectors, positions[part], axis=0)
        out[part] = exact_ip(rows, np.take(queries, bag[part], axis=0))
    return out


def rounding_gamma(dim: int) -> float:
    """gamma(D + 1): the relative bound of a float32 inner product's rounding over D
    terms (see the module docstring)."""
    terms = dim + 1
    return terms * UNIT_ROUNDOFF / (1.0 - terms * UNIT_ROUNDOFF)


def rounding_margin(queries: np.ndarray, max_norm: float) -> np.ndarray:
    """(B, 1) float64 8E per query (see the module docstring)."""
    norms = np.linalg.norm(queries.astype(np.float64), axis=1, keepdims=True)
    return 8.0 * rounding_gamma(queries.shape[1]) * norms * max_norm


def best_rescored(
    fast: np.ndarray,
    pos: np.ndarray,
    vectors: np.ndarray,
    order: np.ndarray,
    queries: np.ndarray,
    max_norm: float,
    k: int,
) -> np.ndarray:
    """(B, <= k) int64 keys (`ordered_topk`) of the best k candidates by exact ip, then row.

    Args:
        fast: (B, C) float32 fast scores of the candidates (any matmul).
        pos: (B, C) int64 the candidates' positions, -1 = no candidate (its `fast` score is
            ignored).
        vectors: (N, D) float32 embeddings by position.
        order: (N,) int64 the item row of each position (results and ties use rows).
        queries: (B, D) float32.
        max_norm: an upper bound of the candidates' L2 norms.
        k: results per bag.
    """
    flat = near_best(fast, pos >= 0, queries, max_norm, k)
    positions = np.take(pos.reshape(-1), flat)
    return exact_top(flat, fast.shape[1], positions, vectors, order, queries, k)


def near_best(
    fast: np.ndarray,
    real: np.ndarray | Callable[[], np.ndarray],
    queries: np.ndarray,
    max_norm: float,
    k: int,
    *,
    padded: bool = False,
) -> np.ndarray:
    """Flat indices into (B, C) `fast`, bag by bag, of the real candidates whose fast score
    is within the rounding margin of their bag's k-th best (all of a bag's real candidates
    when it has at most k). `real` (B, C) bool, or a function returning it, marks the
    slots that hold a candidate; `padded=True` says the other slots already hold -inf
    (then `real` is built only for bags with fewer than k candidates)."""
    num, width = fast.shape

    def real_slots() -> np.ndarray:
        return real if isinstance(real, np.ndarray) else real()

    if width > k:
        if not padded:
            fast = np.where(real_slots(), fast, np.float32(-np.inf))
        kth = np.partition(fast, width - k, axis=1)[:, width - k, None]  # (B, 1)
        keep = fast >= kth - rounding_margin(queries, max_norm)
        if np.isneginf(kth).any():  # a bag with fewer than k candidates: drop its padding
            keep &= real_slots()
    else:
        keep = real_slots()
    return np.flatnonzero(keep)


def exact_top(
    flat: np.ndarray,
    width: int,
    positions: np.ndarray,
    vectors: np.ndarray,
    order: np.ndarray,
    queries: np.ndarray,
    k: int,
) -> np.ndarray:
    """(B, <= k) keys of the best k by exact ip among the candidates at (L,) flat indices
    `flat` (sorted) of a (B, `width`) layout, held at (L,) `positions` of (N, D) `vectors`."""
    num = len(queries)
    bag = flat // width
    counts = np.bincount(bag, minlength=num)
    kept = int(counts.max()) if counts.size else 0
    first = np.cumsum(counts) - counts
    slot = bag * kept + np.arange(bag.size) - np.repeat(first, counts)
    ip = exact_ip_at(vectors, positions, queries, bag)
    keys = np.full(num * kept, PAD_KEY, dtype=np.int64)
    keys[slot] = encode_keys(ip, np.take(order, positions))
    return ordered_topk(keys.reshape(num, kept), k)
