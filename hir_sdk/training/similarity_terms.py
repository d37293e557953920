"""The relational target terms of a training step: the views' embeddings keep the
neighbourhoods of the content's targets (`content_similarity`) and of the collaborative
ones (`collaborative_targets`).

Both target sets are built once, before training, from the training window (its end is
the graph's `validation_start`, see `training.as_of`); each is absent when its weight
is 0, the content's also without content. An absent term is zero."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.knowledge.knowledge_base import KnowledgeBase
from hir_sdk.training.collaborative_targets import PairChoice, collaborative_targets
from hir_sdk.training.config import CollaborativeConfig, ContentConfig, TrainConfig
from hir_sdk.training.content_similarity import ContentTargets, content_similarity_loss


@dataclass(frozen=True, eq=False)
class SimilarityTerms:
    content: ContentTargets | None
    collaborative: ContentTargets | None
    content_settings: ContentConfig
    collaborative_settings: CollaborativeConfig
    collaborative_pairs: PairChoice | None = None  # what the collaborative targets read

    @classmethod
    def build(
        cls,
        graph: TemporalGraph,
        knowledge: KnowledgeBase | None,
        config: TrainConfig,
        *,
        owners: OwnersAsOf | None = None,
    ) -> SimilarityTerms:
        """The targets `config` asks for, from `graph`'s training window (`owners`: the
        graph's, when the caller has them)."""
        end = graph.manifest.time.validation_start
        content = None
        if knowledge is not None and config.content.weight > 0:
            content = ContentTargets.build(
                graph,
                knowledge,
                end,
                co_engagement=config.content.co_engagement,
                co_engagement_roles=config.content.co_engagement_roles,
            )
        collaborative, choice = None, None
        if config.collaborative.weight > 0:
            collaborative, choice = collaborative_targets(
                graph,
                as_of=end,
                roles=config.collaborative.roles,
                dim=config.collaborative.dim,
                seed=config.seed,
                pairs=config.collaborative.pairs,
                owners=owners,
            )
            if collaborative is None:  # no term: nothing was factorised
                choice = None
        return cls(content, collaborative, config.content, config.collaborative, choice)

    def losses(
        self, nodes: np.ndarray, z: torch.Tensor, types: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(content, collaborative) terms of the views' embeddings `z` of `nodes`."""
        return (
            _term(self.content, self.content_settings, nodes, z, types),
            _term(self.collaborative, self.collaborative_settings, nodes, z, types),
        )


def _term(
    targets: ContentTargets | None,
    settings: ContentConfig | CollaborativeConfig,
    nodes: np.ndarray,
    z: torch.Tensor,
    types: torch.Tensor,
) -> torch.Tensor:
    if targets is None:
        return torch.zeros((), device=z.device)
    rows, usable = targets.gather(nodes)
    return content_similarity_loss(
        z,
        rows.to(z.device),
        usable.to(z.device),
        types,
        target_temperature=settings.target_temperature,
        temperature=settings.temperature,
    )
