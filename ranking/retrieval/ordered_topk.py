"""Deterministic top-k: by score (descending), ties broken by item row (ascending).

`torch.topk` leaves the order of equal scores unspecified. Packing a float32 score and a
row into one int64 key, whose integer order is exactly (score desc, row asc), makes every
selection a top-k over distinct integers, so the answer is unique:

    key = sortable(score) << 32  |  (2**32 - 1 - row)

`sortable` maps the float32 bit pattern to an int32 with the same order (negative floats
have their magnitude bits flipped; -0.0 is folded onto +0.0). Rows must be < 2**31.
`PAD_KEY` (int64 min) fills empty slots; it sorts below every real key and decodes to
row -1 and score -inf.
"""

from __future__ import annotations

import numpy as np

PAD_KEY = np.iinfo(np.int64).min
_LOW = np.int64(0xFFFFFFFF)
_FLIP = np.int64(0x7FFFFFFF)


def encode_keys(scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """(...,) float32 scores and (...,) int64 rows -> (...,) int64 keys."""
    bits = (np.asarray(scores, dtype=np.float32) + np.float32(0.0)).view(np.int32)
    sortable = bits.astype(np.int64)
    sortable ^= (sortable >> 32) & _FLIP  # negative floats: flip the magnitude bits
    sortable <<= 32
    sortable |= _LOW - np.asarray(rows, dtype=np.int64)
    return sortable


def decode_keys(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Inverse of `encode_keys`: (scores float32, rows int64); `PAD_KEY` -> (-inf, -1)."""
    keys = np.asarray(keys, dtype=np.int64)
    pad = keys == PAD_KEY
    sortable = keys >> 32
    bits = np.where(sortable < 0, sortable ^ _FLIP, sortable).astype(np.int32)
    scores = np.where(pad, np.float32(-np.inf), bits.view(np.float32))
    rows = np.where(pad, -1, _LOW - (keys & _LOW))
    return scores.astype(np.float32), rows


def decode_rows(keys: np.ndarray) -> np.ndarray:
    """Just the rows of `decode_keys` (cheaper): int64, -1 for `PAD_KEY`."""
    rows = _LOW - (keys & _LOW)
    rows[keys == PAD_KEY] = -1
    return rows


def ordered_topk(keys: np.ndarray, k: int, *, ordered: bool = True) -> np.ndarray:
    """The min(k, L) largest keys of each row of (B, L) int64 `keys`, in descending order
    (in no particular order with `ordered=False`)."""
    width = min(k, keys.shape[1])
    if width < keys.shape[1]:
        keys = np.partition(keys, keys.shape[1] - width, axis=1)[:, keys.shape[1] - width :]
    return np.sort(keys, axis=1)[:, ::-1] if ordered else keys
