"""Valid (anchor, cutoff) pairs for the sampling tests."""

from __future__ import annotations

import numpy as np


def valid_anchors(graph, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Random anchors of any type, each with a cutoff after its creation time."""
    rng = np.random.default_rng(seed)
    t = graph.manifest.time
    nodes = rng.integers(0, graph.num_nodes, count * 3)
    cutoffs = rng.integers(t.start + 86_400, t.end, count * 3)
    alive = graph.created_ts[nodes] < cutoffs
    return nodes[alive][:count], cutoffs[alive][:count]
