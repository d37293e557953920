"""The example in docs/export.md runs and prints what the page says it prints (it is also
the test of a successful `export_run` with a check from scratch)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.page_example import run_page_example


def test_export_page_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's mkdtemp
    run_page_example("export.md")
