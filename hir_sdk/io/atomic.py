"""Atomic writes: a file or a whole output folder appears complete or not at all.

Everything is written under a hidden temporary sibling first and renamed into place at
the end; on any exception the temporary is removed, so a failed command leaves nothing.
Before the rename, the new files and their folders are flushed to disk (`fsync`), and
the parent folder after it, so a crash or power loss leaves the old output or the new
one, never a torn one.

An output folder follows the output-folder rule (`hir_sdk.io.output_folder`): it carries
the marker of its kind from the moment its temporary is created, and replaces only an
earlier output of the same kind, and only while it holds nothing hir-sdk did not write
(its marker lists every file when it is published). The temporary is named
`.NAME.tmp-HOST-PID-*` (a replaced folder waits as `.NAME.old-HOST-PID-*` until it is
removed); one that a killed process left behind is removed by the next write of NAME
when its process (on this host) is gone and it holds our marker. Nothing else is ever
removed.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import os
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from hir_sdk.io.output_folder import (
    Inputs,
    check_free,
    check_only_ours,
    marker_kind,
    seal_marker,
    write_marker,
)

__all__ = [
    "atomic_output_dir",
    "atomic_write_bytes",
    "atomic_write_text",
    "check_free",
    "fsync_dir",
    "fsync_file",
    "fsync_tree",
]


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def fsync_dir(path: str | Path) -> None:
    """Flush a folder's entries (a rename or a new file in it) to disk. File systems that
    cannot sync a folder (EINVAL, ENOTSUP) are left as they are."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as err:
        if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def fsync_file(path: str | Path) -> None:
    """Flush a file's bytes to disk."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_tree(root: str | Path) -> None:
    """Flush every file and folder under `root` (and `root` itself) to disk, deepest first
    (symbolic links are not followed)."""
    for folder, _, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(folder, name)
            if not os.path.islink(path):
                fsync_file(path)
        fsync_dir(folder)  # its sub-folders were flushed before it (deepest first)


def _host_tag() -> str:
    return hashlib.sha256(socket.gethostname().encode()).hexdigest()[:8]


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, another user's
        return True
    except OSError:
        return True  # unknown: keep it
    return True


def remove_stale(final: str | Path) -> list[Path]:
    """Remove the temporaries of `final` (`.NAME.tmp-*`, `.NAME.old-*`) that a killed
    process of this host left: only folders that hold our marker and whose process is
    gone. A replaced output that a crash left as `.NAME.old-*` while `final` is missing is
    put back as `final` instead. Returns the removed paths."""
    final = Path(final)
    parent, host = final.parent, _host_tag()
    removed: list[Path] = []
    if not parent.is_dir():
        return removed
    for what in ("tmp", "old"):
        prefix = f".{final.name}.{what}-{host}-"
        for entry in parent.iterdir():
            if not entry.name.startswith(prefix):
                continue
            pid = entry.name[len(prefix) :].split("-", 1)[0]
            if not pid.isdigit() or _pid_alive(int(pid)):
                continue
            if entry.is_symlink() or not entry.is_dir() or marker_kind(entry) is None:
                continue
            if what == "old" and not final.exists() and not final.is_symlink():
                entry.rename(final)  # the crash came between the two renames
                continue
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _stamp() -> str:
    return f"{_host_tag()}-{os.getpid()}-"


@contextlib.contextmanager
def atomic_output_dir(
    final: str | Path, *, kind: str, overwrite: bool = False, inputs: Inputs = ()
) -> Iterator[Path]:
    """Yield a temporary folder (marked as an output of `kind`) that becomes `final` when
    the block succeeds.

    Raises `InputError` up front (and again before publishing) when `final` may not be
    written: see `check_free` (an input, a folder that is not ours or not of `kind`, or
    an existing output without `overwrite`).
    """
    final = Path(final)
    remove_stale(final)
    check_free(final, kind=kind, overwrite=overwrite, inputs=inputs)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.tmp-{_stamp()}", dir=final.parent))
    try:
        tmp.chmod(0o777 & ~_umask())  # mkdtemp makes it private; the result should not be
        write_marker(tmp, kind)
        yield tmp
        check_free(final, kind=kind, overwrite=overwrite, inputs=inputs)
        seal_marker(tmp, kind)  # lists what was written, for a later --overwrite
        fsync_tree(tmp)
        if final.exists():
            old = final.with_name(f".{final.name}.old-{_stamp()}{secrets.token_hex(4)}")
            final.rename(old)
            try:
                # again, now that its name no longer leads to it: a file saved into the
                # old output since the check above puts it back instead of going with it
                check_only_ours(old, shown=final)
                tmp.rename(final)
            except BaseException:
                old.rename(final)
                raise
            fsync_dir(final.parent)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(final)
            fsync_dir(final.parent)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file, `fsync` and a rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-{_stamp()}", dir=path.parent)
    os.chmod(tmp, 0o666 & ~_umask())
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_npz(path: str | Path, **arrays: np.ndarray) -> None:
    """Write `arrays` to `path` as an uncompressed .npz (no pickle on reading), atomically."""
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    atomic_write_bytes(path, buffer.getvalue())


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write UTF-8 `text` to `path` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))
