"""Draw one anchor's teacher and student views from the tiny synthetic world as an SVG.

    python docs/figures/draw_views.py docs/figures/views.svg

Radial layout: the anchor in the middle, nodes on rings by hop distance; the student's
nodes are filled, teacher-only nodes hollow; colours by node type.
"""

from __future__ import annotations

import math
import sys
import tempfile
from html import escape
from pathlib import Path

import numpy as np

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.sampling import SamplerConfig, ViewConfig, ViewSampler
from hir_sdk.sampling.encodings import encode
from hir_sdk.synth import SCALES, generate_world, write_world

COLORS = {
    "user": "#1f77b4",
    "ad": "#d62728",
    "advertiser": "#2ca02c",
    "campaign": "#9467bd",
    "product": "#ff7f0e",
    "pixel": "#8c564b",
}


def main(out: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        graph = build_graph_from_dir(
            write_world(generate_world(SCALES["tiny"], 0), Path(tmp) / "w")
        )
    config = SamplerConfig(
        teacher=ViewConfig(fanout=(6, 3), max_nodes=24),
        student=ViewConfig(fanout=(3,), max_nodes=6),
    )
    anchor = int(graph.index("user", [7])[0])
    cutoff = graph.manifest.time.test_start
    views = ViewSampler(graph, config).views(np.array([anchor]), np.array([cutoff]))
    teacher, student = views.teacher, views.student
    hop = encode(graph, teacher).hop
    nodes = teacher.nodes.tolist()
    in_student = set(student.nodes.tolist())
    size, center = 520, 260
    pos = {}
    for ring in sorted(set(hop.tolist())):
        members = [i for i, h in enumerate(hop.tolist()) if h == ring]
        for k, i in enumerate(members):
            angle = 2 * math.pi * (k + 0.5 * (ring % 2)) / max(len(members), 1)
            radius = 0 if ring == 0 else 95 * ring
            pos[i] = (center + radius * math.cos(angle), center + radius * math.sin(angle))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{size}" height="{size + 40}" '
        f'font-family="sans-serif" font-size="11">'
    ]
    student_pairs = set()
    s_nodes = student.nodes.tolist()
    for a, b in zip(student.edge_src.tolist(), student.edge_dst.tolist(), strict=True):
        student_pairs.add((s_nodes[a], s_nodes[b]))
    for a, b in zip(teacher.edge_src.tolist(), teacher.edge_dst.tolist(), strict=True):
        (x1, y1), (x2, y2) = pos[a], pos[b]
        bold = (nodes[a], nodes[b]) in student_pairs
        parts.append(
            f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
            f'stroke="{"#333" if bold else "#bbb"}" '
            f'stroke-width="{2.2 if bold else 1}"/>'
        )
    for i, node in enumerate(nodes):
        kind, _ = graph.node_id(node)
        x, y = pos[i]
        fill = COLORS[kind] if node in in_student else "white"
        r = 11 if i == 0 else 7
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" fill="{fill}" '
            f'stroke="{COLORS[kind]}" stroke-width="2"/>'
        )
    legend_x = 10
    for kind, color in COLORS.items():
        parts.append(f'<circle cx="{legend_x + 6}" cy="{size + 20}" r="6" fill="{color}"/>')
        parts.append(f'<text x="{legend_x + 16}" y="{size + 24}">{escape(kind)}</text>')
        legend_x += 80
    parts.append(
        f'<text x="10" y="16">anchor user 7 at the test cutoff: teacher view '
        f"{len(nodes)} nodes (hollow + filled), student view {len(s_nodes)} "
        f"(filled, bold edges)</text>"
    )
    parts.append("</svg>")
    Path(out).write_text("\n".join(parts) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "views.svg")
