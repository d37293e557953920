"""Data fingerprints: a short content hash that ties an artifact to the data it came from."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

_CHUNK = 1 << 22


def fingerprint_files(paths: Iterable[str | Path]) -> str:
    """SHA-256 over the names and bytes of `paths` (in the given order), as 16 hex digits."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        digest.update(path.name.encode())
        digest.update(b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()[:16]
