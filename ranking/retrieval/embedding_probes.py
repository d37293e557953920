"""`probe_queries`: multi-probe bags straight from query embeddings, bit-reproducibly.

`probe_bags` takes per-codeword scores, whatever computed them. The natural score of an
additive quantizer's codeword is its inner product with the query (`multi_probe`), and
the quick way to get all of them is one matmul, whose float32 rounding depends on the
batch's shape and memory alignment: a codeword near a query's probe threshold could go
in or out of its bag with the other queries of the batch. `np.einsum` does not depend
on the batch, but is several times slower than the matmul.

So the score here is `rescoring.exact_ip(q, c)`, which depends on q and c alone, found
the way the index re-scores items: one matmul gives every codeword a fast score; the
codewords within the rounding margin of a query's (P+1)-th best fast score (about P+1 of
K) are scored exactly; their best P+1 by exact score give the bag, with the weights of
`probe_bags` (each codeword's exact score less the (P+1)-th best). The answer is that of
scoring every codeword exactly (`rescoring` proves the margin), for any batch.

The matmul runs in one BLAS thread (`one_blas_thread`): it is small, and a multi-threaded
BLAS leaves its threads spinning for a while after it, taking the cores from the search
that follows.

`occupied` leaves out the codewords no indexed item holds, as in `probe_bags`. Where a
codebook has at most P occupied codewords, all of them are probed (the same tokens as
`probe_bags`), each weighted by its exact score above a lower bound of every score of
that query, about -(|q| * max |c| + 1). There the weights differ from `probe_bags`',
which measures them from the lowest of all the query's scores less 1: that needs every
codeword's exact score.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import (
    ArrayLike,
    as_embeddings,
    as_occupied,
    check_probes,
    to_numpy,
)
from hir_sdk.ranking.retrieval.multi_probe import bags_of
from hir_sdk.ranking.retrieval.ordered_topk import decode_keys
from hir_sdk.ranking.retrieval.rescoring import exact_top, near_best, rounding_gamma
from hir_sdk.ranking.retrieval.token_bags import TokenBags
from hir_sdk.sampling.blas_threads import one_blas_thread

CHUNK_ROWS = 4096  # queries scored per matmul: a (chunk, K) float32 block of fast scores


def probe_queries(
    query_embeddings: ArrayLike,
    codebooks: ArrayLike,
    probes: int | Sequence[int],
    *,
    occupied: ArrayLike | None = None,
) -> TokenBags:
    """The multi-probe bags of B query embeddings (see the module docstring).

    Args:
        query_embeddings: (B, D) queries.
        codebooks: (M', K, D) the quantizer's first M' codebooks (an index searched with
            `gather_codebooks=G` needs only the first G).
        probes: codewords probed per codebook, one int for all or M' ints, each in [0, K).
        occupied: (M, K) bool, M >= M', the codewords that may be probed
            (`InvertedIndex.occupied()`).

    Returns:
        `TokenBags` of global tokens `m * K + c`, weights > 0, at most sum P_m per bag.
    """
    books = to_numpy(codebooks)
    if books.ndim != 3 or books.dtype.kind != "f":
        raise InputError(f"codebooks must be a float (M, K, D) array, got {books.shape}")
    levels, size, dim = books.shape
    queries = as_embeddings(query_embeddings, "query_embeddings", dim=dim)
    books = as_embeddings(books.reshape(levels * size, dim), "codebooks").reshape(books.shape)
    per_level = check_probes(probes, levels, size)
    held = (
        np.ones((levels, size), dtype=bool)
        if occupied is None
        else as_occupied(occupied, levels, size)
    )
    tokens, weights = [], []
    for m in np.flatnonzero(per_level):
        codes = np.flatnonzero(held[m])  # (K',) the codewords that may be probed
        vectors, width = books[m, codes], int(per_level[m]) + 1
        max_norm = float(np.linalg.norm(vectors.astype(np.float64), axis=1).max(initial=0.0))
        top, scores = _best_codewords(queries, vectors, codes, width, max_norm)
        tokens.append(m * size + top)
        weights.append(_weights(scores, queries, max_norm, width))
    return bags_of(tokens, weights, len(queries))


def _best_codewords(
    queries: np.ndarray, vectors: np.ndarray, codes: np.ndarray, width: int, max_norm: float
) -> tuple[np.ndarray, np.ndarray]:
    """(B, width) codewords (ascending; -1 padding) and their float32 exact scores
    (-inf padding): each query's best `width` of (K', D) `vectors` (largest L2 norm
    `max_norm`) by exact ip."""
    num = len(queries)
    top = np.full((num, width), -1, dtype=np.int64)
    scores = np.full((num, width), -np.inf, dtype=np.float32)
    if len(codes) == 0:
        return top, scores
    for start in range(0, num, CHUNK_ROWS):
        q = queries[start : start + CHUNK_ROWS]
        with one_blas_thread():
            fast = q @ vectors.T  # (b, K') float32 fast scores
        every = partial(np.ones, fast.shape, dtype=bool)  # every slot holds a codeword
        flat = near_best(fast, every, q, max_norm, width, padded=True)
        keys = exact_top(flat, fast.shape[1], flat % fast.shape[1], vectors, codes, q, width)
        best, rows = decode_keys(keys)  # (b, <= width) by exact score, then codeword
        ascending = np.argsort(np.where(rows < 0, np.iinfo(np.int64).max, rows), axis=1)
        part = slice(start, start + len(q))
        top[part, : rows.shape[1]] = np.take_along_axis(rows, ascending, axis=1)
        scores[part, : rows.shape[1]] = np.take_along_axis(best, ascending, axis=1)
    return top, scores


def _weights(scores: np.ndarray, queries: np.ndarray, max_norm: float, width: int) -> np.ndarray:
    """(B, width) float32 weights of the best codewords' exact `scores`: each less the
    query's width-th best (0 at and below it), or less the lower bound of every score
    where the query has fewer than `width` codewords to probe (0 for the padding)."""
    found = np.isfinite(scores)
    full = found.sum(axis=1) == width
    threshold = np.where(full, scores.min(axis=1), np.float32(0.0))
    if not full.all():
        # below every float32 score: |q . c| <= |q| max |c|, plus the score's rounding
        # (`rounding_gamma`, as in `rescoring`), rounded down to float32
        gamma = rounding_gamma(queries.shape[1])
        norms = np.linalg.norm(queries[~full].astype(np.float64), axis=1)
        bound = -(norms * max_norm * (1.0 + 2.0 * gamma) + 1.0)
        threshold[~full] = np.nextafter(bound.astype(np.float32), np.float32(-np.inf))
    out = np.where(found, scores - threshold[:, None], np.float32(0.0))
    return np.maximum(out, 0.0).astype(np.float32)
