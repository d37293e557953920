"""Set aggregation: the BoM of a segment (an audience, an advertiser's ads, ...) as one
weighted bag of tokens.

The weight of a token is the weighted share of members that hold it:

    weight(t) = sum of w_i over members i with t in BoM(i)  /  sum of w_i over all members

so a one-member segment gives that member's own bag (every weight 1), and weights lie in
(0, 1]. Querying the index with the segment's bag scores an item by how much of the
segment shares its tokens. Many segments are aggregated in one vectorised call with
`segments`.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, as_codes, check_rows, to_numpy
from hir_sdk.ranking.retrieval.token_bags import TokenBags, offsets_of, sum_repeated


def aggregate_tokens(
    codes_of_members: ArrayLike,
    codebook_size: int,
    weights: ArrayLike | None = None,
    *,
    segments: ArrayLike | None = None,
    num_segments: int | None = None,
) -> TokenBags:
    """Aggregate members' BoM codes into one weighted token bag per segment.

    Args:
        codes_of_members: (n, M) int codes in [0, codebook_size).
        codebook_size: K, the number of codewords per codebook.
        weights: (n,) finite, >= 0 member weights (default 1 each); every segment needs a
            positive total.
        segments: (n,) int segment of each member in [0, num_segments); default: all
            members form one segment.
        num_segments: number of segments (default `segments.max() + 1`).

    Returns:
        `TokenBags` with one bag per segment, tokens `m * K + code`, weights in (0, 1].
    """
    codes = as_codes(codes_of_members, codebook_size, "codes_of_members")
    num, levels = codes.shape
    member_w = np.ones(num) if weights is None else to_numpy(weights).astype(np.float64)
    if member_w.shape != (num,) or not np.isfinite(member_w).all() or (member_w < 0).any():
        raise InputError(f"weights must be ({num},), finite and >= 0, got shape {member_w.shape}")
    seg = np.zeros(num, dtype=np.int64) if segments is None else to_numpy(segments)
    if seg.shape != (num,) or (num and seg.dtype.kind not in "iu"):
        raise InputError(f"segments must be ({num},) integers, got {seg.shape} {seg.dtype}")
    seg = seg.astype(np.int64)
    count = (int(seg.max()) + 1 if num else 1) if num_segments is None else int(num_segments)
    if num and (seg.min() < 0 or seg.max() >= count):
        raise InputError(f"segments must lie in [0, {count})")
    totals = np.bincount(seg, weights=member_w, minlength=count)  # (S,)
    check_rows(
        totals > 0,
        "every segment needs members with a positive total weight",
        lambda s: f"segment {s}",
    )
    tokens = codes + np.arange(levels, dtype=np.int64) * codebook_size  # (n, M)
    bag, tok, held = sum_repeated(
        np.repeat(seg, levels), tokens.reshape(-1), np.repeat(member_w, levels)
    )
    keep = held > 0
    share = held[keep] / totals[bag[keep]]  # float64, then stored as float32
    return TokenBags(offsets_of(bag[keep], count), tok[keep], share.astype(np.float32))
