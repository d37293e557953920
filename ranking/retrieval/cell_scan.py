"""The cell scan: every item of a bag's codebook-0 cells re-scored, without copying them.

The scan stores items by position, sorted by codebook-0 token, so the items holding
codebook-0 token c sit at the contiguous positions `offsets[c]:offsets[c + 1]` (its
"cell"). With `gather_codebooks=1` and every candidate re-scored (an IVF-style search), a
bag's candidates are the union of its codebook-0 tokens' cells (disjoint: each item is in
one cell), so the search needs no overlap scores, no de-duplication and no gathered copy
of the candidates' embeddings:

- Loop over cells, not bags: each probed cell is scored against all the bags that probe it
  in one matmul, (q, D) x (D, n), written straight into a bag-major buffer of fast
  scores (-inf = no candidate) whose blocks of 256 bags each have the width of their
  longest bag (the search sorts bags by volume, so blocks waste little). A batch of many
  bags shares cells, so the number of matmuls grows with the cells probed, not the bags.
- Then, 256 bags at a time (cache-sized, on the search's threads), only the candidates
  within the rounding margin of their bag's k-th best fast score are gathered and scored
  exactly (`rescoring.near_best`, `rescoring.exact_top`); their positions come from the
  slot, no position array the size of the buffer is written.

The answer equals scoring every candidate exactly (`rescoring`), whatever the batching.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from hir_sdk.ranking.retrieval.ordered_topk import PAD_KEY
from hir_sdk.ranking.retrieval.posting_scan import PostingScan
from hir_sdk.ranking.retrieval.rescoring import exact_top, near_best

EXACT_ROWS = 256  # bags per near-best / exact pass: their buffers stay in cache


def rescore_cells(
    scan: PostingScan,
    bag: np.ndarray,
    cell: np.ndarray,
    queries: np.ndarray,
    k: int,
    mapper: Callable[..., Iterable[Any]] = map,
) -> np.ndarray:
    """(B, k) int64 keys (`ordered_topk`, PAD_KEY-filled) of each bag's best k items of
    its cells by exact inner product, then row.

    Args:
        scan: the index's search layout, with embeddings; cell c is its positions
            `offsets[c]:offsets[c + 1]`.
        bag: (P,) int64 the bag of each (bag, cell) pair, ascending.
        cell: (P,) int64 codebook-0 token of each pair, unique within a bag.
        queries: (B, D) float32 query embeddings.
        k: results per bag.
        mapper: runs the exact passes (`map`, or a thread pool's `map`).
    """
    assert scan.vectors is not None
    offsets, vectors = scan.offsets, scan.vectors
    num = len(queries)
    out = np.full((num, k), PAD_KEY, dtype=np.int64)
    lo = np.take(offsets, cell)
    lengths = np.take(offsets, cell + 1) - lo  # (P,)
    per_bag = np.bincount(bag, weights=lengths, minlength=num).astype(np.int64)  # (B,)
    # rows of EXACT_ROWS bags share a width (their longest bag): a block is (rows, width)
    blocks = np.arange(0, num, EXACT_ROWS)  # (J,) first bag of each block
    widths = np.maximum.reduceat(per_bag, blocks) if num else np.zeros(0, np.int64)  # (J,)
    heights = np.diff(np.append(blocks, num))  # (J,) bags per block
    block_base = np.cumsum(widths * heights) - widths * heights  # (J,) in the flat buffer
    block = np.arange(num) // EXACT_ROWS
    row_base = block_base[block] + (np.arange(num) - blocks[block]) * widths[block]  # (B,)
    pair_first = np.cumsum(lengths) - lengths  # (P,) first entry of each pair, all bags
    bag_first = np.cumsum(per_bag) - per_bag  # (B,)
    start = np.take(row_base - bag_first, bag) + pair_first  # (P,) flat slot, ascending
    fast = np.full(int((widths * heights).sum()), -np.inf, dtype=np.float32)
    by_cell = np.argsort(cell, kind="stable")
    bounds = np.flatnonzero(np.diff(cell[by_cell])) + 1
    span = np.arange(int(lengths.max()) if lengths.size else 0)
    for group in np.split(by_cell, bounds) if bag.size else []:
        first, size = int(lo[group[0]]), int(lengths[group[0]])
        if size == 0:
            continue
        scores = np.matmul(np.take(queries, bag[group], axis=0), vectors[first : first + size].T)
        fast[start[group][:, None] + span[:size]] = scores  # (q, n) into the q bags' rows

    def exact(j: int) -> None:
        rows = slice(blocks[j], blocks[j] + heights[j])
        width = int(widths[j])
        if width == 0:
            return
        base = int(block_base[j])
        table = fast[base : base + heights[j] * width].reshape(-1, width)

        def real() -> np.ndarray:  # a bag's candidates start its row; the rest is -inf
            return np.arange(width) < per_bag[rows, None]

        flat = near_best(table, real, queries[rows], scan.max_norm, k, padded=True)
        slot = flat + base  # in the whole buffer
        pair = np.searchsorted(start, slot, side="right") - 1
        positions = np.take(lo, pair) + slot - np.take(start, pair)
        keys = exact_top(flat, width, positions, vectors, scan.order, queries[rows], k)
        out[rows, : keys.shape[1]] = keys

    list(mapper(exact, range(len(blocks))))
    return out
