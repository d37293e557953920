"""A naive pure-Python temporal graph: the readable reference the fast one must equal."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq

from hir_sdk.schema import load_manifest


class ReferenceGraph:
    """Lists of dicts and loops: slow, obviously right."""

    def __init__(self, root: Path) -> None:
        self.manifest = load_manifest(root / "manifest.toml")
        nodes = pq.read_table(root / "nodes.parquet").to_pylist()
        order = {t: i for i, t in enumerate(self.manifest.node_types)}
        keys = sorted((order[n["node_type"]], n["node_id"]) for n in nodes)
        self.index = {(self.manifest.node_types[c], i): k for k, (c, i) in enumerate(keys)}
        triples = self.manifest.edge_type_keys
        rows = pq.read_table(root / "edges.parquet").to_pylist()
        self.edges = []  # (ts, file row, src, dst, etype, weight)
        for row_number, e in enumerate(rows):
            self.edges.append(
                (
                    e["ts"],
                    row_number,
                    self.index[(e["src_type"], e["src_id"])],
                    self.index[(e["dst_type"], e["dst_id"])],
                    triples.index((e["src_type"], e["edge_type"], e["dst_type"])),
                    1.0 if e.get("weight") is None else e["weight"],
                )
            )
        # by time, then same-time edges by (edge type, source, destination, weight), then
        # file row (rows equal in all of these are interchangeable)
        self.edges.sort(key=lambda e: (e[0], e[4], e[2], e[3], e[5], e[1]))

    def neighbors(
        self, node: int, before: int | None, etypes: set[int] | None, direction: str
    ) -> list[tuple[int, int, int, int]]:
        """(edge id, other node, etype, ts) in time order."""
        out = []
        for eid, (ts, _, src, dst, etype, _) in enumerate(self.edges):
            if before is not None and ts >= before:
                continue
            if etypes is not None and etype not in etypes:
                continue
            if direction in ("out", "both") and src == node:
                out.append((eid, dst, etype, ts))
            elif direction in ("in", "both") and dst == node:
                out.append((eid, src, etype, ts))
        return out
