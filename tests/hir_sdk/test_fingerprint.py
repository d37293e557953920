"""Data fingerprints: what they depend on, and the early stop `load_dataset` uses."""

from __future__ import annotations

from threading import Event

from hir_sdk.io.fingerprint import fingerprint_files
from hir_sdk.schema import load_dataset


def test_fingerprint_follows_names_bytes_and_order(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(b"x" * 10_000_000)  # several read chunks
    b.write_bytes(b"y")
    first = fingerprint_files([a, b])
    assert len(first) == 16 and first == fingerprint_files([a, b])
    assert fingerprint_files([b, a]) != first
    b.write_bytes(b"z")
    assert fingerprint_files([a, b]) != first


def test_a_set_stop_ends_the_hashing_with_no_fingerprint(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"x" * 100)
    stop = Event()
    stop.set()
    assert fingerprint_files([path], stop=stop) == ""
    assert fingerprint_files([path], stop=Event()) == fingerprint_files([path])


def test_load_dataset_fingerprints_the_files_it_validated(write_dataset):
    root = write_dataset()
    files = ["manifest.toml", "nodes.parquet", "edges.parquet", "content.parquet"]
    assert load_dataset(root).fingerprint == fingerprint_files([root / f for f in files])
