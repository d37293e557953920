"""Artifact I/O: atomic writes, the output-folder rule and data fingerprints."""

from hir_sdk.io.atomic import (
    atomic_output_dir,
    atomic_write_bytes,
    atomic_write_npz,
    atomic_write_text,
)
from hir_sdk.io.fingerprint import fingerprint_files
from hir_sdk.io.output_folder import MARKER_FILE, check_free, check_new, check_ours, claim_dir

__all__ = [
    "MARKER_FILE",
    "atomic_output_dir",
    "atomic_write_bytes",
    "atomic_write_npz",
    "atomic_write_text",
    "check_free",
    "check_new",
    "check_ours",
    "claim_dir",
    "fingerprint_files",
]
