"""Build a `TemporalGraph` from a validated `Dataset`: vectorised, no per-edge Python."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.graph.temporal_graph import UNKNOWN_TIME, TemporalGraph
from hir_sdk.schema.dataset import Dataset, load_dataset
from hir_sdk.schema.tables import node_feature_columns, type_offsets


def _csr(owner: pl.Series, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR pointers and edge ids grouped by `owner`, each group in edge-id (time) order.

    The edges form a sparse (nodes x edges) matrix with one entry per edge, at (owner,
    edge id); scipy's conversion of it to CSR is a counting sort in C, which keeps each
    row's edge ids ascending and releases the GIL, so the two directions build at once.
    It takes well under the time of a stable sort of the owners.
    """
    from scipy import sparse  # here: importing the graph package must stay light

    count = len(owner)
    matrix = sparse.csr_array(
        (np.ones(count, dtype=np.int8), (owner.to_numpy(), np.arange(count, dtype=np.int64))),
        shape=(num_nodes, count),
    )
    if not matrix.has_sorted_indices:  # the conversion sorts them; a release might not
        matrix.sort_indices()
    return matrix.indptr.astype(np.int64, copy=False), matrix.indices.astype(np.int64, copy=False)


def _node_ids(nodes: pl.DataFrame, offsets: np.ndarray) -> tuple[np.ndarray, ...]:
    ids = nodes["node_id"]
    out = []
    for lo, hi in zip(offsets[:-1].tolist(), offsets[1:].tolist(), strict=True):
        chunk = ids.slice(lo, hi - lo)
        out.append(
            chunk.to_numpy().astype(str)
            if chunk.dtype == pl.String
            else chunk.to_numpy().astype(np.int64)
        )
    return tuple(out)


def _attributes(nodes: pl.DataFrame, columns: list[str]) -> np.ndarray | None:
    """(N, A) float64 of the numeric node columns in node-index order, NaN for nulls."""
    if not columns:
        return None
    table = nodes.select(pl.col(columns).cast(pl.Float64).fill_null(float("nan")))
    return np.ascontiguousarray(table.to_numpy())


def build_graph(dataset: Dataset) -> TemporalGraph:
    """Index the dataset's nodes and edges into CSR adjacency in both directions."""
    nodes, edges = dataset.nodes, dataset.edges
    num_types = len(dataset.manifest.node_types)
    offsets = type_offsets(nodes, num_types)
    num_nodes = int(offsets[-1])
    with ThreadPoolExecutor(max_workers=1) as pool:  # the conversion releases the GIL
        out_csr = pool.submit(_csr, edges["src"], num_nodes)
        in_ptr, in_eid = _csr(edges["dst"], num_nodes)
        out_ptr, out_eid = out_csr.result()
    columns = node_feature_columns(nodes)
    return TemporalGraph(
        manifest=dataset.manifest,
        node_ids=_node_ids(nodes, offsets),
        type_offsets=offsets,
        created_ts=nodes["created_ts"].fill_null(UNKNOWN_TIME).to_numpy().astype(np.int64),
        src=edges["src"].to_numpy().astype(np.int64, copy=False),
        dst=edges["dst"].to_numpy().astype(np.int64, copy=False),
        etype=edges["etype"].to_numpy().astype(np.int16, copy=False),
        ts=edges["ts"].to_numpy().astype(np.int64, copy=False),
        weight=edges["weight"].to_numpy().astype(np.float32),
        out_ptr=out_ptr,
        out_eid=out_eid,
        in_ptr=in_ptr,
        in_eid=in_eid,
        fingerprint=dataset.fingerprint,
        attribute_names=tuple(columns),
        attributes=_attributes(nodes, columns),
    )


def build_graph_from_dir(root: str | Path) -> TemporalGraph:
    """`load_dataset` (full validation) then `build_graph`."""
    return build_graph(load_dataset(root))
