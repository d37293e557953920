"""Exact k-nearest neighbours by inner product: the reference that recall is measured
against.

Chunks of queries are scored against every item with one matmul, (chunk, N), and reduced
with `torch.topk`. Ties are made deterministic (score desc, then row asc) without a
second pass over the scores: topk asks for k + 1 values, and only a row whose k-th and
(k+1)-th values are equal (a tie across the cut) is re-selected from its full score row.
"""

from __future__ import annotations

import numpy as np
import torch

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, as_embeddings, check_positive
from hir_sdk.ranking.retrieval.ordered_topk import decode_keys, encode_keys, ordered_topk
from hir_sdk.ranking.retrieval.search_result import SearchResult


def exact_knn(
    queries: ArrayLike,
    embeddings: ArrayLike,
    k: int,
    *,
    item_ids: ArrayLike | None = None,
    chunk_size: int = 1024,
) -> SearchResult:
    """The k items with the largest inner product with each query.

    Args:
        queries: (B, D) finite query embeddings.
        embeddings: (N, D) finite item embeddings.
        k: neighbours per query; with k > N the result is padded (id -1, score -inf).
        item_ids: (N,) ids reported in the result (default: the rows).
        chunk_size: queries scored per matmul; memory ~ chunk_size * N * 4 bytes.

    Returns:
        `SearchResult` (B, k), ordered by inner product desc, then row asc.
    """
    k = check_positive(k, "k")
    check_positive(chunk_size, "chunk_size")
    items = as_embeddings(embeddings, "embeddings")
    q = as_embeddings(queries, "queries", dim=items.shape[1])
    num = items.shape[0]
    ids = np.arange(num, dtype=np.int64) if item_ids is None else np.asarray(item_ids)
    if ids.shape != (num,):
        raise InputError(f"item_ids must have shape ({num},), got {ids.shape}")
    width = min(k, num)
    rows_out = np.full((q.shape[0], k), -1, dtype=np.int64)
    scores_out = np.full((q.shape[0], k), -np.inf, dtype=np.float32)
    items_t = torch.from_numpy(items)
    for start in range(0, q.shape[0], chunk_size):
        scores = torch.from_numpy(q[start : start + chunk_size]) @ items_t.T  # (c, N)
        values, rows = torch.topk(scores, min(width + 1, num), dim=1)  # (c, k + 1)
        values, rows = values.numpy(), rows.numpy()
        keys = encode_keys(values[:, :width], rows[:, :width])  # (c, k), ties in any order
        if width < num:
            for r in np.flatnonzero(values[:, width - 1] == values[:, width]):
                keys[r] = _reselect(scores[r].numpy(), width)
        top_scores, top_rows = decode_keys(ordered_topk(keys, width))
        rows_out[start : start + chunk_size, :width] = top_rows
        scores_out[start : start + chunk_size, :width] = top_scores
    return SearchResult.from_rows(rows_out, scores_out, ids.astype(np.int64))


def _reselect(scores: np.ndarray, width: int) -> np.ndarray:
    """(width,) keys of the best `width` of one full (N,) score row, ties by row."""
    cut = np.partition(scores, scores.size - width)[scores.size - width]  # k-th largest
    above = np.flatnonzero(scores > cut)
    tied = np.flatnonzero(scores == cut)[: width - above.size]
    rows = np.concatenate([above, tied])
    return encode_keys(scores[rows], rows)
