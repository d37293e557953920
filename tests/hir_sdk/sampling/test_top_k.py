"""The importance sampler's per-group top-k: the k smallest finite keys of each group,
ties broken by position, against a plain per-group sort."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.sampling.importance import _top_k


def _reference(key: np.ndarray, ptr: np.ndarray, k: int) -> list[int]:
    chosen = []
    for lo, hi in zip(ptr[:-1], ptr[1:], strict=True):
        rows = [i for i in range(lo, hi) if np.isfinite(key[i])]
        chosen += sorted(rows, key=lambda i: (key[i], i))[:k]
    return sorted(chosen)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("k", [1, 3, 8])
def test_top_k_matches_a_sort_of_each_group(ties, k):
    rng = np.random.default_rng(k + 10 * ties)
    counts = rng.integers(0, 20, 300)
    ptr = np.concatenate([[0], np.cumsum(counts)])
    # with ties: few distinct values, so the k-th smallest often ties across the cut
    key = rng.integers(0, 4, ptr[-1]).astype(np.float64) if ties else rng.random(ptr[-1])
    key[rng.random(ptr[-1]) < 0.2] = np.inf  # zero-weight edges: never chosen
    got = np.sort(_top_k(key, ptr, k))
    assert got.tolist() == _reference(key, ptr, k)
