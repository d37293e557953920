"""The temporal graph store: build, query as of a cutoff, save and load, summarize."""

from hir_sdk.graph.build import build_graph, build_graph_from_dir
from hir_sdk.graph.store import load_graph, save_graph
from hir_sdk.graph.summary import GraphSummary, summarize
from hir_sdk.graph.temporal_graph import UNKNOWN_TIME, GraphView, Neighbors, TemporalGraph

__all__ = [
    "UNKNOWN_TIME",
    "GraphSummary",
    "GraphView",
    "Neighbors",
    "TemporalGraph",
    "build_graph",
    "build_graph_from_dir",
    "load_graph",
    "save_graph",
    "summarize",
]
