"""The example in docs/bom.md runs as a user would paste it (a fresh interpreter, an empty
working folder) and prints what the page says it prints."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.page_example import page_example


def test_bom_page_example(tmp_path: Path) -> None:
    code, printed = page_example("bom.md")
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == printed
    assert list(tmp_path.iterdir()) == []  # the example cleans up after itself
