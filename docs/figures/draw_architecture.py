"""Draw the SDK's data flow (the "Data flow" section of docs/architecture.md) as an SVG.

    python docs/figures/draw_architecture.py docs/figures/architecture.svg

Stdlib only. Boxes are sized from their text (0.6 x font size per character, a little
more for bold titles), bordered in the colour of the package they live in and laid out in
stages from top to bottom, left to right within a stage; each package sits on a light
band of its colour. Arrows run orthogonally from one box edge to another. The layout is
checked before writing: boxes inside their band, no two boxes overlapping.
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from html import escape
from pathlib import Path

WIDTH = 1060
FONT = 12  # px, every box line
LINE = 16  # px between baselines
PAD_X, PAD_Y = 10, 8  # text to box edge
GAP = 40  # between boxes joined by an arrow
ROW_GAP = 26  # between stages
BAND_PAD = 14  # box to band edge
BAND_TOP = 26  # room for the band's name
EDGE = 20  # page edge to band
ARROW = "#555"

# package -> (name, border colour, band colour)
PACKAGES = {
    "core": ("hir_sdk (core)", "#1f77b4", "#edf3fa"),
    "ranking": ("hir_sdk.ranking", "#d9730d", "#fdf1e4"),
    "evaluation": ("hir_sdk.evaluation", "#2e8b3a", "#ecf6ed"),
    "export": ("hir_sdk.export", "#8250b4", "#f4eefa"),
}


@dataclass
class Box:
    package: str
    lines: tuple[str, ...]  # the first is the title, drawn bold
    x: float = 0.0
    y: float = 0.0
    w: float = 0.0
    h: float = 0.0

    @property
    def right(self) -> float:
        return self.x + self.w

    @property
    def bottom(self) -> float:
        return self.y + self.h

    @property
    def cx(self) -> float:
        return self.x + self.w / 2

    @property
    def cy(self) -> float:
        return self.y + self.h / 2


def text_width(text: str, bold: bool = False, size: int = FONT) -> float:
    return len(text) * 0.6 * size * (1.1 if bold else 1.0)


def box(package: str, *lines: str) -> Box:
    width = max(text_width(t, bold=i == 0) for i, t in enumerate(lines)) + 2 * PAD_X
    return Box(package, lines, w=math.ceil(width), h=len(lines) * LINE + 2 * PAD_Y)


def row(boxes: list[Box], x: float, center_y: float, gap: float = GAP) -> None:
    """Place boxes left to right from x, their centres on one horizontal line."""
    for b in boxes:
        b.x, b.y = x, center_y - b.h / 2
        x += b.w + gap


def arrow(
    src: Box,
    dst: Box,
    kind: str,
    src_at: float | None = None,
    dst_at: float | None = None,
    via: float | None = None,
) -> str:
    """An orthogonal path from an edge of src to an edge of dst.

    kind "h": src's right edge to dst's left edge (straight when they share a height,
    else a step at x = via); "v": src's bottom to dst's top (straight when they share a
    column, else a step at y = via); "vh": src's bottom down to dst's side. src_at and
    dst_at pick the coordinates along the two edges (default: the middle of the span
    they share, else of each box).
    """
    if kind == "h":
        lo, hi = max(src.y, dst.y), min(src.bottom, dst.bottom)
        y1 = src_at if src_at is not None else ((lo + hi) / 2 if lo < hi else src.cy)
        y2 = dst_at if dst_at is not None else (y1 if dst.y < y1 < dst.bottom else dst.cy)
        mid = via if via is not None else (src.right + dst.x) / 2
        points = [(src.right, y1), (mid, y1), (mid, y2), (dst.x, y2)]
    elif kind == "v":
        lo, hi = max(src.x, dst.x), min(src.right, dst.right)
        x1 = src_at if src_at is not None else ((lo + hi) / 2 if lo < hi else src.cx)
        x2 = dst_at if dst_at is not None else (x1 if dst.x < x1 < dst.right else dst.cx)
        mid = via if via is not None else (src.bottom + dst.y) / 2
        points = [(x1, src.bottom), (x1, mid), (x2, mid), (x2, dst.y)]
    else:  # "vh"
        x1 = src_at if src_at is not None else src.cx
        side = dst.x if x1 < dst.x else dst.right
        points = [(x1, src.bottom), (x1, dst.cy), (side, dst.cy)]
    path = [points[0]]
    for p in points[1:]:  # drop repeated points so straight arrows are one segment
        if p != path[-1]:
            path.append(p)
    if len(path) > 2 and (path[0][0] == path[-1][0] or path[0][1] == path[-1][1]):
        path = [path[0], path[-1]]
    d = " ".join(f"{'M' if i == 0 else 'L'}{x:.1f},{y:.1f}" for i, (x, y) in enumerate(path))
    return (
        f'<path d="{d}" fill="none" stroke="{ARROW}" stroke-width="1.4" marker-end="url(#head)"/>'
    )


def band_around(package: str, boxes: list[Box], x0: float, x1: float) -> Box:
    top = min(b.y for b in boxes) - BAND_TOP
    bottom = max(b.bottom for b in boxes) + BAND_PAD
    return Box(package, (PACKAGES[package][0],), x=x0, y=top, w=x1 - x0, h=bottom - top)


def overlaps(a: Box, b: Box) -> bool:
    return a.x < b.right and b.x < a.right and a.y < b.bottom and b.y < a.bottom


def draw_box(b: Box) -> list[str]:
    color = PACKAGES[b.package][1]
    parts = [
        f'<rect x="{b.x:.1f}" y="{b.y:.1f}" width="{b.w:.1f}" height="{b.h:.1f}" rx="5" '
        f'fill="white" stroke="{color}" stroke-width="1.6"/>'
    ]
    first = b.cy - (len(b.lines) - 1) * LINE / 2 + FONT * 0.35  # baseline of line 0
    for i, line in enumerate(b.lines):
        weight = ' font-weight="bold"' if i == 0 else ' fill="#333"'
        parts.append(
            f'<text x="{b.cx:.1f}" y="{first + i * LINE:.1f}" text-anchor="middle"{weight}>'
            f"{escape(line)}</text>"
        )
    return parts


def layout() -> dict[str, Box]:
    """Every box, the `hir embed` outline ("embed") and the four bands, by name, placed."""
    left, right = EDGE + BAND_PAD, WIDTH - EDGE - BAND_PAD  # box area of a full-width band
    b = {
        # hir_sdk core: inputs, graph, world knowledge, sampler, encoder, `hir embed`
        "inputs": box("core", "input contract", "nodes / edges / content", "parquet + manifest"),
        "validate": box("core", "validate", "hir_sdk.schema"),
        "graph": box(
            "core", "TemporalGraph", "typed CSR, time-sorted,", "cutoff views,", "decay weights"
        ),
        "sampler": box(
            "core",
            "sampler",
            "teacher view (broad)",
            "student view (narrow)",
            "+ random-walk position",
            "encodings, hop distances,",
            "type transitions",
        ),
        "packed": box("core", "packed batch", "block-masked"),
        "content": box("core", "content text", "content table"),
        "knowledge": box("core", "knowledge encoder", "offline sentence model,", "cached"),
        "vectors": box("core", "content vectors", "one per node"),
        "encoder": box(
            "core",
            "HierarchicalEncoder",
            "graph transformer:",
            "FlexAttention with",
            "structural biases",
        ),
        "training": box(
            "core",
            "training (hir fit)",
            "self-distillation: EMA teacher,",
            "Sinkhorn-balanced prototypes",
            "at several granularities",
            "+ engagement prediction",
        ),
        "embeddings": box("core", "entity embeddings", "as of each snapshot"),
        "hierarchy": box("core", "interest hierarchy", "primitives, super-graph,", "labels"),
        "quantizer": box("core", "additive quantizer", "M codebooks of K codes"),
        "tokens": box("core", "BoM tokens", "M per entity"),
        # hir_sdk.ranking: retrieval, as-of joins and the three ways into a ranker
        "index": box("ranking", "inverted index", "over the ads' BoM"),
        "retrieval": box("ranking", "BoM retrieval", "RetrieveAndRank:", "candidates → ranking"),
        "lookup": box("ranking", "as-of joins", "HirLookup"),
        "user_model": box("ranking", "offline user model", "stage 1: history only"),
        "cache": box("ranking", "embedding cache", "by user, refresh time"),
        "online": box("ranking", "online ranker", "target-aware attention,", "MoE heads"),
        "kjt": box("ranking", "TorchRec KJT", "hir_tensors"),
        "gbdt": box("ranking", "GBDT feature columns", "XGBoost + HIR"),
        # hir_sdk.evaluation and hir_sdk.export
        "labels": box("evaluation", "conversion labels", "time-split, censored"),
        "ab": box("evaluation", "paired A/B", "user bootstrap,", "95% intervals"),
        "report": box("evaluation", "report (hir ab)", "Markdown + HTML"),
        "models": box("export", "trained models", "encoder, quantizer,", "online ranker"),
        "onnx": box("export", "ONNX (hir export)", "parity-checked", "in onnxruntime"),
    }

    # core: graph and knowledge rows, the sampler spanning both, then the encoder
    top = 46 + BAND_TOP
    row1 = [b["inputs"], b["validate"], b["graph"]]
    row1_y = top + max(x.h for x in row1) / 2
    row(row1, left, row1_y)
    row2 = [b["content"], b["knowledge"], b["vectors"]]
    row2_y = b["graph"].bottom + ROW_GAP + max(x.h for x in row2) / 2
    row(row2, left, row2_y)
    row([b["sampler"]], b["graph"].right + GAP, (row1_y + row2_y) / 2)
    row([b["packed"]], b["sampler"].right + GAP, b["sampler"].cy)
    enc, train = b["encoder"], b["training"]
    row3_y = max(b["vectors"].bottom, b["sampler"].bottom) + ROW_GAP + train.h / 2
    row([enc], b["vectors"].cx - enc.w / 2, row3_y)  # right under the content vectors
    row([train], enc.x - GAP - train.w, row3_y)
    embed_row = [b["embeddings"], b["hierarchy"], b["quantizer"], b["tokens"]]
    embed_top = train.bottom + ROW_GAP
    embed_h = max(x.h for x in embed_row)
    row(embed_row, left + BAND_PAD, embed_top + BAND_TOP + embed_h / 2)
    b["embed"] = Box(
        "core",
        ("hir embed: as-of snapshots",),
        x=left,
        y=embed_top,
        w=b["tokens"].right + BAND_PAD - left,
        h=BAND_TOP + embed_h + BAND_PAD,
    )
    core = [k for k, x in b.items() if x.package == "core"]
    b["core_band"] = band_around("core", [b[k] for k in core], EDGE, WIDTH - EDGE)

    # ranking: retrieval above the multi-stage ranker, which the as-of joins feed along
    # with the TorchRec inputs and the GBDT columns
    retrieval, online = b["retrieval"], b["online"]
    row5_y = b["core_band"].bottom + ROW_GAP + BAND_TOP + retrieval.h / 2
    row6_y = row5_y + retrieval.h / 2 + ROW_GAP + online.h / 2
    chain = [b["user_model"], b["cache"], online]
    chain_w = sum(x.w for x in chain) + GAP * (len(chain) - 1)
    row(chain, right - 90 - chain_w, row6_y)  # leaves the export band's name clear
    row([retrieval], online.cx - retrieval.w / 2, row5_y)
    row([b["index"]], retrieval.x - GAP - b["index"].w, row5_y)
    kjt, gbdt, lookup = b["kjt"], b["gbdt"], b["lookup"]
    row([kjt], b["user_model"].x, online.bottom + 14 + kjt.h / 2)
    row([gbdt], b["user_model"].x, kjt.bottom + 14 + gbdt.h / 2)
    lookup.x, lookup.y = left, b["user_model"].y
    lookup.h = gbdt.bottom - lookup.y
    ranking = [b[k] for k in b if b[k].package == "ranking"]
    b["ranking_band"] = band_around("ranking", ranking, EDGE, WIDTH - EDGE)

    # export under the online ranker, evaluation beside it with the A/B under the GBDT arm
    models, onnx = b["models"], b["onnx"]
    top = b["ranking_band"].bottom + ROW_GAP + BAND_TOP
    row([models], online.x + 0.65 * online.w - models.w / 2, top + models.h / 2)
    row([onnx], models.cx - onnx.w / 2, models.bottom + ROW_GAP + onnx.h / 2)
    export_x0 = min(models.x, onnx.x) - BAND_PAD
    b["export_band"] = band_around("export", [models, onnx], export_x0, WIDTH - EDGE)
    eval_y = (top + onnx.bottom) / 2
    row([b["labels"]], left, eval_y)
    row([b["ab"], b["report"]], gbdt.cx - 0.3 * b["ab"].w, eval_y)
    evaluation = [b["labels"], b["ab"], b["report"]]
    band = band_around("evaluation", evaluation, EDGE, export_x0 - 16)
    band.y, band.h = b["export_band"].y, b["export_band"].h
    b["evaluation_band"] = band
    return b


def check(b: dict[str, Box]) -> None:
    """Each box inside its band and below the band's name; no two boxes or bands overlap."""
    bands = [x for k, x in b.items() if k.endswith("_band")]
    boxes = [x for k, x in b.items() if not k.endswith("_band") and k != "embed"]
    for x in boxes:
        band = b[f"{x.package}_band"]
        inside = band.x < x.x and x.right < band.right and band.y + BAND_TOP <= x.y
        assert inside and x.bottom < band.bottom, x.lines[0]
    for group in (boxes, bands):
        for i, one in enumerate(group):
            for other in group[i + 1 :]:
                assert not overlaps(one, other), (one.lines[0], other.lines[0])
    assert max(x.right for x in bands) <= WIDTH - EDGE


