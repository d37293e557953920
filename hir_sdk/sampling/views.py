"""Teacher and student views of a batch of anchors at their cutoffs.

The teacher view is broad (more hops, larger fan-out), the student view narrow; the
student's nodes are always a subset of the teacher's (the student is sampled with the
same counter-based keys, then restricted to the teacher's nodes).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import torch

from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.adjacency import VisibleAdjacency
from hir_sdk.sampling.config import SamplerConfig, ViewConfig
from hir_sdk.sampling.importance import sample_importance
from hir_sdk.sampling.random_walk import sample_random_walks
from hir_sdk.sampling.subgraphs import Subgraphs, assemble
from hir_sdk.sampling.uniform import sample_uniform

MIN_PART = 128  # anchors: below it a thread's share is not worth the hand-over


@dataclass(frozen=True)
class Views:
    teacher: Subgraphs
    student: Subgraphs


class ViewSampler:
    """Samples views for batches of (anchor, cutoff) pairs on one graph.

    `threads` (default: torch's thread count at each call, which the loader's worker
    processes set to 1) splits a large batch into contiguous parts sampled at once on a
    thread pool (numpy releases the GIL in its array loops), each pool thread running
    torch's sorts on one thread; a view depends only on its anchor and cutoff, so the
    result is the same for any split. Unfiltered uniform views, which list no candidate
    edges, are not split.
    """

    def __init__(
        self, graph: TemporalGraph, config: SamplerConfig | None = None, threads: int | None = None
    ) -> None:
        self.graph = graph
        self.config = config or SamplerConfig()
        self.adjacency = VisibleAdjacency(graph)
        self.threads = threads

    def _edge_types(self, view: ViewConfig) -> np.ndarray | None:
        if view.edge_types is None:
            return None
        return self.graph.edge_type_codes(list(view.edge_types))

    def sample(self, anchors: np.ndarray, cutoffs: np.ndarray, view: ViewConfig) -> Subgraphs:
        """One view of each `(anchors[b], cutoffs[b])`: nothing at or after the cutoff."""
        anchors = np.asarray(anchors, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        if anchors.shape != cutoffs.shape or anchors.ndim != 1:
            raise ValueError("anchors and cutoffs must be 1-D arrays of one length")
        born = self.graph.created_ts[anchors]
        late = born >= cutoffs
        if late.any():
            i = int(np.flatnonzero(late)[0])
            raise InputError(
                f"anchor {self.graph.node_id(int(anchors[i]))} is created at "
                f"{int(born[i])}, not before its cutoff {int(cutoffs[i])}"
            )
        fn = {
            "importance": sample_importance,
            "rwr": sample_random_walks,
            "uniform": sample_uniform,
        }[view.strategy]
        edge_types = self._edge_types(view)
        threads = min(self.threads or torch.get_num_threads(), len(anchors) // MIN_PART)
        if view.strategy == "uniform" and view.edge_types is None:
            # no candidates listed: too little work per anchor for the threads to gain
            # more than their hand-overs of the GIL cost (benchmarks/results/sampling.md)
            threads = 1
        if threads <= 1:
            return fn(self.adjacency, anchors, cutoffs, view, self.config.seed, edge_types)
        bounds = np.linspace(0, len(anchors), threads + 1).astype(np.int64)

        def part(i: int) -> Subgraphs:
            rows = slice(bounds[i], bounds[i + 1])
            if torch.backends.openmp.is_available():  # OpenMP: a count per thread
                torch.set_num_threads(1)  # this pool thread's sorts: the split is the
                # parallelism; two threads each forking a team would oversubscribe the cores
            return fn(
                self.adjacency, anchors[rows], cutoffs[rows], view, self.config.seed, edge_types
            )

        self.adjacency.directions(view.direction)  # built once, before the threads
        with ThreadPoolExecutor(threads) as pool:
            return Subgraphs.concat(list(pool.map(part, range(threads))))

    def views(self, anchors: np.ndarray, cutoffs: np.ndarray) -> Views:
        teacher = self.sample(anchors, cutoffs, self.config.teacher)
        student = restrict(self.graph, self.sample(anchors, cutoffs, self.config.student), teacher)
        return Views(teacher=teacher, student=student)


def restrict(graph: TemporalGraph, inner: Subgraphs, outer: Subgraphs) -> Subgraphs:
    """`inner` without the nodes (and their edges) that `outer` lacks, order kept."""
    n = graph.num_nodes
    slot_in = np.repeat(np.arange(inner.batch_size), inner.sizes())
    slot_out = np.repeat(np.arange(outer.batch_size), outer.sizes())
    keep = np.isin(slot_in * n + inner.nodes, slot_out * n + outer.nodes)
    rank = np.arange(len(inner.nodes), dtype=np.float64)
    edge_slot = np.repeat(np.arange(inner.batch_size), np.diff(inner.edge_offsets))
    return assemble(
        graph,
        inner.anchors,
        inner.cutoffs,
        slot_in[keep],
        inner.nodes[keep],
        rank[keep],
        edge_slot,
        inner.edge_id,
        max(int(inner.sizes().max(initial=1)), 1),
    )
