"""What `hir graph info` prints: counts by node and edge type, density, time, funnel rates,
and how many nodes have a value of each numeric node attribute."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.schema.manifest import iso_time

WINDOWS = ("train", "validation", "test")


@dataclass(frozen=True)
class EdgeTypeStats:
    src: str
    rel: str
    dst: str
    role: str
    edges: int
    density: float  # edges / (src nodes x dst nodes)


@dataclass(frozen=True)
class GraphSummary:
    name: str
    fingerprint: str
    nodes: dict[str, int]
    edge_types: list[EdgeTypeStats]
    num_nodes: int
    num_edges: int
    density: float  # edges / (nodes^2)
    first_ts: int
    last_ts: int
    windows: dict[str, int]  # edges per chronological window
    exposures: int
    conversions: int
    attributes: dict[str, int]  # nodes with a value, per numeric node column

    @property
    def conversion_rate(self) -> float:
        """Conversion edges per exposure edge (0 when there are no exposures)."""
        return self.conversions / self.exposures if self.exposures else 0.0

    def to_dict(self) -> dict[str, object]:
        out = asdict(self)
        out["conversion_rate"] = self.conversion_rate
        return out

    def render(self) -> str:
        lines = [
            f"graph {self.name}  (fingerprint {self.fingerprint})",
            f"nodes {self.num_nodes:,}  edges {self.num_edges:,}  density {self.density:.3g}",
            f"time  {iso_time(self.first_ts)} .. {iso_time(self.last_ts)}",
            "",
            "node type  count",
        ]
        width = max(len(t) for t in self.nodes)
        lines += [f"  {t:<{width}}  {n:>12,}" for t, n in self.nodes.items()]
        if self.attributes:
            values = ", ".join(f"{c} {n:,}" for c, n in self.attributes.items())
            lines += ["", f"node attributes (nodes with a value)  {values}"]
        lines += ["", "edge type (src, rel, dst)  role  edges  density"]
        for s in self.edge_types:
            triple = f"({s.src}, {s.rel}, {s.dst})"
            lines.append(f"  {triple:<36} {s.role:<11} {s.edges:>12,}  {s.density:.3g}")
        lines += ["", "window      edges"]
        lines += [f"  {w:<10} {n:>12,}" for w, n in self.windows.items()]
        lines += [
            "",
            f"conversion rate {self.conversion_rate:.4%} "
            f"({self.conversions:,} conversions / {self.exposures:,} exposures)",
        ]
        return "\n".join(lines)


def summarize(graph: TemporalGraph) -> GraphSummary:
    manifest = graph.manifest
    per_type = np.bincount(graph.etype, minlength=len(manifest.edge_types))
    nodes = {t: graph.num_nodes_of(t) for t in graph.node_types}
    stats = []
    for code, spec in enumerate(manifest.edge_types):
        pairs = nodes[spec.src] * nodes[spec.dst]
        stats.append(
            EdgeTypeStats(
                spec.src,
                spec.rel,
                spec.dst,
                spec.role,
                int(per_type[code]),
                float(per_type[code] / pairs) if pairs else 0.0,
            )
        )

    def role_count(role: str) -> int:
        return sum(s.edges for s in stats if s.role == role)

    n = graph.num_nodes
    windows = {w: graph.window(w).stop - graph.window(w).start for w in WINDOWS}
    return GraphSummary(
        name=manifest.name,
        fingerprint=graph.fingerprint,
        nodes=nodes,
        edge_types=stats,
        num_nodes=n,
        num_edges=graph.num_edges,
        density=graph.num_edges / (n * n) if n else 0.0,
        first_ts=int(graph.ts[0]),
        last_ts=int(graph.ts[-1]),
        windows=windows,
        exposures=role_count("exposure"),
        conversions=role_count("conversion"),
        attributes={
            column: int((~np.isnan(graph.attributes[:, i])).sum())
            for i, column in enumerate(graph.attribute_names)
        },
    )
