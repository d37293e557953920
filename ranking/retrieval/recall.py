"""Neighbour recall: how many of the reference's top k (usually `exact_knn`) a search found.

For query b, with R_b the distinct valid ids (not -1) among the first k reference ids and
F_b the distinct ids among the first k retrieved ids:

    recall_b = |F_b & R_b| / |R_b|        (NaN when R_b is empty)

`neighbor_recall` averages over the queries with a non-empty R_b. Ids are matched per query
by sorting (query, id) pairs once, so there is no Python loop over queries.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, check_positive, to_numpy

PAD_ID = -1


def per_query_neighbor_recall(
    retrieved: ArrayLike, reference: ArrayLike, k: int | None = None
) -> np.ndarray:
    """(B,) float64 recall of each query's first k retrieved ids against its first k
    reference ids (k defaults to the reference width); NaN where the reference is empty.

    Args:
        retrieved: (B, k1) int ids, -1 for empty slots.
        reference: (B, k2) int ids, -1 for empty slots.
        k: cut-off applied to both; must be <= k1 and <= k2.
    """
    found, truth = to_numpy(retrieved), to_numpy(reference)
    if found.ndim != 2 or truth.ndim != 2 or found.shape[0] != truth.shape[0]:
        raise InputError(
            f"retrieved {found.shape} and reference {truth.shape} must be (B, k) with equal B"
        )
    if found.dtype.kind not in "iu" or truth.dtype.kind not in "iu":
        raise InputError(f"ids must be integers, got {found.dtype} and {truth.dtype}")
    k = truth.shape[1] if k is None else check_positive(k, "k")
    if k > truth.shape[1] or k > found.shape[1]:
        raise InputError(
            f"k ({k}) exceeds the retrieved ({found.shape[1]}) or reference "
            f"({truth.shape[1]}) width"
        )
    num = truth.shape[0]
    found, truth = found[:, :k].astype(np.int64), truth[:, :k].astype(np.int64)
    query = np.repeat(np.arange(num, dtype=np.int64), k)  # (B*k,)
    truth_set = _distinct_pairs(query, truth.reshape(-1))  # (U, 2) (query, id), sorted
    found_set = _distinct_pairs(query, found.reshape(-1))
    both = np.concatenate([truth_set, found_set])  # a pair in both sets appears twice
    order = np.lexsort((both[:, 1], both[:, 0]))
    both = both[order]
    twice = (both[1:] == both[:-1]).all(axis=1)  # (U1 + U2 - 1,)
    hits = np.bincount(both[1:, 0][twice], minlength=num)
    size = np.bincount(truth_set[:, 0], minlength=num).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(size > 0, hits / size, np.nan)


def neighbor_recall(retrieved: ArrayLike, reference: ArrayLike, k: int | None = None) -> float:
    """Mean of `per_query_neighbor_recall` over the queries whose reference is non-empty
    (NaN if there are none)."""
    values = per_query_neighbor_recall(retrieved, reference, k)
    defined = values[~np.isnan(values)]
    return float(defined.mean()) if defined.size else float("nan")


def _distinct_pairs(query: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """(U, 2) distinct (query, id) pairs with id != -1, sorted."""
    keep = ids != PAD_ID
    query, ids = query[keep], ids[keep]
    order = np.lexsort((ids, query))
    pairs = np.stack([query[order], ids[order]], axis=1)  # (n, 2)
    new = np.ones(pairs.shape[0], dtype=bool)
    new[1:] = (pairs[1:] != pairs[:-1]).any(axis=1)
    return pairs[new]
