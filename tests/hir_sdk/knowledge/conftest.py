"""One content encoder per session (tmp cache), the tiny world, and its knowledge base.

The tiny world's ~940 texts are encoded once, by `tiny_kb`; every later test that embeds
them again reads them from the encoder's memory (or, for new instances, from its shards).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hir_sdk.graph import TemporalGraph, build_graph
from hir_sdk.knowledge import ContentEncoder, KnowledgeBase, build_knowledge
from hir_sdk.schema import Dataset, load_dataset


@pytest.fixture(scope="session")
def cache_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A `HIR_CACHE_DIR` for the session; the shared encoder caches under `content/`."""
    return tmp_path_factory.mktemp("hir_cache")


@pytest.fixture(scope="session")
def encoder(cache_root: Path) -> ContentEncoder:
    return ContentEncoder(cache_root / "content")


@pytest.fixture(scope="session")
def tiny(tiny_world: Path) -> tuple[Dataset, TemporalGraph]:
    dataset = load_dataset(tiny_world)
    return dataset, build_graph(dataset)


@pytest.fixture(scope="session")
def tiny_kb(tiny: tuple[Dataset, TemporalGraph], encoder: ContentEncoder) -> KnowledgeBase:
    return build_knowledge(*tiny, encoder)


def reference_pool(
    graph: TemporalGraph,
    vectors: np.ndarray,
    row_of: np.ndarray,
    pool_from: dict[str, tuple[str, ...]],
    parts: tuple[tuple[str, int], ...],
    as_of: int | None = None,
) -> dict[int, np.ndarray]:
    """Readable per-node pooling: node -> normalized mean of its content neighbours' rows.

    `row_of` holds rows of nodes with their own content only (-1 elsewhere).
    """
    structural = [
        i for i, spec in enumerate(graph.manifest.edge_types) if spec.role == "structural"
    ]
    out = {}
    for node in range(graph.num_nodes):
        node_type = graph.node_types[int(graph.node_type_of(node))]
        if node_type not in pool_from or row_of[node] >= 0:
            continue
        near = graph.neighbors(node, before=as_of, edge_types=structural, direction="both")
        members = sorted(
            {
                int(other)
                for other in near.node
                if graph.node_types[int(graph.node_type_of(other))] in pool_from[node_type]
                and row_of[other] >= 0
            }
        )
        if not members:
            continue
        mean = np.mean([vectors[row_of[m]].astype(np.float64) for m in members], axis=0)
        offset = 0
        for _, width in parts:
            block = mean[offset : offset + width]
            norm = np.linalg.norm(block)
            mean[offset : offset + width] = block / norm if norm > 0 else 0.0
            offset += width
        out[node] = mean
    return out
