"""The JSON metadata file of a saved artifact folder, read back with one check of its
format version; every failure is one `InputError` naming the folder or the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hir_sdk.errors import InputError


def read_saved_meta(folder: Path, file_name: str, what: str, version: int) -> dict[str, Any]:
    """`folder / file_name` as a dict, for a saved `what` (e.g. "quantizer") written in
    format `version`; otherwise an `InputError`: not saved here, unreadable, or another
    format version."""
    file = folder / file_name
    if not file.is_file():
        raise InputError(f"not a saved {what} (no {file_name})", file=folder)
    try:
        meta = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InputError(f"cannot read {what} metadata: {err}", file=file) from None
    if not isinstance(meta, dict):
        raise InputError(f"{what} metadata must be a JSON object", file=file)
    if meta.get("format_version") != version:
        raise InputError(
            f"{what} format {meta.get('format_version')} is not supported (expected {version})",
            file=file,
        )
    return meta
