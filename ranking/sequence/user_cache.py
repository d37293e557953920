"""The stage-1 cache: user embeddings keyed by (user, snapshot time), refreshed in batch.

The offline user model runs at refresh times (`snapshot_time`: the start of each refresh
period), over each user's history strictly before that time; the online ranker reads the
embedding of the latest refresh at or before its request time. Because stage 1 never sees
the candidate, one cached row serves every candidate of every request in the period.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np


def snapshot_time(t: np.ndarray, refresh_s: int) -> np.ndarray:
    """The refresh a request at time `t` reads: the start of its refresh period (<= t)."""
    return (np.asarray(t, dtype=np.int64) // refresh_s) * refresh_s


class UserEmbeddingCache:
    """Rows per snapshot time: sorted user indices and their (n, dim) embeddings."""

    def __init__(self, dim: int) -> None:
        self.dim = dim
        self._users: dict[int, np.ndarray] = {}
        self._rows: dict[int, np.ndarray] = {}

    def __len__(self) -> int:
        return sum(len(u) for u in self._users.values())

    @property
    def snapshots(self) -> list[int]:
        return sorted(self._users)

    def refresh(
        self,
        embed: Callable[[np.ndarray, np.ndarray], np.ndarray],
        users: np.ndarray,
        as_of: np.ndarray,
        *,
        batch_size: int = 512,
        cost: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
    ) -> int:
        """Compute and store the (user, as_of) pairs not cached yet with `embed(users,
        as_of) -> (n, dim)`, in batches; returns how many were computed. With `cost(users,
        as_of)` (e.g. history lengths) pairs are batched in order of cost, so each batch
        holds histories of similar length."""
        users = np.asarray(users, dtype=np.int64)
        as_of = np.broadcast_to(np.asarray(as_of, dtype=np.int64), users.shape)
        pairs = np.unique(np.stack([as_of, users], axis=1), axis=0)
        todo = pairs[~self.contains(pairs[:, 1], pairs[:, 0])]
        if cost is not None:
            todo = todo[np.argsort(cost(todo[:, 1], todo[:, 0]), kind="stable")]
        for start in range(0, len(todo), batch_size):
            chunk = todo[start : start + batch_size]
            self._store(chunk[:, 1], chunk[:, 0], embed(chunk[:, 1], chunk[:, 0]))
        return len(todo)

    def _store(self, users: np.ndarray, as_of: np.ndarray, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.float32).reshape(len(users), self.dim)
        for t in np.unique(as_of):
            mine = as_of == t
            u = np.concatenate([self._users.get(int(t), np.zeros(0, np.int64)), users[mine]])
            r = np.concatenate(
                [self._rows.get(int(t), np.zeros((0, self.dim), np.float32)), rows[mine]]
            )
            order = np.argsort(u, kind="stable")
            self._users[int(t)], self._rows[int(t)] = u[order], r[order]

    def _slots(self, users: np.ndarray, as_of: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, slot) of each query within its snapshot's sorted users."""
        found = np.zeros(len(users), dtype=bool)
        slot = np.zeros(len(users), dtype=np.int64)
        for t in np.unique(as_of):
            mine = np.flatnonzero(as_of == t)
            cached = self._users.get(int(t))
            if cached is None or len(cached) == 0:
                continue
            s = np.minimum(np.searchsorted(cached, users[mine]), len(cached) - 1)
            found[mine] = cached[s] == users[mine]
            slot[mine] = s
        return found, slot

    def contains(self, users: np.ndarray, as_of: np.ndarray) -> np.ndarray:
        users = np.asarray(users, dtype=np.int64)
        as_of = np.broadcast_to(np.asarray(as_of, dtype=np.int64), users.shape)
        return self._slots(users, as_of)[0]

    def get(self, users: np.ndarray, as_of: np.ndarray) -> np.ndarray:
        """(n, dim) cached embeddings; KeyError when a pair was never refreshed."""
        users = np.asarray(users, dtype=np.int64)
        as_of = np.broadcast_to(np.asarray(as_of, dtype=np.int64), users.shape)
        found, slot = self._slots(users, as_of)
        if not found.all():
            i = int(np.flatnonzero(~found)[0])
            raise KeyError(f"user {int(users[i])} at snapshot {int(as_of[i])} is not cached")
        out = np.zeros((len(users), self.dim), dtype=np.float32)
        for t in np.unique(as_of):
            mine = as_of == t
            out[mine] = self._rows[int(t)][slot[mine]]
        return out
