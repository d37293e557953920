"""The canonical order of the edges: by time, then edges of the same time by (edge type,
source, destination, weight), so the graph is a function of the set of rows, not of
their order in the file.

The encoder's samplers meet a node's edges in this order, so without it the same rows
written in another order (a Spark job run twice, a `partitionBy` folder, a table
re-sorted by user) would train a slightly different encoder. Most logs come nearly in
this order already: after the (stable) sort by time, one pass over the pairs of
consecutive rows (in cache-sized blocks, on two threads) finds the same-time pairs out
of order, and only the groups of same-time edges that hold one are sorted again.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import polars as pl

# the keys after the time, in order of precedence (edge type, source, destination, weight)
TIE_KEYS = ("etype", "src", "dst", "weight")
# rows per block of the pass over consecutive pairs: its temporaries stay in cache, and
# the blocks run on two threads (numpy's comparisons release the GIL)
BLOCK = 1 << 18


def same_time_fix(ts: np.ndarray, keys: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray] | None:
    """For rows sorted by `ts` (ascending), what sorts each group of equal times by `keys`
    (most significant first, as `TIE_KEYS`): `(rows, sources)`, the rows to rewrite and
    the rows whose values go there (`column[rows] = column[sources]` for every column),
    or None when every group is in that order already. Rows equal in the time and every
    key are one edge written twice; their order among themselves is not kept."""
    broken = _broken_pairs(ts, keys)
    if broken.size == 0:
        return None
    times = ts[broken]  # the times whose groups are out of order: sorted, so unique by
    times = times[np.r_[True, times[1:] != times[:-1]]]  # dropping repeats
    starts = np.searchsorted(ts, times, side="left")
    sizes = np.searchsorted(ts, times, side="right") - starts
    rows = np.repeat(starts - np.cumsum(sizes) + sizes, sizes) + np.arange(int(sizes.sum()))
    # by the time (which keeps each group in its place), then by the keys; polars sorts
    # on both cores. Rows equal in all of them are the same edge: their order is free.
    columns = {"ts": ts[rows], **{f"key{i}": key[rows] for i, key in enumerate(keys)}}
    order = pl.DataFrame(columns).select(pl.arg_sort_by(list(columns))).to_series().to_numpy()
    return rows, rows[order]


def _broken_pairs(ts: np.ndarray, keys: list[np.ndarray]) -> np.ndarray:
    """The rows i (ascending) whose successor has the same time and comes first by
    `keys`."""
    pairs = len(ts) - 1  # row i and row i + 1

    def block(lo: int) -> np.ndarray:
        hi = min(lo + BLOCK, pairs)
        here, after = slice(lo, hi), slice(lo + 1, hi + 1)
        pending = ts[here] == ts[after]
        broken = np.zeros(hi - lo, dtype=bool)
        for key in keys:
            if not pending.any():
                break
            a, b = key[here], key[after]
            broken |= pending & (a > b)
            pending &= a == b
        return np.flatnonzero(broken) + lo

    starts = range(0, max(pairs, 0), BLOCK)
    if len(starts) <= 1:
        found = list(map(block, starts))
    else:
        with ThreadPoolExecutor(max_workers=2) as pool:
            found = list(pool.map(block, starts))
    return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)
