"""Re-scoring is bit-reproducible: the exact inner product depends on the (query, item)
pair alone, fast matmul scores stay inside the rounding margin, and keeping only the
candidates inside the margin gives the same answer as scoring every candidate exactly."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.ranking.retrieval import InvertedIndex, TokenBags
from hir_sdk.ranking.retrieval.ordered_topk import decode_keys
from hir_sdk.ranking.retrieval.rescoring import best_rescored, exact_ip, rounding_margin


def normal(rng: np.random.Generator, *shape: int, scale: float = 1.0) -> np.ndarray:
    return (scale * rng.normal(size=shape)).astype(np.float32)


def test_exact_ip_does_not_depend_on_the_batch_or_alignment() -> None:
    rng = np.random.default_rng(0)
    items, query = normal(rng, 300, 64), normal(rng, 64)
    alone = np.array([exact_ip(items[i : i + 1], query[None])[0] for i in range(300)])
    assert np.array_equal(exact_ip(items, np.broadcast_to(query, items.shape)), alone)
    shifted = np.empty(300 * 64 + 1, dtype=np.float32)[1:].reshape(300, 64)  # misaligned
    shifted[:] = items
    assert np.array_equal(exact_ip(shifted, np.broadcast_to(query, items.shape)), alone)


@pytest.mark.parametrize("dim", [8, 32, 64, 100])
def test_matmul_scores_of_any_shape_stay_inside_the_margin(dim: int) -> None:
    rng = np.random.default_rng(dim)
    items, queries = normal(rng, 500, dim, scale=3.0), normal(rng, 40, dim, scale=0.2)
    exact = np.stack([exact_ip(items, np.broadcast_to(q, items.shape)) for q in queries])
    max_norm = float(np.linalg.norm(items.astype(np.float64), axis=1).max())
    allowed = rounding_margin(queries, max_norm) / 4  # 2E: the most two scores may differ
    for fast in (
        queries @ items.T,
        np.concatenate([queries[i : i + 3] @ items.T for i in range(0, 40, 3)]),
        np.matmul(np.broadcast_to(items, (40, 500, dim)), queries[:, :, None])[:, :, 0],
    ):
        gap = np.abs(fast.astype(np.float64) - exact)
        assert (gap <= allowed).all()
    assert allowed.max() < 1e-3  # and the margin is small: it keeps few extra candidates


def brute_force(vectors, rows, queries, k):
    """(row, score) lists: every real candidate scored by exact_ip, best k by (ip, row)."""
    out = []
    for b in range(len(queries)):
        real = np.flatnonzero(rows[b] >= 0)
        ip = exact_ip(vectors[b, real], np.broadcast_to(queries[b], (len(real), queries.shape[1])))
        ranked = sorted(
            zip(rows[b, real].tolist(), ip.tolist(), strict=True), key=lambda p: (-p[1], p[0])
        )
        out.append(ranked[:k])
    return out


@pytest.mark.parametrize("seed", range(4))
def test_best_rescored_equals_scoring_every_candidate_exactly(seed: int) -> None:
    rng = np.random.default_rng(seed)
    num, width, dim, k = 6, 120, 16, 10
    table, queries = normal(rng, 1000, dim), normal(rng, num, dim)  # embeddings by position
    table[10:20] = table[0:10]  # duplicated items: exact ties, broken by row
    pos = np.stack([20 + rng.permutation(980)[:width] for _ in range(num)])
    pos[:, 50:70] = np.arange(20)  # every bag holds both copies
    pos[rng.random((num, width)) < 0.2] = -1  # missing candidates
    pos[0, 5:] = -1  # a bag with fewer candidates than k
    order = np.arange(1000) * 3 + 1  # position -> row
    rows = np.where(pos >= 0, order[pos], -1)
    vectors = table[pos]  # (num, width, dim); rows of missing candidates are junk
    exact = np.stack(
        [exact_ip(vectors[b], np.broadcast_to(queries[b], (width, dim))) for b in range(num)]
    )
    max_norm = float(np.linalg.norm(table.astype(np.float64), axis=1).max())
    worst = rounding_margin(queries, max_norm) / 4  # fast scores off by up to 2E, adversarially
    fast = (exact + rng.choice([-1.0, 1.0], size=exact.shape) * worst).astype(np.float32)
    scores, found = decode_keys(best_rescored(fast, pos, table, order, queries, max_norm, k))
    expected = brute_force(vectors, rows, queries, k)
    for b in range(num):
        got = [(int(r), float(s)) for r, s in zip(found[b], scores[b], strict=True) if r >= 0]
        assert got == expected[b]
    assert len(expected[0]) < k


def test_index_rescoring_does_not_depend_on_batching_or_threads() -> None:
    # continuous (not grid) data: matmul rounding differs with shapes, results must not
    rng = np.random.default_rng(7)
    codes = rng.integers(0, 4, (2000, 2))
    items, queries = normal(rng, 2000, 24), normal(rng, 50, 24)
    index = InvertedIndex.build(np.arange(2000) + 10, codes, 4, items)
    bags = TokenBags.from_codes(rng.integers(0, 4, (50, 2)), 4)
    runs = [
        index.search(bags, 20, query_embeddings=queries, num_threads=1, batch_size=size, **cut)
        for size in (1, 7, 64)
        for cut in ({}, {"num_candidates": 300})
    ]
    base = runs[0]
    for run in runs[2::2]:  # every candidate re-scored, other batch sizes
        assert np.array_equal(run.rows, base.rows) and np.array_equal(run.scores, base.scores)
    # every returned score is the exact ip of that (query, item) pair
    rows = base.rows
    assert (rows >= 0).all()
    expected = exact_ip(items[rows], np.broadcast_to(queries[:, None], (*rows.shape, 24)))
    assert np.array_equal(base.scores, expected)
    threaded = index.search(bags, 20, query_embeddings=queries, num_threads=3, batch_size=4)
    assert np.array_equal(threaded.rows, base.rows)
    assert np.array_equal(threaded.scores, base.scores)
    for run in runs[3::2]:  # candidate cut: the same cut at every batch size
        assert np.array_equal(run.rows, runs[1].rows) and np.array_equal(run.scores, runs[1].scores)
