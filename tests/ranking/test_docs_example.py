"""The example in docs/ranking.md runs and prints what the page says it prints."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.page_example import run_page_example

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)


def test_ranking_page_example(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the example's mkdtemp
    run_page_example("ranking.md")
