"""Data fingerprints: a short content hash that ties an artifact to the data it came from."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path
from threading import Event

_CHUNK = 1 << 22


def fingerprint_files(
    paths: Iterable[str | Path], *, root: str | Path | None = None, stop: Event | None = None
) -> str:
    """SHA-256 over the names and bytes of `paths` (in the given order), as 16 hex digits.
    A name is the path relative to `root` when given (`edges.parquet/part-00000.parquet`
    for a part of a table stored as a folder: moving a part to another table changes the
    fingerprint), else the file's name.

    Setting `stop` (from another thread) ends the hashing early with an empty string: the
    caller no longer wants the fingerprint."""
    digest = hashlib.sha256()
    for path in paths:
        path = Path(path)
        name = path.name if root is None else path.relative_to(root).as_posix()
        digest.update(name.encode())
        digest.update(b"\0")
        with path.open("rb") as handle:
            while chunk := handle.read(_CHUNK):
                if stop is not None and stop.is_set():
                    return ""
                digest.update(chunk)
        digest.update(b"\0")
    return digest.hexdigest()[:16]
