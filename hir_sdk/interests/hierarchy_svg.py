"""A picture of the interest hierarchy: one column per coarse primitive (its label and
size), its largest finer primitives stacked below it. Plain, self-contained SVG text."""

from __future__ import annotations

from html import escape

import polars as pl

BOX_W, BOX_H, GAP, TOP = 190, 46, 14, 40


def _box(x: int, y: int, title: str, label: str, fill: str) -> list[str]:
    words = label.split()
    lines = [" ".join(words[:3]), " ".join(words[3:6])]
    out = [
        f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="{fill}" '
        'stroke="#556" stroke-width="1"/>',
        f'<text x="{x + 8}" y="{y + 15}" font-size="11" font-weight="bold">{escape(title)}</text>',
    ]
    for i, line in enumerate(lines):
        if line:
            out.append(
                f'<text x="{x + 8}" y="{y + 29 + 12 * i}" font-size="11">{escape(line)}</text>'
            )
    return out


def hierarchy_svg(
    coarse: pl.DataFrame, fine: pl.DataFrame, fine_parent: list[int], *, children: int = 4
) -> str:
    """SVG of two levels. `coarse` and `fine` are `label_primitives` tables; `fine_parent`
    maps each fine primitive id to its coarse parent id."""
    coarse = coarse.sort(["size", "primitive"], descending=[True, False])
    fine = fine.with_columns(
        parent=pl.col("primitive").map_elements(lambda k: fine_parent[k], return_dtype=pl.Int64)
    )
    columns = coarse.iter_rows(named=True)
    width = GAP + len(coarse) * (BOX_W + GAP)
    height = TOP + (children + 1) * (BOX_H + GAP) + 40
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="sans-serif" viewBox="0 0 {width} {height}">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{GAP}" y="24" font-size="14" font-weight="bold">Interest hierarchy: coarse '
        "primitives (top) and their largest finer primitives</text>",
    ]
    for i, row in enumerate(columns):
        x = GAP + i * (BOX_W + GAP)
        title = f"#{row['primitive']} ({row['size']:,})"
        parts += _box(x, TOP, title, row["label"] or "-", "#dbe8f7")
        kids = (
            fine.filter(pl.col("parent") == row["primitive"])
            .sort(["size", "primitive"], descending=[True, False])
            .head(children)
        )
        for j, kid in enumerate(kids.iter_rows(named=True)):
            y = TOP + (j + 1) * (BOX_H + GAP)
            parts.append(
                f'<line x1="{x + 12}" y1="{y - GAP}" x2="{x + 12}" y2="{y}" stroke="#889"/>'
            )
            parts += _box(
                x, y, f"#{kid['primitive']} ({kid['size']:,})", kid["label"] or "-", "#f4f4f4"
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"
