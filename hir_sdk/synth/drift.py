"""Interest drift over time (`SynthConfig.interest_drift`): users' interests move.

On each day of the world, with probability `interest_drift`, one of a user's used slots
(uniformly) moves to a related leaf of the slot's latest leaf: a sibling in the same mid
70% of the time, otherwise another leaf of the same super-interest. A slot's first move
starts from the leaf it slowly drifts towards (`Users.leaf_end`, the slot's only leaf
when it does not drift). From a move on, the slot holds the moved leaf until its next
move; impressions (targeting) and the funnel (match level) read the leaves held at the
impression's time. Moves come from their own random stream and nothing is drawn when
`interest_drift` is 0, so that world is the one without drift.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.schema.manifest import DAY
from hir_sdk.synth.config import SynthConfig
from hir_sdk.synth.population import SLOTS, Users, related_leaf

_TS_SHIFT = np.int64(1) << np.int64(34)  # (user * SLOTS + slot) * 2**34 + ts stays < 2**63


@dataclass(frozen=True)
class InterestMoves:
    """Every move, sorted by user, slot and time."""

    user: np.ndarray
    slot: np.ndarray
    ts: np.ndarray
    leaf_from: np.ndarray
    leaf_to: np.ndarray

    def __len__(self) -> int:
        return len(self.ts)


def make_moves(rng: np.random.Generator, cfg: SynthConfig, users: Users) -> InterestMoves:
    """The users' interest moves over the world's days (none when the drift is 0)."""
    n = len(users.created)
    if cfg.interest_drift == 0.0:
        empty = np.zeros(0, dtype=np.int64)
        return InterestMoves(empty, empty, empty, empty, empty)
    user, day = np.nonzero(rng.random((n, cfg.days)) < cfg.interest_drift)  # by user, day
    ts = cfg.start + day * DAY + rng.integers(0, DAY, len(user))
    used = (users.weight > 0).sum(axis=1)  # the used slots are the first ones
    slot = (rng.random(len(user)) * used[user]).astype(np.int64)
    first = np.searchsorted(user, user, side="left")
    rank = np.arange(len(user)) - first
    held = users.leaf_end.copy()
    leaf_from = np.empty(len(user), dtype=np.int64)
    leaf_to = np.empty(len(user), dtype=np.int64)
    for r in range(int(rank.max(initial=-1)) + 1):  # one move per user at a time
        rows = np.flatnonzero(rank == r)
        u, s = user[rows], slot[rows]
        leaf_from[rows] = held[u, s]
        leaf_to[rows] = held[u, s] = related_leaf(rng, held[u, s])
    order = np.lexsort((ts, slot, user))
    return InterestMoves(
        user=user[order].astype(np.int64),
        slot=slot[order],
        ts=ts[order].astype(np.int64),
        leaf_from=leaf_from[order],
        leaf_to=leaf_to[order],
    )


def apply_moves(
    moves: InterestMoves, user: np.ndarray, ts: np.ndarray, leaves: np.ndarray
) -> np.ndarray:
    """(n, SLOTS) leaves held at `ts` by `user`: the latest move of each slot before
    `ts`, else `leaves` (the slot's leaf without drift moves)."""
    if len(moves) == 0:
        return leaves
    keys = (moves.user * SLOTS + moves.slot) * _TS_SHIFT + moves.ts
    out = leaves.copy()
    for s in range(SLOTS):
        owner = user * SLOTS + s
        at = np.searchsorted(keys, owner * _TS_SHIFT + ts, side="left") - 1
        safe = np.maximum(at, 0)
        moved = (at >= 0) & (moves.user[safe] * SLOTS + moves.slot[safe] == owner)
        out[moved, s] = moves.leaf_to[safe[moved]]
    return out
