"""The .npz files of the retrieval objects (`InvertedIndex`, `CellRouter`): tagged with a
format name and version, written atomically, read without pickle, and every problem one
`InputError` naming the file."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.io import atomic_write_npz


def write_arrays(path: str | Path, tag: str, version: int, arrays: dict[str, np.ndarray]) -> None:
    """Write `arrays` and the format tag / version to `path` (.npz): temp file, rename."""
    atomic_write_npz(path, format=np.array(tag), format_version=np.array(version), **arrays)


def read_arrays(
    path: str | Path, tag: str, version: int, needed: Iterable[str], noun: str
) -> dict[str, np.ndarray]:
    """The arrays of a file `write_arrays` wrote with this tag and version, holding at least
    `needed`; `noun` names the object in the messages ("index", "cell router")."""
    try:
        with np.load(path, allow_pickle=False) as data:
            arrays = {name: data[name] for name in data.files}
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read a saved {noun}: {err}", file=path) from err
    missing = sorted({"format", "format_version", *needed} - arrays.keys())
    if missing or str(arrays["format"]) != tag:
        what = f"missing {missing}" if missing else f"format tag {str(arrays['format'])!r}"
        raise InputError(f"not a saved {tag} file ({what})", file=path)
    found = arrays["format_version"]
    if found.shape != () or found.dtype.kind not in "iu":
        raise InputError(
            f"format_version must be one integer, found {found.dtype} {found.shape}", file=path
        )
    if int(found) != version:
        raise InputError(
            f"saved {noun} format version {int(found)}, this version reads {version}",
            file=path,
        )
    return arrays
