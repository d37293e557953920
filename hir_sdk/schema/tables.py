"""Validation of the three input tables against the manifest, and their normalized form.

```
nodes   : node_type str | node_id int|str | created_ts? time | <numeric feature columns>
edges   : src_type str | src_id | dst_type str | dst_id | edge_type str | ts time | weight? num
content : node_type str | node_id | text str | <vector columns: list/array of numbers>
```

Normalized output (what the graph builder consumes): nodes sorted by (manifest type order,
node_id) with a global `index` (contiguous per type); edges with resolved `src` / `dst`
global indices, an `etype` code (position in `manifest.edge_types`), `ts` as Int64 seconds
and `weight` as Float64, sorted by time, then by (edge type, source, destination, weight).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.schema.category_codes import (
    aligned_chunks,
    category_table,
    edge_type_codes,
    edge_type_keys,
    resolve_end,
)
from hir_sdk.schema.columns import (
    ROW,
    as_id,
    as_number,
    as_seconds,
    as_string,
    fail_rows,
    id_kind,
    listed,
    nul_ids,
    refuse_rows,
    require_columns,
    reserved,
    type_codes,
)
from hir_sdk.schema.edge_order import TIE_KEYS, same_time_fix
from hir_sdk.schema.manifest import DatasetManifest
from hir_sdk.schema.node_index import MISSING, dense_table, resolve, search_sorted

NODE_COLUMNS = ["node_type", "node_id"]
EDGE_COLUMNS = ["src_type", "src_id", "dst_type", "dst_id", "edge_type", "ts"]
CONTENT_COLUMNS = ["node_type", "node_id", "text"]


def type_offsets(nodes: pl.DataFrame, num_types: int) -> np.ndarray:
    """(T+1,) first row of each node type in the validated (sorted) nodes table."""
    counts = np.bincount(nodes["type_code"].to_numpy(), minlength=num_types)
    offsets = np.zeros(num_types + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return offsets


def node_feature_columns(nodes: pl.DataFrame) -> list[str]:
    """The numeric attribute columns of a validated nodes table (`validate_nodes`)."""
    return [c for c in nodes.columns if c not in _NODE_OUTPUT]


_NODE_OUTPUT = ("index", "type_code", "node_type", "node_id", "created_ts")


def validate_nodes(frame: pl.DataFrame, manifest: DatasetManifest, file: Path) -> pl.DataFrame:
    """Check and normalize the nodes table. Returns columns
    `index, type_code, node_type, node_id, created_ts, <features...>`."""
    require_columns(frame, NODE_COLUMNS, file)
    names = list(manifest.node_types)
    codes = type_codes(frame, "node_type", names, file, "node types")
    node_id = as_id(frame, "node_id", file)
    created = (
        as_seconds(frame, "created_ts", file, nullable=True)
        if "created_ts" in frame.columns
        else pl.Series("created_ts", [None] * frame.height, dtype=pl.Int64)
    )
    features = [c for c in frame.columns if c not in (ROW, *NODE_COLUMNS, "created_ts")]
    for column in features:
        if column in _NODE_OUTPUT:  # "index", "type_code": a pandas index, say
            raise InputError(reserved(column), file=file, column=column)
    feature_series = [as_number(frame, c, file, nullable=True).alias(c) for c in features]
    out = pl.DataFrame(
        [
            frame[ROW],
            pl.Series("type_code", codes),
            pl.Series("node_type", np.asarray(names, dtype=object)[codes], dtype=pl.String),
            node_id.alias("node_id"),
            created.alias("created_ts"),
            *feature_series,
        ]
    )
    out = out.sort("type_code", "node_id", maintain_order=True)
    same = [pl.col(c) == pl.col(c).shift(1) for c in ("type_code", "node_id")]
    if out.select((same[0] & same[1]).any()).item():  # sorted: duplicates are neighbours
        dup = out.select(pl.struct("type_code", "node_id").is_duplicated()).to_series()
        raise fail_rows(
            "duplicate node ids (each (node_type, node_id) must appear once)",
            out.filter(dup).sort("type_code", "node_id", ROW),
            file=file,
            column="node_id",
            show=["node_type", "node_id"],
        )
    out = out.drop(ROW)
    return out.with_row_index("index").with_columns(pl.col("index").cast(pl.Int64))


def _edge_type_codes(
    manifest: DatasetManifest, src: np.ndarray, rel: np.ndarray, dst: np.ndarray, rels: list[str]
) -> np.ndarray:
    """Position of each (src, rel, dst) in `manifest.edge_types`, or -1 if undeclared.

    Each triple of codes becomes one integer key, looked up in a table over every possible
    key when that table is small (the usual handful of node types and relations: the
    categorical path's table, `category_codes.edge_type_keys`, with each code its own
    id; it says when the table would be too large), else among the declared triples'
    sorted keys.
    """
    num_types = len(manifest.node_types)
    types = np.arange(num_types, dtype=np.int32)
    keys = edge_type_keys(manifest, rels, (types, np.arange(len(rels), dtype=np.int32), types))
    if keys is not None:
        return edge_type_codes(keys, [(src, rel, dst)])
    node_code = manifest.node_type_index
    rel_code = {name: i for i, name in enumerate(rels)}
    specs = manifest.edge_types

    def key(s: np.ndarray, r: np.ndarray, d: np.ndarray) -> np.ndarray:
        return (s.astype(np.int64) * len(rels) + r) * num_types + d

    declared = key(
        np.array([node_code[x.src] for x in specs], dtype=np.int64),
        np.array([rel_code[x.rel] for x in specs], dtype=np.int64),
        np.array([node_code[x.dst] for x in specs], dtype=np.int64),
    )
    wanted = key(src, rel, dst)
    order = np.argsort(declared)
    pos = search_sorted(declared[order], wanted)
    return np.where(pos == MISSING, -1, order[np.maximum(pos, 0)]).astype(np.int16)


def _endpoint(
    frame: pl.DataFrame,
    end: str,
    names: list[str],
    kind: str | None,
    nodes: pl.DataFrame,
    offsets: np.ndarray,
    file: Path,
) -> tuple[np.ndarray, np.ndarray]:
    """Type codes and global node indices (`MISSING` where not found) of one edge end."""
    codes = type_codes(frame, f"{end}_type", names, file, "node types")
    ids = as_id(frame, f"{end}_id", file, kind, nul=False)  # a NUL id is never found
    return codes, resolve(nodes, offsets, codes, ids)


def _times(frame: pl.DataFrame, manifest: DatasetManifest, file: Path) -> np.ndarray:
    """The checked times as one contiguous array (the copy out of the file's row groups
    made here, on a worker thread)."""
    ts = as_seconds(frame, "ts", file, show=EDGE_COLUMNS)
    start, stop = manifest.time.start, manifest.time.end
    if len(ts) and (not start <= ts.min() or not ts.max() < stop):  # type: ignore[operator]
        raise fail_rows(
            f"timestamps outside the manifest's time range [{start}, {stop})",
            frame.filter((ts < start) | (ts >= stop)),
            file=file,
            column="ts",
            show=EDGE_COLUMNS,
        )
    return ts.to_numpy()


def _weights(frame: pl.DataFrame, file: Path) -> np.ndarray:
    """The checked weights as one contiguous array (ones where the file has none)."""
    if "weight" not in frame.columns:
        return np.ones(frame.height)
    weight = as_number(frame, "weight", file, nullable=False, non_negative=True, float32=True)
    return weight.to_numpy()


def validate_edges(
    frame: pl.DataFrame, manifest: DatasetManifest, nodes: pl.DataFrame, file: Path
) -> pl.DataFrame:
    """Check and normalize the edges table against the manifest and the validated nodes.

    Returns columns `src, dst, etype, ts, weight`, sorted by `ts` and same-time edges by
    (edge type, source, destination, weight) (`edge_order`), whatever the file's order.
    Categorical type columns (how `read_table` reads them) are resolved straight from
    their physical ids (`category_codes`); any problem there, and any other table, goes
    through the checked path, which reports the first problem in a fixed order: the
    source end, the destination end, the edge types, the times, the weights, then
    endpoints missing from the nodes (string ids holding a NUL character, which no node
    has, named as such).
    """
    require_columns(frame, EDGE_COLUMNS, file)
    try:
        columns = _resolved_from_categories(frame, manifest, nodes, file)
    except Exception:  # the checked path names it, or the first problem before it
        columns = None
    if columns is None:
        columns = _resolved_checked(frame, manifest, nodes, file)
    out = pl.DataFrame(columns)
    arrays = columns
    if not out["ts"].is_sorted():
        out = out.sort("ts", maintain_order=True)
        arrays = {name: out[name].to_numpy() for name in out.columns}
    fix = same_time_fix(arrays["ts"], [arrays[key] for key in TIE_KEYS])
    if fix is None:
        return out
    return pl.DataFrame({name: _rewritten(a, *fix) for name, a in arrays.items()})


def _rewritten(column: np.ndarray, rows: np.ndarray, sources: np.ndarray) -> np.ndarray:
    """`column` with `column[rows] = column[sources]`: in place where the array is its own
    (the validator's output), on a copy where it views other memory (a polars frame's)."""
    if column.base is not None or not column.flags.writeable:
        column = column.copy()
    column[rows] = column[sources]
    return column


def _resolved_from_categories(
    frame: pl.DataFrame, manifest: DatasetManifest, nodes: pl.DataFrame, file: Path
) -> dict[str, np.ndarray] | None:
    """The output columns of a table without problems whose type columns are
    categorical, or None (another table, or some problem: the caller checks it). What
    decides that it cannot answer (string or sparse ids, type columns that are not
    categorical, too many keys) is found before any pass over the rows. Two threads:
    the ends, the edge types, the times and the weights are independent here."""
    kind = id_kind(nodes["node_id"].dtype)
    if kind != "int":  # string ids resolve by a join (`node_index.resolve`)
        return None
    names = list(manifest.node_types)
    rels = sorted({spec.rel for spec in manifest.edge_types})
    wanted = {"src_type": names, "dst_type": names, "edge_type": rels}
    tables = {column: category_table(frame[column], among) for column, among in wanted.items()}
    if any(table is None for table in tables.values()):
        return None
    order = ("src_type", "edge_type", "dst_type")
    keys = edge_type_keys(manifest, rels, tuple(tables[c] for c in order))  # type: ignore[arg-type]
    offsets = type_offsets(nodes, len(names))
    dense = dense_table(nodes["node_id"].to_numpy(), offsets, np.arange(len(names)))
    if keys is None or dense is None:  # sparse ids: a binary search per type
        return None

    def end(side: str) -> np.ndarray:
        ids = as_id(frame, f"{side}_id", file, kind)
        pieces = aligned_chunks(frame[f"{side}_type"], ids)
        return resolve_end(dense, tables[f"{side}_type"], pieces)  # type: ignore[arg-type]

    with ThreadPoolExecutor(max_workers=2) as pool:
        src, dst = pool.submit(end, "src"), pool.submit(end, "dst")
        etype = pool.submit(edge_type_codes, keys, aligned_chunks(*(frame[c] for c in order)))
        ts = pool.submit(_times, frame, manifest, file)
        weight = pool.submit(_weights, frame, file)
        columns = {"src": src.result(), "dst": dst.result(), "etype": etype.result()}
        times, weights = ts.result(), weight.result()
    if any(c.min(initial=0) < 0 for c in columns.values()):
        return None
    return {**columns, "ts": times, "weight": weights}


def _resolved_checked(
    frame: pl.DataFrame, manifest: DatasetManifest, nodes: pl.DataFrame, file: Path
) -> dict[str, np.ndarray]:
    """The output columns, every value checked: the first problem in the order of
    `validate_edges` raises `InputError`. The columns are checked on two threads (numpy
    and polars release the GIL); the results are read in that fixed order."""
    kind = id_kind(nodes["node_id"].dtype)
    names = list(manifest.node_types)
    offsets = type_offsets(nodes, len(names))
    rels = sorted({spec.rel for spec in manifest.edge_types})
    with ThreadPoolExecutor(max_workers=2) as pool:
        ends = {
            end: pool.submit(_endpoint, frame, end, names, kind, nodes, offsets, file)
            for end in ("src", "dst")
        }
        rel = pool.submit(type_codes, frame, "edge_type", rels, file, "edge types")
        ts = pool.submit(_times, frame, manifest, file)
        weight = pool.submit(_weights, frame, file)
        codes, index = {}, {}
        for end, future in ends.items():
            codes[end], index[end] = future.result()
        etype = _edge_type_codes(manifest, codes["src"], rel.result(), codes["dst"], rels)
        refuse_rows(
            f"undeclared edge types (src_type, edge_type, dst_type); the manifest "
            f"declares {listed(manifest.edge_type_keys)}",
            frame,
            etype < 0,
            file=file,
            column="edge_type",
            show=["src_type", "edge_type", "dst_type"],
        )
        times, weights = ts.result(), weight.result()
    for end in ("src", "dst"):
        dangling = index[end] < 0
        if dangling.any():
            if kind == "str":  # a NUL in an id is why some are missing, and its own rule
                ids = as_id(frame, f"{end}_id", file, kind, nul=False)
                nul_ids(frame, ids, f"{end}_id", file, rows=pl.Series(dangling))
            raise fail_rows(
                f"edge endpoints not found in nodes ({end}_type, {end}_id)",
                frame.filter(pl.Series(dangling)),
                file=file,
                column=f"{end}_id",
                show=EDGE_COLUMNS,
            )
    return {
        "src": index["src"],
        "dst": index["dst"],
        "etype": etype,
        "ts": times,
        "weight": weights,
    }


def _vector_columns(frame: pl.DataFrame, file: Path) -> list[str]:
    vectors = []
    for column in frame.columns:
        if column in (ROW, *CONTENT_COLUMNS):
            continue
        if column == "index":
            raise InputError(reserved(column), file=file, column=column)
        dtype = frame[column].dtype
        inner = getattr(dtype, "inner", None)
        if not isinstance(dtype, (pl.List, pl.Array)) or inner is None or not inner.is_numeric():
            raise InputError(
                f"mistyped column: content vector columns must be lists of numbers, found {dtype}",
                file=file,
                column=column,
            )
        vectors.append(column)
    return vectors


def _bad_vectors(series: pl.Series) -> pl.Series:
    """Rows whose vector holds a null, NaN or infinite number (a null vector is fine: that
    node has none)."""
    values = series.arr.to_list() if isinstance(series.dtype, pl.Array) else series
    element = pl.element()
    finite = element.is_not_null()
    if values.dtype.inner.is_float():  # type: ignore[union-attr]
        finite &= element.is_finite()
    return values.list.eval(~finite).list.any().fill_null(False)


def validate_content(
    frame: pl.DataFrame, manifest: DatasetManifest, nodes: pl.DataFrame, file: Path
) -> pl.DataFrame:
    """Check and normalize the content table. Returns `index, node_type, node_id, text, ...`."""
    require_columns(frame, CONTENT_COLUMNS, file)
    names = list(manifest.node_types)
    codes = type_codes(frame, "node_type", names, file, "node types")
    node_id = as_id(frame, "node_id", file, id_kind(nodes["node_id"].dtype))
    text = as_string(frame, "text", file)
    vectors = _vector_columns(frame, file)
    index = resolve(nodes, type_offsets(nodes, len(names)), codes, node_id)
    refuse_rows(
        "content for nodes that are not in nodes",
        frame,
        index < 0,
        file=file,
        column="node_id",
        show=["node_type", "node_id"],
    )
    joined = pl.DataFrame(
        [
            frame[ROW],
            pl.Series("index", index),
            pl.Series("node_type", np.asarray(names, dtype=object)[codes], dtype=pl.String),
            node_id.alias("node_id"),
            text,
            *[frame[c] for c in vectors],
        ]
    )
    refuse_rows(
        "duplicate content rows (one row per node)",
        joined,
        joined["index"].is_duplicated(),
        file=file,
        column="node_id",
        show=["node_type", "node_id"],
    )
    for column in vectors:
        lengths = joined[column].list.len() if isinstance(joined[column].dtype, pl.List) else None
        if lengths is not None and lengths.drop_nulls().n_unique() > 1:
            raise fail_rows(
                "vectors of different lengths",
                joined.filter(lengths != lengths.drop_nulls().mode().first()),
                file=file,
                column=column,
                show=["node_type", "node_id"],
            )
        refuse_rows(
            "null or non-finite numbers inside vectors",
            joined,
            _bad_vectors(joined[column]),
            file=file,
            column=column,
            show=["node_type", "node_id"],
        )
    return joined.select("index", "node_type", "node_id", "text", *vectors).sort("index")
