"""Configuration of sampled views: how far, how wide, which edges, which strategy."""

from __future__ import annotations

from dataclasses import dataclass, field

STRATEGIES = ("importance", "rwr", "uniform")
# the loader's orders of an epoch's anchors (sampling.loader.AnchorSchedule)
ANCHOR_ORDERS = ("time", "spread")
DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True)
class ViewConfig:
    """One view of an anchor's temporal neighbourhood.

    importance: per hop, each frontier node keeps `fanout[h]` of its visible edges, drawn
    without replacement with probability proportional to the time-decayed edge weight.
    rwr: `walks` random walks of `walk_length` steps with restart probability `restart`,
    each step weighted by decayed weight; the most visited nodes form the view.
    uniform: per hop, each newly reached node keeps `fanout[h]` of its visible edges drawn
    uniformly without replacement (the rule of PyG's temporal `NeighborLoader`).
    All look only at each node's `max_candidates` most recent edges before the cutoff.
    """

    strategy: str = "importance"
    fanout: tuple[int, ...] = (16, 8)
    max_nodes: int = 128
    direction: str = "both"
    edge_types: tuple[str, ...] | None = None  # relation names (or None: all)
    max_candidates: int = 64
    walks: int = 32
    walk_length: int = 6
    restart: float = 0.3

    def __post_init__(self) -> None:
        if self.strategy not in STRATEGIES:
            raise ValueError(f"strategy must be one of {STRATEGIES}, got {self.strategy!r}")
        if self.direction not in DIRECTIONS:
            raise ValueError(f"direction must be one of {DIRECTIONS}, got {self.direction!r}")
        if not self.fanout or min(self.fanout) < 1:
            raise ValueError("fanout needs at least one hop, each >= 1")
        if self.max_nodes < 1 or self.max_candidates < 1:
            raise ValueError("max_nodes and max_candidates must be >= 1")
        if self.walks < 1 or self.walk_length < 1 or not 0 <= self.restart < 1:
            raise ValueError("need walks >= 1, walk_length >= 1, 0 <= restart < 1")

    @property
    def hops(self) -> int:
        return len(self.fanout)


@dataclass(frozen=True)
class SamplerConfig:
    """A broad teacher view and a narrow student view (the student's nodes are always a
    subset of the teacher's)."""

    teacher: ViewConfig = field(default_factory=lambda: ViewConfig(fanout=(16, 8), max_nodes=96))
    student: ViewConfig = field(default_factory=lambda: ViewConfig(fanout=(8,), max_nodes=24))
    seed: int = 0

    def __post_init__(self) -> None:
        if self.student.max_nodes > self.teacher.max_nodes:
            raise ValueError("the student view cannot be larger than the teacher view")
