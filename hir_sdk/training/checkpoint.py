"""Checkpoints: everything needed to continue bit-identically, written atomically and read
back with `weights_only=True` (tensors and plain containers only, no arbitrary pickle)."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import torch

from hir_sdk.errors import InputError
from hir_sdk.io.atomic import fsync_dir, fsync_file


def save_checkpoint(state: dict[str, Any], path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            torch.save(state, handle)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename publishes it
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def copy_checkpoint(source: str | Path, path: str | Path) -> None:
    """Make `path` the checkpoint at `source`, atomically: a hard link where the file system
    has them (no second write; a later `save_checkpoint` to `source` replaces its directory
    entry, not the shared file, so `path` keeps this version), else a byte copy."""
    source, path = Path(source), Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    try:
        os.unlink(tmp)
        try:
            os.link(source, tmp)
        except OSError:
            shutil.copyfile(source, tmp)
            fsync_file(tmp)
        os.replace(tmp, path)
        fsync_dir(path.parent)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise InputError("checkpoint not found", file=path) from None
    except Exception as err:  # torch raises several types for corrupt or unsafe files
        raise InputError(f"cannot load checkpoint: {err}", file=path) from None


def state_hash(state_dict: dict[str, torch.Tensor]) -> str:
    """SHA-256 over parameter names and exact bytes: equal iff bit-identical."""
    digest = hashlib.sha256()
    for name in sorted(state_dict):
        digest.update(name.encode())
        buffer = io.BytesIO()
        tensor = state_dict[name].detach().cpu().contiguous()
        buffer.write(
            tensor.numpy().tobytes()
            if tensor.dtype != torch.bfloat16
            else tensor.view(torch.int16).numpy().tobytes()
        )
        digest.update(buffer.getvalue())
    return digest.hexdigest()
