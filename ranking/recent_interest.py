"""Multi-interest similarity: how close the candidate ad is to the ads the user recently
engaged with, in HIR embedding space, as of the request.

One user vector (`hir_cos`) averages a user's interests into one point; a user with three
interests sits between them, near none. Comparing the candidate with each of the user's
recent ads keeps the interests apart: the best match (`max`) says whether the candidate
falls in any of them, the mean how central it is to the recent history.

For an example `(user, ad, t)` the history is the user's last `last` events of each role
with `ts < t` (`EventHistory.window`), and every embedding, the candidate's and the history ads',
is read as of `t` (`HirLookup`: the latest snapshot with `as_of <= t` that holds the
node), so nothing after the request is used.

Columns, per role:

    hir_recent_{role}_max    the largest cosine between the candidate and a recent ad
    hir_recent_{role}_mean   the mean cosine over the recent ads found in a snapshot
NaN when the candidate is not in a snapshot or no recent ad is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.sequence.history import EventHistory

ROLES = ("click", "exposure")
CHUNK = 8_192  # examples per block: the block's history embeddings are CHUNK x last x D


class RecentInterest:
    """Max / mean cosine between a candidate ad and the user's last `last` ads per role."""

    def __init__(
        self,
        graph: TemporalGraph,
        lookup: HirLookup,
        *,
        roles: Sequence[str] = ROLES,
        last: int = 20,
        histories: Mapping[str, EventHistory] | None = None,
    ) -> None:
        if last < 1:
            raise ValueError(f"RecentInterest: last must be >= 1, got {last}")
        self.lookup = lookup
        self.roles = tuple(roles)
        self.last = last
        given = histories or {}  # a role's history another feature already built
        self._history = {
            role: given[role] if role in given else EventHistory(graph, roles=(role,))
            for role in self.roles
        }

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature columns for examples (global user and ad indices, request times)."""
        user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
        columns = {
            f"hir_recent_{role}_{stat}": np.full(len(ad), np.nan)
            for role in self.roles
            for stat in ("max", "mean")
        }
        for lo in range(0, len(ad), CHUNK):
            block = slice(lo, lo + CHUNK)
            candidate = self.lookup.lookup(ad[block], t[block])
            for role in self.roles:
                best, mean = self._similarity(role, user[block], t[block], candidate.z)
                gone = ~candidate.found
                best[gone], mean[gone] = np.nan, np.nan
                columns[f"hir_recent_{role}_max"][block] = best
                columns[f"hir_recent_{role}_mean"][block] = mean
        return pl.DataFrame(columns)

    def _similarity(
        self, role: str, user: np.ndarray, t: np.ndarray, z: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        past = self._history[role].window(user, t, self.last).item  # -1 on padding
        rows = self.lookup.lookup(past, np.broadcast_to(t[:, None], past.shape))
        have = rows.found
        sims = np.einsum("nkd,nd->nk", rows.z, z, dtype=np.float64)
        count = have.sum(axis=1)
        some = count > 0
        best = np.where(have, sims, -np.inf).max(axis=1, initial=-np.inf)
        best = np.where(some, best, np.nan)
        mean = np.where(some, (sims * have).sum(axis=1) / np.maximum(count, 1), np.nan)
        return best, mean
