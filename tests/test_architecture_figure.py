"""The architecture page's data-flow picture is what `docs/figures/draw_architecture.py`
draws: valid SVG, and the committed file is up to date with the script."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_committed_svg_is_the_scripts_output(tmp_path: Path) -> None:
    script = DOCS / "figures" / "draw_architecture.py"
    subprocess.run([sys.executable, str(script), str(tmp_path / "architecture.svg")], check=True)
    drawn = (tmp_path / "architecture.svg").read_bytes()
    assert drawn == (DOCS / "figures" / "architecture.svg").read_bytes()
    root = ET.fromstring(drawn)
    texts = {"".join(t.itertext()) for t in root.iter("{http://www.w3.org/2000/svg}text")}
    for stage in ("TemporalGraph", "HierarchicalEncoder", "BoM tokens", "paired A/B"):
        assert stage in texts
    assert "figures/architecture.svg" in (DOCS / "architecture.md").read_text(encoding="utf-8")
