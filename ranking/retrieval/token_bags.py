"""`TokenBags`: a batch of weighted bags of BoM tokens, the query type of the index.

A bag maps global token ids (`m * K + code`) to positive weights. A batch is stored
jagged, like a TorchRec `KeyedJaggedTensor` with one key:

    bag 0: {3: 1.0, 17: 0.5}     offsets  [0,        2,   3,            6]
    bag 1: {5: 2.0}              tokens   [3, 17,    5,   0, 9, 12]
    bag 2: {0: 1., 9: 1., 12: 1.}  weights  [1., .5,   2.,  1., 1., 1.]

Invariants (checked on construction): `offsets` starts at 0 and never decreases; tokens
are sorted and unique within a bag; weights are finite and > 0 (float32). `from_flat`
builds valid bags from loose triples: it sums repeated tokens and drops zero weights.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, as_codes, check_rows, to_numpy


@dataclass(frozen=True)
class TokenBags:
    """A batch of B weighted token bags in jagged form.

    Attributes:
        offsets: (B + 1,) int64; bag b is `tokens[offsets[b]:offsets[b + 1]]`.
        tokens: (T,) int64 global token ids, sorted and unique within each bag.
        weights: (T,) float32, finite and > 0.
    """

    offsets: np.ndarray
    tokens: np.ndarray
    weights: np.ndarray

    def __post_init__(self) -> None:
        offsets = np.ascontiguousarray(to_numpy(self.offsets), dtype=np.int64)
        tokens = np.ascontiguousarray(to_numpy(self.tokens), dtype=np.int64)
        weights = np.ascontiguousarray(to_numpy(self.weights), dtype=np.float32)
        object.__setattr__(self, "offsets", offsets)
        object.__setattr__(self, "tokens", tokens)
        object.__setattr__(self, "weights", weights)
        if offsets.ndim != 1 or offsets.size < 1 or offsets[0] != 0:
            raise InputError("TokenBags: offsets must be a 1-D array starting at 0")
        if tokens.ndim != 1 or weights.shape != tokens.shape or offsets[-1] != tokens.size:
            raise InputError(
                f"TokenBags: tokens {tokens.shape} and weights {weights.shape} must be 1-D, "
                f"of equal length offsets[-1] = {offsets[-1]}"
            )
        if (np.diff(offsets) < 0).any():
            raise InputError("TokenBags: offsets must not decrease")
        if tokens.size and tokens.min() < 0:
            raise InputError("TokenBags: token ids must be >= 0")
        check_rows(
            np.isfinite(weights) & (weights > 0),
            "TokenBags: weights must be finite and > 0",
            lambda i: f"token {tokens[i]}: weight {weights[i]}",
        )
        same_bag = np.ones(max(tokens.size - 1, 0), dtype=bool)  # pair (i, i + 1) in one bag
        inner = offsets[1:-1]
        same_bag[inner[(inner > 0) & (inner < tokens.size)] - 1] = False
        if (same_bag & (np.diff(tokens) <= 0)).any():
            raise InputError("TokenBags: tokens must be sorted and unique within each bag")

    @property
    def num_bags(self) -> int:
        return self.offsets.size - 1

    def __len__(self) -> int:
        return self.num_bags

    def bag_of_entry(self) -> np.ndarray:
        """(T,) int64: the bag each token entry belongs to."""
        return np.repeat(np.arange(self.num_bags, dtype=np.int64), np.diff(self.offsets))

    def bag(self, b: int) -> dict[int, float]:
        """Bag `b` as a plain {token: weight} dict (for inspection and tests)."""
        lo, hi = self.offsets[b], self.offsets[b + 1]
        return dict(zip(self.tokens[lo:hi].tolist(), self.weights[lo:hi].tolist(), strict=True))

    def slice(self, start: int, stop: int) -> TokenBags:
        """Bags `start:stop` (0 <= start <= stop <= B)."""
        lo, hi = self.offsets[start], self.offsets[stop]
        return TokenBags(
            self.offsets[start : stop + 1] - lo, self.tokens[lo:hi], self.weights[lo:hi]
        )

    @classmethod
    def from_flat(
        cls,
        bag_index: ArrayLike,
        tokens: ArrayLike,
        weights: ArrayLike | None = None,
        *,
        num_bags: int | None = None,
    ) -> TokenBags:
        """Bags from loose (bag, token, weight) triples, in any order.

        Repeated (bag, token) pairs have their weights summed (in float64, in input
        order); pairs whose total is 0 are dropped. Weights must be finite and >= 0.

        Args:
            bag_index: (T,) int, the bag of each entry, in [0, num_bags).
            tokens: (T,) int global token ids >= 0.
            weights: (T,) float, default all 1.
            num_bags: B; default `bag_index.max() + 1`.
        """
        bag = to_numpy(bag_index)
        tok = to_numpy(tokens)
        if bag.ndim != 1 or tok.shape != bag.shape or (bag.size and bag.dtype.kind not in "iu"):
            raise InputError(
                f"TokenBags.from_flat: bag_index {bag.shape} and tokens {tok.shape} must be "
                "1-D integer arrays of equal length"
            )
        if tok.size and tok.dtype.kind not in "iu":
            raise InputError(f"TokenBags.from_flat: tokens must be integers, got {tok.dtype}")
        bag = bag.astype(np.int64)
        tok = tok.astype(np.int64)
        w = np.ones(bag.size) if weights is None else to_numpy(weights).astype(np.float64)
        if w.shape != bag.shape:
            raise InputError(f"TokenBags.from_flat: weights {w.shape} must match {bag.shape}")
        check_rows(
            np.isfinite(w) & (w >= 0),
            "TokenBags.from_flat: weights must be finite and >= 0",
            lambda i: f"entry {i}: weight {w[i]}",
        )
        count = int(bag.max()) + 1 if num_bags is None and bag.size else int(num_bags or 0)
        if bag.size and (bag.min() < 0 or bag.max() >= count or tok.min() < 0):
            raise InputError(
                f"TokenBags.from_flat: bag_index must lie in [0, {count}) and tokens be >= 0"
            )
        bag, tok, total = sum_repeated(bag, tok, w)
        keep = total > 0
        return cls(offsets_of(bag[keep], count), tok[keep], total[keep].astype(np.float32))

    @classmethod
    def from_codes(cls, codes: ArrayLike, codebook_size: int) -> TokenBags:
        """One bag per row of (B, M) `codes`: its M tokens `m * K + codes[b, m]`, weight 1."""
        array = as_codes(codes, codebook_size)
        num, levels = array.shape
        tokens = array + np.arange(levels, dtype=np.int64) * codebook_size  # (B, M), sorted
        offsets = np.arange(0, num * levels + 1, levels, dtype=np.int64)
        return cls(offsets, tokens.reshape(-1), np.ones(num * levels, dtype=np.float32))


def sum_repeated(
    bag: np.ndarray, tok: np.ndarray, weights: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sort (bag, token, weight) triples by (bag, token) and sum the weights of repeated
    pairs in float64, in input order. Returns (bag, token, total), each (U,)."""
    order = np.lexsort((tok, bag))  # stable: repeated pairs keep their input order
    bag, tok, weights = bag[order], tok[order], weights[order].astype(np.float64)
    start = np.ones(bag.size, dtype=bool)
    start[1:] = (bag[1:] != bag[:-1]) | (tok[1:] != tok[:-1])
    first = np.flatnonzero(start)
    total = np.add.reduceat(weights, first) if first.size else weights[:0]
    return bag[first], tok[first], total


def offsets_of(bag: np.ndarray, num_bags: int) -> np.ndarray:
    """(num_bags + 1,) int64 offsets of sorted (T,) bag indices."""
    offsets = np.zeros(num_bags + 1, dtype=np.int64)
    np.cumsum(np.bincount(bag, minlength=num_bags), out=offsets[1:])
    return offsets
