"""What a trainer and an embedder build the same way from a dataset and a config: the node
featurizer (with world knowledge when the config asks for it) and the encoder's sizes.

Both sides must agree bit for bit, or a trained checkpoint would not load into the model
that embeds with it; keeping the two recipes here is what guarantees that.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.model import EncoderConfig
from hir_sdk.model.config import PrototypeConfig
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.schema.dataset import Dataset
from hir_sdk.training.config import TrainConfig

if TYPE_CHECKING:
    from hir_sdk.knowledge import ContentEncoder


def make_featurizer(
    dataset: Dataset,
    graph: TemporalGraph,
    config: TrainConfig,
    *,
    knowledge_as_of: int | None = None,
    like: NodeFeaturizer | None = None,
    encoder: ContentEncoder | None = None,
) -> NodeFeaturizer:
    """Node features; with `use_content`, world knowledge pooled from structural edges
    before `knowledge_as_of` (default: the validation start). Pooled rows are only used at
    cutoffs from then on, see `KnowledgeBase.gather`.

    `like`: a featurizer of the same graph whose time-independent indexes to share (only
    the knowledge is rebuilt); `encoder`: the content encoder to use, so that its loaded
    vector cache is read once across calls."""
    knowledge = None
    if config.use_content:
        from hir_sdk.knowledge import ContentEncoder, build_knowledge

        as_of = graph.manifest.time.validation_start if knowledge_as_of is None else knowledge_as_of
        knowledge = build_knowledge(dataset, graph, encoder or ContentEncoder(), as_of=as_of)
    if like is not None and like.graph is graph:
        shared = copy.copy(like)
        shared.knowledge = knowledge
        return shared
    return NodeFeaturizer(graph, knowledge)


def encoder_config(
    graph: TemporalGraph, featurizer: NodeFeaturizer, config: TrainConfig
) -> EncoderConfig:
    m = config.model
    return EncoderConfig(
        num_node_types=len(graph.node_types),
        num_edge_types=len(graph.edge_types),
        stats_dim=featurizer.stats_dim,
        content_dim=featurizer.content_dim,
        dim=m.dim,
        heads=m.heads,
        layers=m.layers,
        out_dim=m.out_dim,
        center_types=m.center_types,
        prototypes=PrototypeConfig(sizes=m.prototypes),
    )
