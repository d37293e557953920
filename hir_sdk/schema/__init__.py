"""The input contract: dataset manifest, table validation, and the validated `Dataset`."""

from hir_sdk.schema.dataset import CONTENT_FILE, EDGES_FILE, NODES_FILE, Dataset, load_dataset
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
