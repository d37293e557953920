"""(node_type code, node_id) -> global node index, vectorised, for millions of edge ends.

Nodes are sorted by (type code, node_id), so the ids of one type are a sorted run. Integer
ids that are dense (the usual 0..n-1 of a log) go through a direct lookup table; sparse
integer ids through one binary search; string ids through a hash join.
"""

from __future__ import annotations

import numpy as np
import polars as pl

MISSING = -1
_DENSE_FACTOR = 4  # a lookup table up to 4x the number of ids (+ slack) is worth it
_BLOCK = 1 << 16  # ids per block of the dense lookup: its temporaries stay in cache


def dense_table(
    all_ids: np.ndarray, offsets: np.ndarray, types: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """One lookup table over all `types` (concatenated per-type ranges), or None when the
    ids of some type are too sparse for it."""
    lows = np.zeros(len(offsets) - 1, dtype=np.int64)
    sizes = np.zeros(len(offsets) - 1, dtype=np.int64)
    for code in types:
        known = all_ids[offsets[code] : offsets[code + 1]]
        if len(known):
            # Python ints: ids spanning most of the int64 range overflow a numpy subtraction
            lows[code], span = known[0], int(known[-1]) - int(known[0]) + 1
            if span > _DENSE_FACTOR * len(known) + 1024:
                return None
            sizes[code] = span
    bases = np.zeros(len(sizes), dtype=np.int64)
    np.cumsum(sizes[:-1], out=bases[1:])
    table = np.full(int(sizes.sum()), MISSING, dtype=np.int64)
    for code in types:
        lo, hi = int(offsets[code]), int(offsets[code + 1])
        table[bases[code] + all_ids[lo:hi] - lows[code]] = np.arange(lo, hi)
    return table, lows, sizes, bases


def lookup_dense(
    table: np.ndarray,
    lows: np.ndarray,
    sizes: np.ndarray,
    bases: np.ndarray,
    codes: np.ndarray,
    wanted: np.ndarray,
    out: np.ndarray | None = None,
) -> np.ndarray:
    """Direct-table lookup, in blocks small enough that temporaries are reused from the
    heap instead of freshly mapped (page faults dominate whole-array temporaries) and
    stay in cache. The per-type values are gathered with `np.take`, which is faster than
    fancy indexing for such small tables. `out`: the int64 array to write (one of
    `wanted`'s length), by default a new one.

    An id's offset from its type's lowest id, read as unsigned, is below the type's size
    exactly when the id lies in the type's range: one comparison instead of two."""
    if out is None:
        out = np.empty(len(wanted), dtype=np.int64)
    if not len(table):
        out.fill(MISSING)
        return out
    sizes, bases = sizes.astype(np.uint64), bases.astype(np.uint64)
    for lo in range(0, len(wanted), _BLOCK):
        by_type = codes[lo : lo + _BLOCK]
        offset = np.take(lows, by_type)
        np.subtract(wanted[lo : lo + _BLOCK], offset, out=offset)
        offset = offset.view(np.uint64)
        outside = offset >= np.take(sizes, by_type)
        offset += np.take(bases, by_type)
        np.putmask(offset, outside, 0)
        found = out[lo : lo + _BLOCK]
        np.take(table, offset.view(np.int64), out=found)
        np.putmask(found, outside, MISSING)
    return out


def compose_dense(
    dense: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray], codes: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """`dense_table`'s tables re-indexed through `codes` (an id -> type code map, -1 for
    none): `lookup_dense` then takes those ids in place of type codes. An id mapped to no
    type gets an empty range, so each of its rows is `MISSING`."""
    table, lows, sizes, bases = dense
    known = codes >= 0
    code = np.where(known, codes, 0)
    return (
        table,
        np.where(known, lows[code], 0),
        np.where(known, sizes[code], 0),
        np.where(known, bases[code], 0),
    )


def resolve(
    nodes: pl.DataFrame, offsets: np.ndarray, codes: np.ndarray, ids: pl.Series
) -> np.ndarray:
    """Global index of each `(codes[i], ids[i])`, or `MISSING` where no such node exists.

    `nodes` is the validated nodes table (sorted by type code then node_id) and `offsets`
    its per-type start rows (length T+1).
    """
    if ids.dtype == pl.String:
        keys = nodes.select(
            pl.col("type_code").alias("c"), pl.col("node_id").alias("i"), pl.col("index")
        )
        joined = pl.DataFrame({"c": codes, "i": ids}).join(
            keys, on=["c", "i"], how="left", maintain_order="left"
        )
        return joined["index"].fill_null(MISSING).to_numpy().astype(np.int64)
    wanted = ids.to_numpy()
    all_ids = nodes["node_id"].to_numpy()
    # every type first: finding which types `codes` holds is a pass over them, needed
    # only when some type's ids are too sparse for the table
    dense = dense_table(all_ids, offsets, np.arange(len(offsets) - 1))
    if dense is not None:
        return lookup_dense(*dense, codes, wanted)
    types = np.flatnonzero(np.bincount(codes, minlength=len(offsets) - 1))
    dense = dense_table(all_ids, offsets, types)
    if dense is not None:
        return lookup_dense(*dense, codes, wanted)
    out = np.full(len(wanted), MISSING, dtype=np.int64)
    for code in types:
        lo, hi = int(offsets[code]), int(offsets[code + 1])
        mask = codes == code
        found = search_sorted(all_ids[lo:hi], wanted[mask])
        out[mask] = np.where(found == MISSING, MISSING, found + lo)
    return out


def search_sorted(known: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Position of each `wanted` value in the sorted array `known`, or `MISSING`."""
    out = np.full(len(wanted), MISSING, dtype=np.int64)
    if len(known) == 0:
        return out
    pos = np.minimum(np.searchsorted(known, wanted), len(known) - 1)
    hit = known[pos] == wanted
    out[hit] = pos[hit]
    return out
