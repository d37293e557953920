"""A content-addressed, append-only store of vectors on disk: `.npz` shards, no pickle.

Notable:
- layout: one folder per model (the caller names it), holding `MODEL` (the full model id,
  for people) and immutable shards `shard-<digest>.npz`;
- a shard holds `keys` (n, 32) uint8 sha256 digests and `vectors` (n, D) float32, and is
  named after the sha256 of those bytes, so damage inside a shard is detected on read;
- shards are written through a temporary file and a rename (`hir_sdk.io.atomic`) and are
  never modified: a crashed run leaves whole shards or hidden temporaries, and concurrent
  runs add shards side by side (a key in several shards: the first in name order wins);
- a shard that cannot be read or fails its checks is ignored with a `CacheWarning` and
  renamed to `*.corrupt` (so it warns once); its vectors are simply computed again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import warnings
import zipfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from hir_sdk.io.atomic import atomic_write_npz, atomic_write_text

KEY_BYTES = 32  # sha256 digest
SHARD_GLOB = "shard-*.npz"
MODEL_FILE = "MODEL"


class CacheWarning(UserWarning):
    """A cache shard was unreadable or damaged and has been set aside."""


def _digest(keys: np.ndarray, vectors: np.ndarray) -> str:
    hasher = hashlib.sha256(np.ascontiguousarray(keys).tobytes())
    hasher.update(np.ascontiguousarray(vectors).tobytes())
    return hasher.hexdigest()[:32]


class VectorCache:
    """Vectors by 32-byte key, in memory and (when `folder` is given) in shards on disk.

    Args:
        folder: the shard folder, created on first write; `None` keeps vectors in memory.
        dim: width of every vector.
        model_id: written to `folder/MODEL` for people browsing the cache.
    """

    def __init__(self, folder: Path | None, dim: int, model_id: str = "") -> None:
        self.folder = folder
        self.dim = dim
        self.model_id = model_id
        self._index: dict[bytes, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix = np.zeros((0, dim), dtype=np.float32)
        self._loaded = folder is None

    def __len__(self) -> int:
        return len(self._index)

    def missing(self, keys: Sequence[bytes]) -> list[int]:
        """Positions of `keys` that have no vector yet (reads the shards on first use)."""
        self._load()
        return [i for i, key in enumerate(keys) if key not in self._index]

    def vectors(self, keys: Sequence[bytes]) -> np.ndarray:
        """(len(keys), dim) float32 vectors of keys that are all present."""
        self._load()
        if self._blocks:
            self._matrix = np.concatenate([self._matrix, *self._blocks])
            self._blocks = []
        rows = np.fromiter((self._index[key] for key in keys), dtype=np.int64, count=len(keys))
        return self._matrix[rows]

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        """Remember new vectors and, with a folder, write them as one new shard."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)  # (n, dim)
        if vectors.shape != (len(keys), self.dim):
            raise ValueError(f"expected ({len(keys)}, {self.dim}) vectors, got {vectors.shape}")
        if not keys:
            return
        key_array = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), KEY_BYTES)
        self._remember(key_array, vectors)
        if self.folder is None:
            return
        if not (self.folder / MODEL_FILE).exists():
            atomic_write_text(self.folder / MODEL_FILE, self.model_id + "\n")
        shard = self.folder / f"shard-{_digest(key_array, vectors)}.npz"
        atomic_write_npz(shard, keys=key_array, vectors=vectors)

    # ---- internals -------------------------------------------------------------------
    def _remember(self, keys: np.ndarray, vectors: np.ndarray) -> None:
        raw = keys.tobytes()
        base = len(self._index)
        fresh = []
        for i in range(len(keys)):
            key = raw[i * KEY_BYTES : (i + 1) * KEY_BYTES]
            if key not in self._index:
                self._index[key] = base + len(fresh)
                fresh.append(i)
        if fresh:
            self._blocks.append(vectors[fresh] if len(fresh) < len(keys) else vectors)

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        assert self.folder is not None
        for path in sorted(self.folder.glob(SHARD_GLOB)):
            shard = self._read(path)
            if shard is not None:
                self._remember(*shard)

    def _read(self, path: Path) -> tuple[np.ndarray, np.ndarray] | None:
        try:
            with np.load(path, allow_pickle=False) as data:
                keys, vectors = data["keys"], data["vectors"]
            problem = self._check(path, keys, vectors)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as exc:
            problem = f"unreadable ({type(exc).__name__}: {exc})"
        if problem is None:
            return keys, vectors
        warnings.warn(
            f"content cache shard {path} is {problem}; ignoring it (renamed to "
            f"{path.name}.corrupt) and encoding its texts again",
            CacheWarning,
            stacklevel=4,
        )
        with contextlib.suppress(OSError):
            os.replace(path, path.with_name(path.name + ".corrupt"))
        return None

    def _check(self, path: Path, keys: np.ndarray, vectors: np.ndarray) -> str | None:
        if keys.dtype != np.uint8 or keys.ndim != 2 or keys.shape[1] != KEY_BYTES:
            return f"damaged (keys {keys.dtype} {keys.shape})"
        if vectors.dtype != np.float32 or vectors.shape != (len(keys), self.dim):
            return f"damaged (vectors {vectors.dtype} {vectors.shape})"
        if path.name != f"shard-{_digest(keys, vectors)}.npz":
            return "damaged (its content does not match its name)"
        if not np.isfinite(vectors).all():
            return "damaged (non-finite vectors)"
        return None
