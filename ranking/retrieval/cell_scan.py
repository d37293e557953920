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
  Each cell's bags are consecutive in one gathered (P, D) copy of the queries, and the
  cells are split into ranges of about equal work, one per search thread: the ranges
  write disjoint slots, and the matmuls run outside the GIL.
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


def cell_ranges(work: np.ndarray, parts: int) -> list[range]:
    """`parts` consecutive ranges of the cells 0..G-1 with about equal total `work` (G,)
    each (some may be empty)."""
    total = np.cumsum(work)
    shares = np.arange(1, parts) / parts * (total[-1] if work.size else 0)
    bounds = [0, *np.searchsorted(total, shares).tolist(), len(work)]
    return [range(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]


def rescore_cells(
    scan: PostingScan,
    bag: np.ndarray,
    cell: np.ndarray,
    queries: np.ndarray,
    k: int,
    mapper: Callable[..., Iterable[Any]] = map,
    parts: int = 1,
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
        mapper: runs the cell loop's parts and the exact passes (`map`, or a thread
            pool's `map`).
        parts: how many ranges of cells the cell loop is split into, each run by
            `mapper` (the search's thread count); they write disjoint slots.
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
    # the pairs by cell (by bag within a cell), each cell's queries gathered once, in order
    by_cell = np.argsort(cell, kind="stable")
    cell_first = np.flatnonzero(np.diff(np.take(cell, by_cell), prepend=-1))  # (G,)
    cell_queries = np.diff(np.append(cell_first, len(by_cell)))  # (G,) bags per cell
    cell_lo = np.take(lo, np.take(by_cell, cell_first))  # (G,) first position of each cell
    cell_size = np.take(lengths, np.take(by_cell, cell_first))  # (G,)
    sorted_queries = np.take(queries, np.take(bag, by_cell), axis=0)  # (P, D)
    sorted_start = np.take(start, by_cell)  # (P,)
    span = np.arange(int(lengths.max()) if lengths.size else 0)
    first_l, count_l = cell_first.tolist(), cell_queries.tolist()
    lo_l, size_l = cell_lo.tolist(), cell_size.tolist()

    def scan_cells(cells: range) -> None:  # disjoint slots of `fast` per range of cells
        for g in cells:
            first, size = first_l[g], size_l[g]
            if size == 0:
                continue
            rows = slice(first, first + count_l[g])
            scores = np.matmul(sorted_queries[rows], vectors[lo_l[g] : lo_l[g] + size].T)
            fast[sorted_start[rows, None] + span[:size]] = scores  # (q, n) into q bags' rows

    list(mapper(scan_cells, cell_ranges(cell_queries * cell_size, parts)))

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
