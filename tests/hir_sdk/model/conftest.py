"""Encoder inputs from the tiny world, and an encoder with non-trivial bias tables."""

from __future__ import annotations

import pytest
import torch

from hir_sdk.graph import build_graph_from_dir
from hir_sdk.model import EncoderConfig, HierarchicalEncoder, inputs_from_packed
from hir_sdk.sampling.loader import BatchBuilder, anchors_from_events
from hir_sdk.sampling.node_features import NodeFeaturizer


@pytest.fixture(scope="session")
def real_batch(tiny_world):
    graph = build_graph_from_dir(tiny_world)
    featurizer = NodeFeaturizer(graph)
    anchors, cutoffs = anchors_from_events(graph, "train")
    batch = BatchBuilder(graph, featurizer=featurizer).build(anchors[100:112], cutoffs[100:112])
    config = EncoderConfig(
        num_node_types=len(graph.node_types),
        num_edge_types=len(graph.edge_types),
        stats_dim=featurizer.stats_dim,
        content_dim=featurizer.content_dim,
        dim=32,
        heads=4,
        layers=2,
        out_dim=16,
    )
    return graph, batch, config


def randomized(config: EncoderConfig, seed: int = 0) -> HierarchicalEncoder:
    """An encoder whose bias tables are random (they start at zero), in eval mode."""
    torch.manual_seed(seed)
    model = HierarchicalEncoder(config).eval()
    with torch.no_grad():
        for p in model.bias.parameters():
            p.normal_()
    return model


@pytest.fixture(scope="session")
def real_inputs(real_batch):
    return inputs_from_packed(real_batch[1].teacher)
