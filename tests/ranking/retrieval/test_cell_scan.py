"""The cell scan (gather_codebooks=1, every candidate re-scored) returns exactly what
scoring every item of the bag's codebook-0 cells by `exact_ip` returns, whatever the
batching, the block size of its exact passes or the threads."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags, cell_scan, inverted_index, rescoring
from hir_sdk.ranking.retrieval.rescoring import exact_ip

NUM, LEVELS, SIZE, DIM, K = 3000, 2, 16, 24, 20


def brute_force(codes, items, bags: TokenBags, queries, k):
    """(rows, scores) per bag: the items of its codebook-0 tokens, best k by (ip, row)."""
    rows, scores = np.full((len(bags), k), -1), np.full((len(bags), k), -np.inf, np.float32)
    for b in range(len(bags)):
        cells = [t for t in bags.bag(b) if t < SIZE]
        cand = np.flatnonzero(np.isin(codes[:, 0], cells))
        ip = exact_ip(items[cand], np.broadcast_to(queries[b], (len(cand), DIM)))
        best = np.lexsort((cand, -ip))[:k]
        rows[b, : len(best)], scores[b, : len(best)] = cand[best], ip[best]
    return rows, scores


@pytest.fixture(scope="module")
def world():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, SIZE, (NUM, LEVELS))
    codes[codes[:, 0] == 5, 0] = 6  # codebook-0 token 5 holds no item: an empty cell
    items = rng.normal(size=(NUM, DIM)).astype(np.float32)
    items[100:110] = items[200:210]  # exact ties across cells, broken by row
    index = InvertedIndex.build(np.arange(NUM) + 100, codes, SIZE, items)
    bag_rows = []
    for b in range(700):
        count = int(rng.integers(0, 5))
        tokens = sorted(set(rng.integers(0, SIZE * LEVELS, count).tolist()))
        bag_rows.append({t: 1.0 + (b % 3) for t in tokens})
    bag_rows[0] = {}  # no token
    bag_rows[1] = {SIZE + 2: 1.0}  # a later codebook only: no cell, no candidate
    bag_rows[2] = {5: 1.0}  # the empty cell
    bag_rows[3] = {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0, 4: 1.0, 6: 1.0, 7: 1.0}  # a heavy bag
    offsets = np.cumsum([0] + [len(r) for r in bag_rows])
    tokens = np.array([t for r in bag_rows for t in r], dtype=np.int64)
    weights = np.array([w for r in bag_rows for w in r.values()], dtype=np.float32)
    bags = TokenBags(offsets, tokens, weights)
    queries = rng.normal(size=(len(bag_rows), DIM)).astype(np.float32)
    return codes, items, index, bags, queries


@pytest.mark.parametrize(
    ("threads", "exact_rows", "cell_batch", "gather_rows"),
    [(1, 256, 4096, 4096), (3, 7, 4096, 5), (2, 64, 150, 64)],
)
def test_cell_scan_equals_scoring_every_item_of_the_cells(
    world, monkeypatch, threads, exact_rows, cell_batch, gather_rows
) -> None:
    codes, items, index, bags, queries = world
    monkeypatch.setattr(rescoring, "GATHER_ROWS", gather_rows)
    monkeypatch.setattr(cell_scan, "EXACT_ROWS", exact_rows)
    monkeypatch.setattr(inverted_index, "EXACT_ROWS", exact_rows)
    monkeypatch.setattr(inverted_index, "CELL_BATCH", cell_batch)
    found = index.search(bags, K, query_embeddings=queries, gather_codebooks=1, num_threads=threads)
    rows, scores = brute_force(codes, items, bags, queries, K)
    assert np.array_equal(found.rows, rows)
    assert np.array_equal(found.scores, scores)
    assert (found.rows[:3] == -1).all()  # no token, a later codebook only, an empty cell
    assert (found.rows[3] >= 0).all() and (found.rows[4:] >= 0).sum() > 0.5 * found.rows[4:].size


def test_cell_scan_equals_the_gathering_scan(world) -> None:
    _, _, index, bags, queries = world
    cells = index.search(bags, K, query_embeddings=queries, gather_codebooks=1)
    gathering = index.search(  # a candidate budget above N takes the gathering path
        bags, K, query_embeddings=queries, gather_codebooks=1, num_candidates=NUM + 1
    )
    assert np.array_equal(cells.ids, gathering.ids)
    assert np.array_equal(cells.scores, gathering.scores)


def test_cell_scan_of_dense_bags_equals_their_token_bags(world) -> None:
    _, _, index, bags, queries = world
    dense = np.zeros((len(bags), index.num_tokens), dtype=np.float32)
    dense[bags.bag_of_entry(), bags.tokens] = bags.weights
    sparse = index.search(bags, K, query_embeddings=queries, gather_codebooks=1)
    found = index.search(dense, K, query_embeddings=queries, gather_codebooks=1)
    assert np.array_equal(found.rows, sparse.rows)
    assert np.array_equal(found.scores, sparse.scores)


@pytest.mark.parametrize("parts", [1, 2, 3, 8])
def test_cell_ranges_cover_every_cell_once_with_balanced_work(parts) -> None:
    work = np.array([5, 1, 1, 9, 0, 2, 2, 4, 6, 1], dtype=np.int64)
    ranges = cell_scan.cell_ranges(work, parts)
    assert len(ranges) == parts
    assert [g for r in ranges for g in r] == list(range(len(work)))  # in order, no gap
    loads = [int(work[list(r)].sum()) for r in ranges]
    # each cut lies at the first cell where the cumulative work reaches its share
    assert max(loads) <= work.sum() / parts + work.max()


def test_cell_ranges_of_no_cells() -> None:
    assert [list(r) for r in cell_scan.cell_ranges(np.zeros(0, np.int64), 2)] == [[], []]
