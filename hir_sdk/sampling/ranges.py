"""Positions within runs, for the flat jagged arrays of sampling."""

from __future__ import annotations

import numpy as np


def ranges(lengths: np.ndarray) -> np.ndarray:
    """0 .. l-1 for each l of `lengths`, concatenated."""
    lengths = np.asarray(lengths, dtype=np.int64)
    return np.arange(int(lengths.sum()), dtype=np.int64) - np.repeat(
        np.cumsum(lengths) - lengths, lengths
    )
