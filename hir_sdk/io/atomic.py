"""Atomic writes: a file or a whole output folder appears complete or not at all.

Everything is written under a hidden temporary sibling first and renamed into place at
the end; on any exception the temporary is removed, so a failed command leaves nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from hir_sdk.errors import InputError


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def check_free(final: str | Path, overwrite: bool) -> None:
    """An `InputError` unless `final` may be written (absent, empty, or `overwrite`):
    for commands that check before their long work, as `atomic_output_dir` does again."""
    final = Path(final)
    if final.exists() and not overwrite:
        if final.is_dir() and not any(final.iterdir()):
            return
        raise InputError(
            "output already exists; choose another path or pass --overwrite", file=final
        )


@contextlib.contextmanager
def atomic_output_dir(final: str | Path, *, overwrite: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that replaces `final` when the block succeeds.

    Raises `InputError` up front when `final` exists (unless it is an empty folder or
    `overwrite` is set).
    """
    final = Path(final)
    check_free(final, overwrite)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-", dir=final.parent))
    tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
    try:
        yield tmp
        if final.exists():
            old = final.with_name(f".{final.name}.old-{os.getpid()}")
            final.rename(old)
            tmp.rename(final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 `text` to `path` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))
