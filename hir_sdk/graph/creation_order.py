"""`check_creation_order`: no edge is dated before one of its nodes was created.

A node exists at cutoff `t` when its `created_ts < t` (or it has none), and an edge is
visible at `t` when its `ts < t`; an edge dated before its node's `created_ts` would be
visible at cutoffs where its node does not exist yet. The views leave such a node out of
the training anchors and the snapshots, so the log's conversions on it would go missing
from the evaluation long after the data was read. `hir run`, the `Trainer` (`hir fit`)
and `run_ab` (`hir ab`) check this right after they build the graph.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.schema.dataset import NODES_FILE


def check_creation_order(graph: TemporalGraph, data: str | Path | None = None) -> None:
    """An `InputError` naming the nodes (type, id, `created_ts`, their earliest edge) when
    any edge is dated before the `created_ts` of one of its two nodes (`data`: the
    dataset folder, for the message)."""
    rows: list[str] = []
    total = 0
    for end in (graph.src, graph.dst):
        early = graph.ts < graph.created_ts[end]
        if not early.any():
            continue
        nodes, first = np.unique(end[early], return_index=True)  # edges are in time order
        total += len(nodes)
        when = graph.ts[np.flatnonzero(early)[first]]
        for node, ts in zip(nodes[:5], when[:5], strict=False):
            node_type, node_id = graph.node_id(int(node))
            rows.append(
                f"{node_type} {node_id!r}: created_ts {int(graph.created_ts[node])}, "
                f"an edge at {int(ts)}"
            )
    if total:
        raise InputError(
            "nodes whose created_ts comes after an edge of theirs: a node exists only from "
            "its created_ts, so those edges would be read before it does; set each "
            "created_ts at or before the node's first edge, or leave it null",
            file=NODES_FILE if data is None else Path(data) / NODES_FILE,
            column="created_ts",
            rows=rows,
            total=total,
        )