def main(out: str) -> None:
    b = layout()
    check(b)
    legend_y = b["export_band"].bottom + 26
    height = math.ceil(legend_y + 18)
    core_color = PACKAGES["core"][1]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="Helvetica, Arial, sans-serif" '
        f'font-size="{FONT}">',
        '<defs><marker id="head" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="8" '
        'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto">'
        f'<path d="M0,0 L10,5 L0,10 z" fill="{ARROW}"/></marker></defs>',
        f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
        f'<text x="{EDGE}" y="28" font-size="15" font-weight="bold">'
        "hir-sdk: data flow from logs to rankers, the offline A/B and serving</text>",
    ]
    for key in ("core_band", "ranking_band", "evaluation_band", "export_band"):
        band = b[key]
        name, color, fill = PACKAGES[band.package]
        parts.append(
            f'<rect x="{band.x:.1f}" y="{band.y:.1f}" width="{band.w:.1f}" '
            f'height="{band.h:.1f}" rx="8" fill="{fill}" stroke="{color}" stroke-opacity="0.35"/>'
        )
        parts.append(
            f'<text x="{band.right - 10:.1f}" y="{band.y + 17:.1f}" text-anchor="end" '
            f'font-weight="bold" fill="{color}">{escape(name)}</text>'
        )
    embed = b["embed"]
    parts.append(
        f'<rect x="{embed.x:.1f}" y="{embed.y:.1f}" width="{embed.w:.1f}" '
        f'height="{embed.h:.1f}" rx="6" fill="none" stroke="{core_color}" '
        'stroke-dasharray="5,4"/>'
    )
    parts.append(
        f'<text x="{embed.x + 10:.1f}" y="{embed.y + 17:.1f}" font-style="italic" '
        f'fill="{core_color}">{escape(embed.lines[0])}</text>'
    )
    for key, x in b.items():
        if not key.endswith("_band") and key != "embed":
            parts += draw_box(x)

    online, ab = b["online"], b["ab"]
    channel = (b["ranking_band"].bottom + b["export_band"].y) / 2  # between the bands
    parts += [
        arrow(b["inputs"], b["validate"], "h"),
        arrow(b["validate"], b["graph"], "h"),
        arrow(b["graph"], b["sampler"], "h"),
        arrow(b["sampler"], b["packed"], "h"),
        arrow(b["inputs"], b["content"], "v"),
        arrow(b["content"], b["knowledge"], "h"),
        arrow(b["knowledge"], b["vectors"], "h"),
        arrow(b["vectors"], b["encoder"], "v"),
        arrow(b["packed"], b["encoder"], "vh"),
        arrow(b["training"], b["encoder"], "h"),
        arrow(b["encoder"], embed, "v"),
        arrow(b["embeddings"], b["hierarchy"], "h"),
        arrow(b["hierarchy"], b["quantizer"], "h"),
        arrow(b["quantizer"], b["tokens"], "h"),
        arrow(embed, b["lookup"], "v"),
        arrow(embed, b["index"], "v"),
        arrow(b["index"], b["retrieval"], "h"),
        arrow(b["retrieval"], online, "v"),
        arrow(b["lookup"], b["user_model"], "h"),
        arrow(b["user_model"], b["cache"], "h"),
        arrow(b["cache"], online, "h"),
        arrow(b["lookup"], b["kjt"], "h"),
        arrow(b["lookup"], b["gbdt"], "h"),
        arrow(b["gbdt"], ab, "v", src_at=b["gbdt"].cx),
        arrow(online, ab, "v", online.x + 0.2 * online.w, ab.x + 0.75 * ab.w, channel),
        arrow(online, b["models"], "v"),
        arrow(b["models"], b["onnx"], "v"),
        arrow(b["labels"], ab, "h"),
        arrow(ab, b["report"], "h"),
    ]
    parts += legend(legend_y)
    parts.append("</svg>")
    Path(out).write_text("\n".join(parts) + "\n", encoding="utf-8")


