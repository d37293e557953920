"""The example in docs/bom.md runs as a user would paste it (a fresh interpreter, an empty
working folder) and prints what the page says it prints."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[3] / "docs" / "bom.md"


def test_bom_page_example(tmp_path: Path) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Example", 1)[1]
    code, printed = re.findall(r"```(?:python|text)\n(.*?)```", section, flags=re.S)[:2]
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == printed
    assert list(tmp_path.iterdir()) == []  # the example cleans up after itself
