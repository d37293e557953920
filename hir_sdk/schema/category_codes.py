"""Edge ends and edge types straight from categorical type columns, for valid tables.

The type columns arrive as categoricals (`read_table` reads them as dictionaries): each
row holds a small physical id, and a few strings name those ids. Mapping every row to
its manifest code first (a gather per column) and then looking the codes up again costs
a pass per column over every row. Here each column's small table, from physical id to
manifest code, is composed with what the codes index: the node types' lookup tables for
the two ends, the declared (src type, relation, dst type) triples for the edge types. A
row is then looked up from its physical ids directly.

This path only answers for tables without problems: a physical id outside the manifest
maps to nothing, and the caller, seeing a missing end or an undeclared edge type, runs
the checked path, which names the first problem in its fixed order.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hir_sdk.schema.columns import category_positions, is_categorical
from hir_sdk.schema.manifest import DatasetManifest
from hir_sdk.schema.node_index import compose_dense, lookup_dense

MAX_TABLE = 1 << 20  # physical ids up to this: a larger table goes the checked path
MAX_TRIPLES = 1 << 22  # (src, relation, dst) keys in one direct table
BLOCK = 1 << 16  # rows per block of the edge-type lookup


def category_table(series: pl.Series, names: list[str]) -> np.ndarray | None:
    """(P,) int32: the position in `names` of the category with physical id p, or -1
    (a name the manifest does not declare), for every physical id up to the column's
    largest (`columns.category_positions`). None where the column is not categorical,
    has nulls (the checked path names those) or physical ids beyond `MAX_TABLE` (polars
    numbers categories process-wide)."""
    if not is_categorical(series.dtype) or series.null_count() or not len(series):
        return None
    top = int(series.to_physical().max())  # type: ignore[arg-type]
    if top >= MAX_TABLE:
        return None
    return category_positions(series, names, top)


def aligned_chunks(*columns: pl.Series) -> list[tuple[np.ndarray, ...]]:
    """The columns as numpy arrays, piece by piece where their chunks (a parquet file's
    row groups) have the same lengths: each piece is a view of polars' memory, where
    one contiguous array per column would be a copy. Categoricals give their physical
    ids."""
    lengths = {tuple(len(c) for c in column.get_chunks()) for column in columns}
    parts = (
        [column.get_chunks() for column in columns] if len(lengths) == 1 else [[c] for c in columns]
    )
    return [tuple(_numbers(chunk) for chunk in piece) for piece in zip(*parts, strict=True)]


def _numbers(series: pl.Series) -> np.ndarray:
    if is_categorical(series.dtype):
        series = series.to_physical()
    return series.to_numpy()


def resolve_end(
    dense: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
    table: np.ndarray,
    pieces: list[tuple[np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Global node index of each row (`MISSING` where the type is undeclared or the id
    is not a node of it), from `pieces` of (the type column's physical ids, the ids),
    the type column's category `table` (covering every physical id the column holds)
    and the nodes' `dense_table`."""
    composed = compose_dense(dense, table)
    out = np.empty(sum(len(ids) for _, ids in pieces), dtype=np.int64)
    start = 0
    for types, ids in pieces:
        lookup_dense(*composed, types, ids, out=out[start : start + len(ids)])
        start += len(ids)
    return out


def edge_type_keys(
    manifest: DatasetManifest, rels: list[str], tables: tuple[np.ndarray, np.ndarray, np.ndarray]
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray] | None:
    """How `edge_type_codes` finds a row's edge type: per column, what each physical id
    adds to the row's key, and the table of keys -> edge type (-1: undeclared).

    Where the three columns' physical ids span few keys, the key is the ids' own
    position in that space, and each column's part a multiple of its id. Else (polars
    numbers categories process-wide, and other columns may have taken many numbers) the
    key is built from manifest codes, each id first mapped through its column's table,
    over (node types + 1) x (relations + 1) x (node types + 1), where 0 is "undeclared".
    None where neither space fits one table."""
    node_code, rel_code = manifest.node_type_index, {r: i for i, r in enumerate(rels)}
    declared = [
        (node_code[spec.src], rel_code[spec.rel], node_code[spec.dst])
        for spec in manifest.edge_types
    ]
    sizes = [len(t) for t in tables]
    if sizes[0] * sizes[1] * sizes[2] <= MAX_TRIPLES:
        src, rel, dst = tables
        keys = np.full(sizes, -1, dtype=np.int16)
        for position, (s, r, d) in enumerate(declared):
            keys[np.ix_(src == s, rel == r, dst == d)] = position
        steps = (sizes[1] * sizes[2], sizes[2], 1)
        parts = tuple(
            np.arange(n, dtype=np.int32) * step for n, step in zip(sizes, steps, strict=True)
        )
        return parts, keys.reshape(-1)  # type: ignore[return-value]
    shape = (len(node_code) + 1, len(rels) + 1, len(node_code) + 1)
    if shape[0] * shape[1] * shape[2] > MAX_TRIPLES:
        return None
    keys = np.full(shape, -1, dtype=np.int16)
    for position, (s, r, d) in enumerate(declared):
        keys[s + 1, r + 1, d + 1] = position
    steps = (shape[1] * shape[2], shape[2], 1)
    parts = tuple((t + 1).astype(np.int32) * step for t, step in zip(tables, steps, strict=True))
    return parts, keys.reshape(-1)  # type: ignore[return-value]


def edge_type_codes(
    keys: tuple[tuple[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
) -> np.ndarray:
    """Position of each row's (src type, relation, dst type) in the manifest's edge
    types, -1 where undeclared, from `edge_type_keys` and `pieces` of the three columns'
    physical ids, in blocks whose temporaries stay in cache."""
    (src, rel, dst), flat = keys
    out = np.empty(sum(len(piece[0]) for piece in pieces), dtype=np.int16)
    start = 0
    for s, r, d in pieces:
        for lo in range(0, len(s), BLOCK):
            hi = lo + BLOCK
            key = np.take(src, s[lo:hi])
            key += np.take(rel, r[lo:hi])
            key += np.take(dst, d[lo:hi])
            np.take(flat, key, out=out[start + lo : start + min(hi, len(s))])
        start += len(s)
    return out


__all__ = ["aligned_chunks", "category_table", "edge_type_codes", "edge_type_keys", "resolve_end"]
