"""Deterministic k-means: seeded k-means++ start, Lloyd iterations, chunked float32 distances.

Notable:
- bit-identical output for the same input, arguments and seed on one machine: the only
  randomness is a `numpy.random.Generator` built from `seed`, and the sums of rows per
  cluster are accumulated in float64 in a fixed order (`np.bincount`, one column at a time);
- k-means++ (D^2 sampling) picks the start on at most `init_rows` rows, drawn by the same
  generator, so the start costs O(init_rows * k * D) whatever N is;
- the nearest centroid minimises ||c||^2 / 2 - x.c, computed `CHUNK_ROWS` rows at a time,
  one (chunk, K) float32 block, so memory stays bounded for any N; the distance to it is
  then computed from x - c (the expanded form loses digits far from the origin);
- an empty cluster is re-seeded with the row farthest from its centroid (ties: the lower
  row index), the next empty cluster with the next farthest row, and so on;
- Lloyd stops early when no label changes; the labels returned always belong to the
  centroids returned.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

CHUNK_ROWS = 16_384  # rows per (chunk, K) distance block: 16 MiB at K = 256
INIT_ROWS_PER_CLUSTER = 64  # k-means++ sees at most k * this many rows


@dataclass(frozen=True, eq=False)
class KMeans:
    """A k-means result.

    Attributes:
        centroids: (K, D) float32 cluster centres.
        labels: (N,) int64 index of each row's nearest centroid.
        inertia: sum of squared distances of the rows to their centroids.
        iterations: Lloyd iterations run (fewer than asked when the labels settled).
    """

    centroids: np.ndarray
    labels: np.ndarray
    inertia: float
    iterations: int


def nearest(
    x: np.ndarray, centroids: np.ndarray, *, chunk_rows: int = CHUNK_ROWS
) -> tuple[np.ndarray, np.ndarray]:
    """Nearest centroid of every row.

    Args:
        x: (N, D) float32 rows.
        centroids: (K, D) float32 centroids.
        chunk_rows: rows per distance block.

    Returns:
        `(labels, distances)`: (N,) int64 index of the nearest centroid (the lowest index
        on ties) and (N,) float32 squared distance to it, computed from the difference.
    """
    n = len(x)
    labels = np.empty(n, dtype=np.int64)
    distances = np.empty(n, dtype=np.float32)
    half_norms = 0.5 * np.einsum("kd,kd->k", centroids, centroids)  # (K,)
    for start in range(0, n, chunk_rows):
        rows = x[start : start + chunk_rows]  # (n_c, D)
        scores = half_norms - rows @ centroids.T  # (n_c, K): (||c||^2 - 2 x.c) / 2
        best = scores.argmin(axis=1)  # (n_c,)
        labels[start : start + len(rows)] = best
        diff = rows - centroids[best]  # (n_c, D): exact, no cancellation far from 0
        distances[start : start + len(rows)] = np.einsum("nd,nd->n", diff, diff)
    return labels, distances


def group_sums(labels: np.ndarray, values: np.ndarray, k: int) -> np.ndarray:
    """(k, D) float64 sums of the rows of `values` (N, D) that carry each label in [0, k)."""
    sums = np.empty((k, values.shape[1]), dtype=np.float64)
    for column in range(values.shape[1]):
        sums[:, column] = np.bincount(labels, weights=values[:, column], minlength=k)
    return sums


def kmeans_plus_plus(x: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """(k, D) float32 starting centroids drawn from the rows of `x` by D^2 sampling.

    Rows already chosen have distance 0, so they are never drawn again while another row
    is farther; when every row coincides with a chosen one, a uniform row is taken.
    """
    n = len(x)
    chosen = np.empty(k, dtype=np.int64)
    chosen[0] = rng.integers(n)
    diff = x - x[chosen[0]]  # (n, D)
    d2 = np.einsum("nd,nd->n", diff, diff).astype(np.float64)  # (n,)
    for i in range(1, k):
        cumulative = np.cumsum(d2)  # (n,)
        total = cumulative[-1]
        if total > 0:
            pick = int(np.searchsorted(cumulative, rng.random() * total, side="right"))
            pick = min(pick, n - 1)
        else:
            pick = int(rng.integers(n))
        chosen[i] = pick
        diff = x - x[pick]  # (n, D)
        np.minimum(d2, np.einsum("nd,nd->n", diff, diff), out=d2)
    return x[chosen].copy()


def kmeans(
    x: np.ndarray,
    k: int,
    *,
    iterations: int = 20,
    seed: int | np.random.SeedSequence = 0,
    init_rows: int | None = None,
) -> KMeans:
    """Cluster the rows of `x` into `k` groups, deterministically in (`x`, `k`, `seed`).

    Args:
        x: (N, D) float32 rows, N >= k, all finite (the caller checks).
        k: number of clusters.
        iterations: most Lloyd iterations.
        seed: seeds the k-means++ start (an int or a `numpy.random.SeedSequence`).
        init_rows: rows the k-means++ start looks at (default `64 * k`).

    Returns:
        The centroids, labels and inertia.
    """
    x = np.ascontiguousarray(x, dtype=np.float32)  # (N, D)
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"k-means needs 1 <= k <= N, got k={k} for N={n}")
    rng = np.random.default_rng(seed)
    budget = init_rows if init_rows is not None else INIT_ROWS_PER_CLUSTER * k
    sample = x if n <= budget else x[np.sort(rng.choice(n, size=budget, replace=False))]
    centroids = kmeans_plus_plus(sample, k, rng)  # (K, D)
    labels, distances = nearest(x, centroids)
    done = 0
    while done < iterations:
        done += 1
        centroids = _update(x, labels, distances, k)
        previous = labels
        labels, distances = nearest(x, centroids)
        if np.array_equal(labels, previous):
            break
    return KMeans(centroids, labels, float(distances.sum(dtype=np.float64)), done)


def _update(x: np.ndarray, labels: np.ndarray, distances: np.ndarray, k: int) -> np.ndarray:
    """Lloyd's centroid step; empty clusters take the rows farthest from their centroid."""
    counts = np.bincount(labels, minlength=k)  # (K,)
    centroids = (group_sums(labels, x, k) / np.maximum(counts, 1)[:, None]).astype(np.float32)
    empty = np.flatnonzero(counts == 0)
    if len(empty):
        farthest = np.argsort(-distances, kind="stable")[: len(empty)]
        centroids[empty] = x[farthest]
    return centroids
