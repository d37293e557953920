"""Counter-based random numbers: a uniform for every (seed, key, ...) tuple, by hashing.

Samples then depend only on *what* is sampled (anchor, cutoff, edge id, step), never on
batch composition, worker count or call order: that is what makes the loader's output
bit-identical for any number of workers. SplitMix64 finalizer, vectorised in uint64.
"""

from __future__ import annotations

import numpy as np

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def mix(x: np.ndarray) -> np.ndarray:
    """SplitMix64 finalizer of a uint64 array (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        z = np.asarray(x, dtype=np.uint64) + _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        return z ^ (z >> np.uint64(31))


def hash_keys(seed: int, *keys: np.ndarray) -> np.ndarray:
    """One uint64 hash per row of the broadcast `keys`."""
    return extend_hash(mix(np.uint64(seed & 0xFFFFFFFFFFFFFFFF)), *keys)


def extend_hash(h: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """`hash_keys(seed, *first, *keys)` from `h = hash_keys(seed, *first)`: keys shared by
    many rows (an anchor and its cutoff) are hashed once, then gathered."""
    for key in keys:
        h = mix(h ^ np.asarray(key).astype(np.uint64))
    return h


def to_uniform(h: np.ndarray) -> np.ndarray:
    """Uniforms in the open interval (0, 1) from uint64 hashes."""
    return ((h >> np.uint64(11)).astype(np.float64) + 0.5) * (1.0 / (1 << 53))


def uniform(seed: int, *keys: np.ndarray) -> np.ndarray:
    """Uniforms in the open interval (0, 1), one per row of the broadcast `keys`."""
    return to_uniform(hash_keys(seed, *keys))
