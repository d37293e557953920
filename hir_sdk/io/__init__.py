"""Artifact I/O: atomic writes and data fingerprints."""

from hir_sdk.io.atomic import atomic_output_dir, atomic_write_bytes, atomic_write_text
from hir_sdk.io.fingerprint import fingerprint_files

__all__ = ["atomic_output_dir", "atomic_write_bytes", "atomic_write_text", "fingerprint_files"]
