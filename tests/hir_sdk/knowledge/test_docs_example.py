"""The example in docs/knowledge.md runs and prints what the page says it prints."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from hir_sdk.knowledge import KnowledgeBase
from tests.page_example import run_page_example


def test_knowledge_page_example(
    cache_root: Path, tiny_kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tiny_kb` has put the tiny world's vectors in the session cache: the example reads
    them from there (through `HIR_CACHE_DIR`) instead of running the model again."""
    monkeypatch.setenv("HIR_CACHE_DIR", str(cache_root))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    run_page_example("knowledge.md")
