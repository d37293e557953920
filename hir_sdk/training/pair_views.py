"""The engagement pairs of a training step, and their views built ahead by the loader.

Every step scores engagement on quadruples (source, destination, random negative, hard
negative) that `EngagementSampler.sample(pairs, seed, step)` draws as a pure function of
the step; each rank takes its share of them. All four are embedded from their student
views as of the edge's time. `StepPairViews` hands the loader what it needs to build
those views with the step's batch (`make_loader(extra=...)`), so the training process
only runs the model on them; the views are the same wherever they are built, and
validation, which has no loader, builds its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.sampling.config import ViewConfig
from hir_sdk.training.objectives import EngagementSample, EngagementSampler


@dataclass(frozen=True)
class PairDraw:
    """One step's draw and this rank's share of it: views of `nodes` at `cutoffs`."""

    sample: EngagementSample
    mine: slice  # this rank's pairs
    parts: tuple[np.ndarray, ...]  # this rank's src, dst, random_neg, hard_neg

    @property
    def count(self) -> int:
        return len(self.parts[0])

    @property
    def nodes(self) -> np.ndarray:
        return np.concatenate(self.parts)

    @property
    def cutoffs(self) -> np.ndarray:
        return np.tile(self.sample.ts[self.mine], len(self.parts))


def draw_pairs(
    sampler: EngagementSampler, pairs: int, seed: int, step: int, rank: int, world_size: int
) -> PairDraw:
    """Step `step`'s `pairs` draws, rows `rank::world_size` of them kept."""
    s = sampler.sample(pairs, seed, step)
    mine = slice(rank, None, world_size)
    return PairDraw(s, mine, tuple(a[mine] for a in (s.src, s.dst, s.random_neg, s.hard_neg)))


@dataclass(frozen=True)
class StepPairViews:
    """The loader's `extra`: step -> (nodes, cutoffs, view) of its engagement pairs."""

    sampler: EngagementSampler
    pairs: int
    seed: int
    rank: int
    world_size: int
    view: ViewConfig

    def __call__(self, step: int) -> tuple[np.ndarray, np.ndarray, ViewConfig]:
        d = draw_pairs(self.sampler, self.pairs, self.seed, step, self.rank, self.world_size)
        return d.nodes, d.cutoffs, self.view
