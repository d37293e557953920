"""A validated dataset: manifest + nodes + edges (+ content), read from one folder.

```
DATA/
  manifest.toml     node types, edge types and roles, time range and splits
  nodes.parquet     required
  edges.parquet     required
  content.parquet   optional (entity text and vectors)
```
Each table is a parquet file or a folder of part files read as one table (Spark's
output: `parquet_parts`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from threading import Event

import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.io.fingerprint import fingerprint_files
from hir_sdk.schema.columns import read_table
from hir_sdk.schema.manifest import MANIFEST_FILE, DatasetManifest, load_manifest
from hir_sdk.schema.parquet_parts import table_parts
from hir_sdk.schema.tables import validate_content, validate_edges, validate_nodes

NODES_FILE = "nodes.parquet"
EDGES_FILE = "edges.parquet"
CONTENT_FILE = "content.parquet"
TYPE_COLUMNS = ("src_type", "dst_type", "edge_type")  # read as dictionaries


@dataclass(frozen=True)
class Dataset:
    """The validated, normalized tables of one dataset folder (see `hir_sdk.schema.tables`)."""

    root: Path
    manifest: DatasetManifest
    nodes: pl.DataFrame
    edges: pl.DataFrame
    content: pl.DataFrame | None
    fingerprint: str

    def node_type_of(self, index: int) -> str:
        return str(self.nodes["node_type"][index])


def _content(path: Path, manifest: DatasetManifest, nodes: pl.DataFrame) -> pl.DataFrame:
    return validate_content(read_table(path, ("node_type",)), manifest, nodes, path)


def load_dataset(root: str | Path) -> Dataset:
    """Read and validate a dataset folder; any problem raises `InputError`."""
    root = Path(root)
    if not root.is_dir():
        raise InputError("dataset folder not found", file=root)
    manifest = load_manifest(root / MANIFEST_FILE)
    content_path = root / CONTENT_FILE
    has_content = content_path.exists()
    tables = [NODES_FILE, EDGES_FILE, *([CONTENT_FILE] if has_content else [])]
    # every file read, a folder's parts in sorted order (a changed part changes it)
    files = [root / MANIFEST_FILE, *(p for t in tables for p in table_parts(root / t))]
    # the fingerprint hashes the files on a thread of its own (hashing releases the GIL)
    # while they are validated; the edges are read while the nodes are checked, and the
    # content is checked beside the edges (it needs only the nodes). Each table's problem
    # is still reported in the order nodes, edges, content.
    pool = ThreadPoolExecutor(max_workers=3)
    stop = Event()
    fingerprint = pool.submit(fingerprint_files, files, root=root, stop=stop)
    edges_frame = pool.submit(read_table, root / EDGES_FILE, TYPE_COLUMNS)
    try:
        nodes = validate_nodes(
            read_table(root / NODES_FILE, ("node_type",)), manifest, root / NODES_FILE
        )
        content_future = (
            pool.submit(_content, content_path, manifest, nodes) if has_content else None
        )
        edges = validate_edges(edges_frame.result(), manifest, nodes, root / EDGES_FILE)
        content = None if content_future is None else content_future.result()
    except BaseException:
        # a dataset that fails validation needs no fingerprint, and its message need not
        # wait for the other tables' reads (they finish on their threads)
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    digest = fingerprint.result()
    pool.shutdown()
    return Dataset(
        root=root,
        manifest=manifest,
        nodes=nodes,
        edges=edges,
        content=content,
        fingerprint=digest,
    )
