"""Save and load a built graph: one `.npy` per array (memory-mapped on load), no pickle.

```
GRAPH/
  graph.json          format version, SDK version, data fingerprint, sizes
  manifest.toml       the dataset manifest the graph was built from
  arrays/*.npy        src dst etype ts weight out_ptr out_eid in_ptr in_eid
                      type_offsets created_ts node_ids_<type>
```
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from hir_sdk import __version__
from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.io.atomic import atomic_output_dir
from hir_sdk.io.output_folder import Inputs
from hir_sdk.schema.manifest import MANIFEST_FILE, load_manifest

FORMAT_VERSION = 1
META_FILE = "graph.json"
ARRAYS = (
    "type_offsets",
    "created_ts",
    "src",
    "dst",
    "etype",
    "ts",
    "weight",
    "out_ptr",
    "out_eid",
    "in_ptr",
    "in_eid",
)


def save_graph(
    graph: TemporalGraph, out: str | Path, *, overwrite: bool = False, inputs: Inputs = ()
) -> Path:
    """Write `graph` to the folder `out` atomically. `overwrite` replaces an earlier saved
    graph only; `out` may not be, hold or lie inside any of `inputs` (the dataset folder):
    see `hir_sdk.io.output_folder`."""
    with atomic_output_dir(out, kind="graph", overwrite=overwrite, inputs=inputs) as tmp:
        arrays = tmp / "arrays"
        arrays.mkdir()
        for name in ARRAYS:
            np.save(arrays / f"{name}.npy", np.ascontiguousarray(getattr(graph, name)))
        for node_type, ids in zip(graph.node_types, graph.node_ids, strict=True):
            np.save(arrays / f"node_ids_{node_type}.npy", ids)
        (tmp / MANIFEST_FILE).write_text(graph.manifest.to_toml(), encoding="utf-8")
        meta = {
            "format_version": FORMAT_VERSION,
            "sdk_version": __version__,
            "fingerprint": graph.fingerprint,
            "num_nodes": graph.num_nodes,
            "num_edges": graph.num_edges,
            "node_types": list(graph.node_types),
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Path(out)


def load_graph(path: str | Path, *, mmap: bool = True) -> TemporalGraph:
    """Load a saved graph; arrays are memory-mapped read-only unless `mmap` is False."""
    path = Path(path)
    meta_path = path / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "not a saved graph (no graph.json); build one with `hir graph build`", file=path
        ) from None
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read graph metadata: {err}", file=meta_path) from None
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(
            f"graph format {meta.get('format_version')} is not supported "
            f"(expected {FORMAT_VERSION}); rebuild it",
            file=meta_path,
        )
    manifest = load_manifest(path / MANIFEST_FILE)
    mode = "r" if mmap else None

    def read(name: str) -> np.ndarray:
        file = path / "arrays" / f"{name}.npy"
        try:
            return np.load(file, mmap_mode=mode, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise InputError(f"cannot read graph array: {err}", file=file) from None

    arrays = {name: read(name) for name in ARRAYS}
    node_ids = tuple(read(f"node_ids_{t}") for t in manifest.node_types)
    graph = TemporalGraph(
        manifest=manifest, node_ids=node_ids, fingerprint=meta["fingerprint"], **arrays
    )
    if graph.num_edges != meta["num_edges"] or graph.num_nodes != meta["num_nodes"]:
        raise InputError("graph arrays do not match graph.json (truncated copy?)", file=path)
    return graph
