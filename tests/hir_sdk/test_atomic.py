"""Atomic outputs: all or nothing, with ordinary permissions."""

from __future__ import annotations

import os
import stat

import pytest

from hir_sdk.errors import InputError
from hir_sdk.io import atomic_output_dir, atomic_write_text


def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_output_dir_appears_complete_with_default_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        with atomic_output_dir(tmp_path / "out") as tmp:
            (tmp / "a.txt").write_text("x")
            assert not (tmp_path / "out").exists()
        atomic_write_text(tmp_path / "f.txt", "y")
    finally:
        os.umask(mask)
    assert (tmp_path / "out" / "a.txt").read_text() == "x"
    assert _mode(tmp_path / "out") == 0o755
    assert _mode(tmp_path / "f.txt") == 0o644


def test_failure_leaves_nothing(tmp_path):
    with pytest.raises(RuntimeError), atomic_output_dir(tmp_path / "out") as tmp:
        (tmp / "half.txt").write_text("x")
        raise RuntimeError("boom")
    assert list(tmp_path.iterdir()) == []


def test_overwrite_replaces_and_refusal_keeps(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "old.txt").write_text("old")
    with pytest.raises(InputError, match="already exists"), atomic_output_dir(tmp_path / "out"):
        pass
    assert (tmp_path / "out" / "old.txt").exists()
    with atomic_output_dir(tmp_path / "out", overwrite=True) as tmp:
        (tmp / "new.txt").write_text("new")
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["new.txt"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]
