"""Multi-probe query bags: each query's best few codewords per codebook, not only its own
code, weighted by how far each one beats the first codeword left out.

Input is any per-codeword relevance score of the query; for an additive quantizer
(x ~ sum_m C_m[code_m]) the natural one is the inner product with every codeword,
`scores[b, m, c] = q_b . C_m[c]`, because then sum_m scores[b, m, codes[i, m]] is the
quantized inner product q_b . x_i. For codebook m with P_m probes:

    threshold(b, m) = the (P_m + 1)-th highest of scores[b, m, :]
    weight(m * K + c) = max(0, scores[b, m, c] - threshold(b, m))

so the probed codewords are those strictly above the threshold (at most P_m of them; no
tie-breaking is needed). With "uniform" token weights an item's overlap is then

    sum_m max(0, scores[b, m, codes[i, m]] - threshold(b, m))

a truncated, shifted quantized inner product. P_m = K - 1 keeps the whole codebook (the
threshold is its minimum, so that codebook adds exactly its score minus a per-query
constant, as in plain asymmetric distance computation); P_m = 0 leaves codebook m out.
`probe_weights` returns a dense (B, M*K) weight array, `probe_bags` the same bags as
sparse `TokenBags`; `InvertedIndex.search` takes either. `probe_queries`
(`embedding_probes`) gives `probe_bags`' bags from the query embeddings and the codebooks,
with scores that do not depend on the batch (the weights differ only in a codebook with
at most P occupied codewords: see there).

`occupied` ((M, K) bool, `InvertedIndex.occupied()`) leaves out the codewords no indexed
item holds. A quantizer fitted on more than the indexed items (a snapshot's users and
ads share one) has codewords in regions only the other entities fill; the codewords
nearest a user's query are often such, and probing them finds no item at all.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import (
    ArrayLike,
    as_occupied,
    check_probes,
    to_numpy,
)
from hir_sdk.ranking.retrieval.token_bags import TokenBags

# codewords probed per codebook by default: the retrieval the SDK evaluates and serves
DEFAULT_PROBES = 16


def probe_weights(
    codeword_scores: ArrayLike,
    probes: int | Sequence[int],
    *,
    occupied: ArrayLike | None = None,
) -> np.ndarray:
    """Dense multi-probe bags from (B, M, K) per-codeword query scores.

    Args:
        codeword_scores: (B, M, K) finite scores, higher = more relevant.
        probes: codewords probed per codebook, one int for all or M ints, each in [0, K).
        occupied: (M, K) bool, the codewords that may be probed (see the module).

    Returns:
        (B, M*K) float32 weights >= 0 (0 = token not in the bag), token `m * K + c`.
    """
    scores, per_level = _checked(codeword_scores, probes, occupied)
    num, levels, size = scores.shape
    weights = np.zeros_like(scores)  # (B, M, K)
    for m in np.flatnonzero(per_level):
        cut = size - 1 - int(per_level[m])  # ascending position of the (P+1)-th highest
        if cut == 0:
            threshold = scores[:, m].min(axis=1, keepdims=True)  # (B, 1)
        else:
            threshold = np.partition(scores[:, m], cut, axis=1)[:, cut : cut + 1]
        np.maximum(scores[:, m] - threshold, 0, out=weights[:, m])
    return weights.reshape(num, levels * size)


def probe_bags(
    codeword_scores: ArrayLike,
    probes: int | Sequence[int],
    *,
    occupied: ArrayLike | None = None,
) -> TokenBags:
    """The bags of `probe_weights` as `TokenBags`: only the probed tokens (at most
    sum_m P_m per query) instead of a dense (B, M*K) array, which is what makes few-probe
    queries cheap. `codeword_scores` may hold only the first codebooks (B, M', K), for
    an index searched with `gather_codebooks <= M'` (`occupied` may still be (M, K))."""
    scores, per_level = _checked(codeword_scores, probes, occupied)
    num, _, size = scores.shape
    tokens, weights = [], []
    for m in np.flatnonzero(per_level):
        # (B, P+1) the highest scores (torch's top-k is several times faster than an
        # argpartition; which of several codewords tied at the threshold it returns does
        # not matter, their weight is 0)
        column = torch.from_numpy(scores[:, m])
        found = torch.topk(column, int(per_level[m]) + 1, dim=1, sorted=False)
        values, top = found.values.numpy(), found.indices.numpy()
        ascending = np.argsort(top, axis=1)  # each bag's tokens in ascending order
        top = np.take_along_axis(top, ascending, axis=1)
        values = np.take_along_axis(values, ascending, axis=1)
        weights.append(values - values.min(axis=1, keepdims=True))  # the same float32 subtraction
        tokens.append(m * size + top)
    return bags_of(tokens, weights, num)


def bags_of(tokens: list[np.ndarray], weights: list[np.ndarray], num: int) -> TokenBags:
    """`TokenBags` of the positive weights of (B, P_m) token and weight blocks, one block
    per codebook in codebook order, each block's tokens ascending per row (so each bag's
    tokens are sorted)."""
    token = np.concatenate([np.zeros((num, 0), np.int64), *tokens], axis=1)
    weight = np.concatenate([np.zeros((num, 0), np.float32), *weights], axis=1)
    bag, slot = np.nonzero(weight > 0)  # by bag, then token
    offsets = np.zeros(num + 1, dtype=np.int64)
    np.cumsum(np.bincount(bag, minlength=num), out=offsets[1:])
    return TokenBags(offsets, token[bag, slot], weight[bag, slot])


def _checked(
    codeword_scores: ArrayLike, probes: int | Sequence[int], occupied: ArrayLike | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(B, M, K) float32 scores (the unoccupied codewords' below every other score of
    the query) and (M,) probes per codebook, or `InputError`."""
    scores = to_numpy(codeword_scores)
    if scores.ndim != 3 or scores.dtype.kind != "f" or not np.isfinite(scores).all():
        raise InputError(
            f"codeword_scores must be a finite float (B, M, K) array, got {scores.shape} "
            f"{scores.dtype}"
        )
    scores = scores.astype(np.float32, copy=False)
    levels, size = scores.shape[1], scores.shape[2]
    per_level = check_probes(probes, levels, size)
    if occupied is not None:
        held = as_occupied(occupied, levels, size)
        lowest = scores.min(axis=(1, 2), keepdims=True)  # (B, 1, 1)
        floor = lowest - np.float32(1.0)  # below it, also where float32 loses the 1
        floor = np.where(floor < lowest, floor, np.nextafter(lowest, np.float32(-np.inf)))
        scores = np.where(held[None], scores, floor).astype(np.float32, copy=False)
    return scores, per_level
