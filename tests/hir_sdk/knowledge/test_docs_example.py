"""The example in docs/knowledge.md runs and prints what the page says it prints."""

from __future__ import annotations

import contextlib
import io
import re
import tempfile
from pathlib import Path

import pytest

from hir_sdk.knowledge import KnowledgeBase

PAGE = Path(__file__).resolve().parents[3] / "docs" / "knowledge.md"


def test_knowledge_page_example(
    cache_root: Path, tiny_kb: KnowledgeBase, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`tiny_kb` has put the tiny world's vectors in the session cache: the example reads
    them from there (through `HIR_CACHE_DIR`) instead of running the model again."""
    example = PAGE.read_text(encoding="utf-8").split("## Example", 1)[1]
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", example, flags=re.S)[:2]
    monkeypatch.setenv("HIR_CACHE_DIR", str(cache_root))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == printed
