"""The stage-1 cache: computes each (user, snapshot) once, returns what it stored."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.sequence import UserEmbeddingCache, snapshot_time


def _embed(calls):
    def embed(users, as_of):
        calls.append(len(users))
        return np.stack([users * 1.0, as_of / 1000.0], axis=1)

    return embed


def test_refresh_computes_missing_pairs_once_and_get_returns_them():
    calls: list[int] = []
    cache = UserEmbeddingCache(2)
    users = np.array([5, 3, 5, 9, 3])
    as_of = np.array([1000, 1000, 1000, 2000, 2000])
    assert cache.refresh(_embed(calls), users, as_of, batch_size=2) == 4
    assert calls == [2, 2] and len(cache) == 4 and cache.snapshots == [1000, 2000]
    assert cache.refresh(_embed(calls), users, as_of) == 0  # all cached
    np.testing.assert_array_equal(
        cache.get(np.array([9, 5, 3]), np.array([2000, 1000, 2000])),
        [[9.0, 2.0], [5.0, 1.0], [3.0, 2.0]],
    )
    with pytest.raises(KeyError, match="user 9 at snapshot 1000"):
        cache.get(np.array([9]), np.array([1000]))


def test_cost_order_changes_batches_not_values():
    plain, ordered = UserEmbeddingCache(2), UserEmbeddingCache(2)
    users, as_of = np.arange(10), np.full(10, 500)
    plain.refresh(_embed([]), users, as_of, batch_size=3)
    ordered.refresh(_embed([]), users, as_of, batch_size=3, cost=lambda u, t: -u)
    np.testing.assert_array_equal(plain.get(users, as_of), ordered.get(users, as_of))


def test_snapshot_time_is_the_start_of_the_refresh_period():
    np.testing.assert_array_equal(
        snapshot_time(np.array([0, 86_399, 86_400, 200_000]), 86_400), [0, 0, 86_400, 172_800]
    )
