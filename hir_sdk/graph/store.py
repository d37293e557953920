"""Save and load a built graph: one `.npy` per array (memory-mapped on load), no pickle.

```
GRAPH/
  graph.json          format version, SDK version, data fingerprint, sizes
  manifest.toml       the dataset manifest the graph was built from
  arrays/*.npy        src dst etype ts weight out_ptr out_eid in_ptr in_eid
                      type_offsets created_ts node_ids_<type>
                      attributes (when the nodes have numeric columns; their names
                      are graph.json's attribute_names)
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

FORMAT_VERSION = 2  # 2: the numeric node attributes (a graph of format 1 has none)
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
        if graph.attribute_names:
            table = np.asarray(graph.attributes, dtype=np.float64)
            if table.shape != (graph.num_nodes, len(graph.attribute_names)):
                raise ValueError(f"attributes of shape {table.shape} for {graph.num_nodes} nodes")
            np.save(arrays / "attributes.npy", np.ascontiguousarray(table))
        (tmp / MANIFEST_FILE).write_text(graph.manifest.to_toml(), encoding="utf-8")
        meta = {
            "format_version": FORMAT_VERSION,
            "sdk_version": __version__,
            "fingerprint": graph.fingerprint,
            "num_nodes": graph.num_nodes,
            "num_edges": graph.num_edges,
            "node_types": list(graph.node_types),
            "attribute_names": list(graph.attribute_names),
        }
        (tmp / META_FILE).write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    return Path(out)


def _read_meta(path: Path) -> dict:
    """graph.json as a dict holding the keys `load_graph` needs, or an `InputError`."""
    meta_path = path / META_FILE
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            "not a saved graph (no graph.json); build one with `hir graph build`", file=path
        ) from None
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read graph metadata: {err}", file=meta_path) from None
    if not isinstance(meta, dict):
        raise InputError(
            f"graph metadata must be a JSON object, found {type(meta).__name__}", file=meta_path
        )
    if meta.get("format_version") != FORMAT_VERSION:
        raise InputError(
            f"graph format {meta.get('format_version')} is not supported "
            f"(expected {FORMAT_VERSION}); rebuild it",
            file=meta_path,
        )
    for key, kind in (("fingerprint", str), ("num_nodes", int), ("num_edges", int)):
        if not isinstance(meta.get(key), kind) or isinstance(meta.get(key), bool):
            raise InputError(
                f"graph metadata lacks a valid '{key}' (hand-edited?); rebuild the graph",
                file=meta_path,
            )
    return meta


def _check_pointers(ptr: np.ndarray, num_edges: int) -> str | None:
    """Why `ptr` (of length `num_nodes + 1`) is not a CSR pointer array over `num_edges`
    entries."""
    if ptr[0] != 0 or ptr[-1] != num_edges:
        return f"must start at 0 and end at {num_edges}, runs from {ptr[0]} to {ptr[-1]}"
    if (np.diff(ptr) < 0).any():
        return "is not non-decreasing"
    return None


def _check_structure(graph: TemporalGraph) -> tuple[str, str] | None:
    """(array name, problem) of the first array that breaks the graph's invariants, if any:
    shapes, dtypes, CSR pointers, index ranges, time order, sorted unique node ids."""
    for name in ARRAYS:
        array, kind = getattr(graph, name), "f" if name == "weight" else "i"
        if array.ndim != 1 or array.dtype.kind != kind:
            return name, f"must be a 1-d {'float' if kind == 'f' else 'integer'} array"
    offsets = graph.type_offsets
    if len(offsets) != len(graph.node_types) + 1:
        return "type_offsets", f"must have {len(graph.node_types) + 1} entries (types + 1)"
    if offsets[0] != 0 or (np.diff(offsets) < 0).any():
        return "type_offsets", "must start at 0 and be non-decreasing"
    n, e, t = graph.num_nodes, graph.num_edges, len(graph.manifest.edge_types)
    for name, size in (("created_ts", n), ("out_ptr", n + 1), ("in_ptr", n + 1)):
        if len(getattr(graph, name)) != size:
            return name, f"has {len(getattr(graph, name))} entries, expected {size}"
    for name in ("src", "dst", "etype", "weight", "out_eid", "in_eid"):
        if len(getattr(graph, name)) != e:
            return name, f"has {len(getattr(graph, name))} entries, expected one per edge ({e})"
    for name in ("out_ptr", "in_ptr"):
        problem = _check_pointers(getattr(graph, name), e)
        if problem:
            return name, problem
    if e:
        for name, limit in (("src", n), ("dst", n), ("etype", t), ("out_eid", e), ("in_eid", e)):
            array = getattr(graph, name)
            if array.min() < 0 or array.max() >= limit:
                return name, f"holds values outside [0, {limit})"
        for name, owner in (("out_ptr", graph.src), ("in_ptr", graph.dst)):
            if not np.array_equal(np.diff(getattr(graph, name)), np.bincount(owner, minlength=n)):
                return name, "does not match the edges' endpoints"
        if (np.diff(graph.ts) < 0).any():
            return "ts", "is not in time order"
    for node_type, ids, lo, hi in zip(
        graph.node_types, graph.node_ids, offsets[:-1], offsets[1:], strict=True
    ):
        if ids.ndim != 1 or ids.dtype.kind not in "iU" or len(ids) != hi - lo:
            return f"node_ids_{node_type}", f"must hold {hi - lo} integer or string ids"
        if len(ids) > 1 and not (ids[1:] > ids[:-1]).all():
            return f"node_ids_{node_type}", "ids are not sorted and unique"
    if graph.attribute_names:
        shape = (n, len(graph.attribute_names))
        if graph.attributes.shape != shape or graph.attributes.dtype != np.float64:
            return "attributes", f"must be a {shape} float64 array"
    return None


def load_graph(path: str | Path, *, mmap: bool = True) -> TemporalGraph:
    """Load a saved graph; arrays are memory-mapped read-only unless `mmap` is False.

    The metadata and every array's structure are checked (CSR pointers start at 0, never
    decrease and end at the number of edges; indices in range; edges in time order; node
    ids sorted): a hand-edited or corrupt graph is an `InputError`, never a wrong answer.
    """
    path = Path(path)
    meta = _read_meta(path)
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
    names = meta.get("attribute_names")
    if (
        not isinstance(names, list)
        or not all(isinstance(x, str) for x in names)
        or len(set(names)) != len(names)
    ):
        raise InputError(
            "graph metadata's 'attribute_names' is not a list of distinct names "
            "(hand-edited?); rebuild the graph",
            file=path / META_FILE,
        )
    graph = TemporalGraph(
        manifest=manifest,
        node_ids=node_ids,
        fingerprint=meta["fingerprint"],
        attribute_names=tuple(names),
        attributes=read("attributes") if names else None,
        **arrays,
    )
    broken = _check_structure(graph)
    if broken:
        name, problem = broken
        raise InputError(
            f"corrupt graph array (hand-edited or damaged?): {name} {problem}; rebuild the graph",
            file=path / "arrays" / f"{name}.npy",
        )
    if graph.num_edges != meta["num_edges"] or graph.num_nodes != meta["num_nodes"]:
        raise InputError("graph arrays do not match graph.json (truncated copy?)", file=path)
    return graph
