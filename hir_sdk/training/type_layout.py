"""The node and edge types a run's parameters are laid out by.

The encoder's per-type parameters (node-type and edge-type embeddings, per-type
statistics) are indexed by each type's position in the manifest, not by its name. The
same data with its manifest listing the types in another order, or another dataset with
as many types, would load a checkpoint without complaint and apply one type's parameters
to another. A checkpoint therefore records the type names in order (`type_layout`), and
whatever loads one into a model for a dataset checks them (`check_type_layout`):
embedding, export, the A/B's snapshots and warm starts. A checkpoint written before the
names were recorded is not checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import DatasetManifest

LAYOUT_KEYS = ("node_types", "edge_types")


def type_layout(manifest: DatasetManifest) -> dict[str, list]:
    """`{"node_types": [name, ...], "edge_types": [[src, rel, dst], ...]}` in the
    manifest's order (the order of the parameters)."""
    return {
        "node_types": list(manifest.node_types),
        "edge_types": [list(key) for key in manifest.edge_type_keys],
    }


def check_type_layout(state: Mapping[str, Any], manifest: DatasetManifest, file: Path) -> None:
    """An `InputError` when the checkpoint `state` was trained on other node or edge
    types than `manifest` declares, or on the same ones in another order."""
    ours = type_layout(manifest)
    for key, what in (("node_types", "node types"), ("edge_types", "edge types")):
        saved = state.get(key)
        if saved is None:  # written before the layout was recorded
            continue
        theirs = [list(x) if isinstance(x, (list, tuple)) else x for x in saved]
        if theirs != ours[key]:
            raise InputError(
                f"this dataset's {what} differ from those the run was trained on "
                f"({_names(ours[key])} here, {_names(theirs)} in the run); the encoder's "
                "parameters are laid out by the types' names and order: give the data the "
                "run was trained on, or list its types in the run's order",
                file=file,
            )


def _names(types: list) -> str:
    return "[" + ", ".join("/".join(t) if isinstance(t, list) else str(t) for t in types) + "]"
