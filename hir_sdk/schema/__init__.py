"""The input contract: dataset manifest, table validation, and the validated `Dataset`.

The names below are imported on first use (`hir_sdk.lazy_exports`): the manifest's
(`hir_sdk.schema.manifest`) load without polars, which reading and validating the tables
needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hir_sdk.lazy_exports import lazy_exports

# name -> the module of this package that defines it
_MODULES = {
    "CONTENT_FILE": "dataset",
    "EDGES_FILE": "dataset",
    "NODES_FILE": "dataset",
    "Dataset": "dataset",
    "load_dataset": "dataset",
    "DAY": "manifest",
    "EDGE_ROLES": "manifest",
    "MANIFEST_FILE": "manifest",
    "DatasetManifest": "manifest",
    "EdgeType": "manifest",
    "EdgeTypeSpec": "manifest",
    "NodeType": "manifest",
    "TimeSplits": "manifest",
    "load_manifest": "manifest",
}

__all__ = [
    "DAY",
    "CONTENT_FILE",
    "EDGES_FILE",
    "EDGE_ROLES",
    "MANIFEST_FILE",
    "NODES_FILE",
    "Dataset",
    "DatasetManifest",
    "EdgeType",
    "EdgeTypeSpec",
    "NodeType",
    "TimeSplits",
    "load_dataset",
    "load_manifest",
]

__getattr__, __dir__ = lazy_exports(__name__, _MODULES)

if TYPE_CHECKING:
    from hir_sdk.schema.dataset import (
        CONTENT_FILE,
        EDGES_FILE,
        NODES_FILE,
        Dataset,
        load_dataset,
    )
    from hir_sdk.schema.manifest import (
        DAY,
        EDGE_ROLES,
        MANIFEST_FILE,
        DatasetManifest,
        EdgeType,
        EdgeTypeSpec,
        NodeType,
        TimeSplits,
        load_manifest,
    )
