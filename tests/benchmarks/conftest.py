"""The benchmarks' peers under test: `benchmarks/` on the import path (the scripts import
`peers.*` and `publish` as top-level modules), and a small log shaped like MovieLens in
the input format, ratings as exposures and likes as conversions one second later."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.graph import TemporalGraph
from hir_sdk.schema import DatasetManifest, EdgeTypeSpec, TimeSplits
from tests.conftest import DAY, T0
from tests.hand_graph import hand_graph

BENCHMARKS = Path(__file__).parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

USERS, ADS = 40, 60
RATE, LIKE = 0, 1  # edge type codes


def ratings_manifest() -> DatasetManifest:
    """user -rate-> ad (exposure), user -like-> ad (conversion); train [day 0, 6),
    validation [6, 8), test [8, 10); a one-hour attribution window."""
    return DatasetManifest(
        name="ratings",
        node_types=("user", "ad"),
        edge_types=(
            EdgeTypeSpec("user", "rate", "ad", "exposure", 30.0),
            EdgeTypeSpec("user", "like", "ad", "conversion", 30.0),
        ),
        time=TimeSplits(T0, T0 + 6 * DAY, T0 + 8 * DAY, T0 + 10 * DAY),
        attribution_window_days=1 / 24,
    )


def ratings_graph(seed: int = 0) -> TemporalGraph:
    """Each user rates about a third of the movies once each, from their own first day
    on (one in eight first arrives in the validation window, one in eight in the test
    window, with no history before it); two movies in three are liked, each a second
    after its rating."""
    rng = np.random.default_rng(seed)
    edges = []
    for user in range(USERS):
        first = T0 + {0: 6 * DAY, 4: 8 * DAY}.get(user % 8, 0) + int(rng.integers(0, DAY))
        for ad in rng.choice(ADS, size=ADS // 3, replace=False):
            ts = int(rng.integers(first, T0 + 10 * DAY - 2))
            edges.append((user, USERS + int(ad), RATE, ts))
            if rng.random() < 2 / 3:
                edges.append((user, USERS + int(ad), LIKE, ts + 1))
    return hand_graph(ratings_manifest(), [USERS, ADS], edges)


def scrambled_after(graph, cutoff: int, seed: int = 0):
    """`graph` with the endpoints and types of its edges at or after `cutoff` shuffled
    (their times kept): what a leak would read differs, nothing before it does."""
    k = graph.edges_before(cutoff)
    rng = np.random.default_rng(seed)
    src, dst, etype = graph.src.copy(), graph.dst.copy(), graph.etype.copy()
    for a in (src, dst, etype):
        a[k:] = a[k:][rng.permutation(len(a) - k)]
    return dataclasses.replace(graph, src=src, dst=dst, etype=etype)


@pytest.fixture(scope="module")
def graph() -> TemporalGraph:
    return ratings_graph()
