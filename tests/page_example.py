"""The runnable example of a docs page: the first python block after its "## Example"
heading, and the text block that says what it prints."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def page_example(page: str) -> tuple[str, str]:
    """(code, expected output) of `docs/<page>`."""
    section = (DOCS / page).read_text(encoding="utf-8").split("## Example", 1)[1]
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", section, flags=re.S)[:2]
    return code, printed


def exec_page_example(page: str) -> tuple[dict[str, object], str]:
    """Run the example in this process: its globals, and what it printed."""
    code, _ = page_example(page)
    out = io.StringIO()
    namespace: dict[str, object] = {"__name__": "docs_example"}
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(DOCS / page), "exec"), namespace)
    return namespace, out.getvalue()


def run_page_example(page: str) -> None:
    """Run the example in this process and compare what it prints with the page."""
    _, printed = exec_page_example(page)
    assert printed == page_example(page)[1]
