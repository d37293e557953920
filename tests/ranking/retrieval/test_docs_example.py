"""The example in docs/retrieval.md runs and prints what the page says it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "retrieval.md"


def test_retrieval_page_example() -> None:
    example = PAGE.read_text(encoding="utf-8").split("## Example", 1)[1]
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", example, flags=re.S)[:2]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {"__name__": "docs_example"})
    assert out.getvalue() == printed