def legend(y: float) -> list[str]:
    """One swatch per package, then what an arrow and the dashed outline mean."""
    parts = []
    x = EDGE
    for name, color, fill in PACKAGES.values():
        parts.append(
            f'<rect x="{x}" y="{y - 11}" width="22" height="14" rx="3" fill="{fill}" '
            f'stroke="{color}" stroke-width="1.6"/>'
        )
        parts.append(f'<text x="{x + 30}" y="{y}" font-size="11">{escape(name)}</text>')
        x += 30 + math.ceil(text_width(name, size=11)) + 24
    parts.append(
        f'<path d="M{x},{y - 4} L{x + 30},{y - 4}" stroke="{ARROW}" stroke-width="1.4" '
        'marker-end="url(#head)"/>'
    )
    parts.append(f'<text x="{x + 38}" y="{y}" font-size="11">data flow</text>')
    x += 38 + math.ceil(text_width("data flow", size=11)) + 24
    parts.append(
        f'<rect x="{x}" y="{y - 11}" width="22" height="14" rx="3" fill="none" '
        f'stroke="{PACKAGES["core"][1]}" stroke-dasharray="5,4"/>'
    )
    parts.append(f'<text x="{x + 30}" y="{y}" font-size="11">one CLI command</text>')
    return parts


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "architecture.svg")
