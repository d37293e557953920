"""What a trainer and an embedder build the same way from a dataset and a config: the node
featurizer (with world knowledge when the config asks for it, audience rows and numeric
node attributes when the run has them) and the encoder's sizes.

Both sides must agree bit for bit, or a trained checkpoint would not load into the model
that embeds with it; keeping the two recipes here is what guarantees that.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.knowledge.knowledge_base import CONTENT
from hir_sdk.model import EncoderConfig
from hir_sdk.model.config import PrototypeConfig
from hir_sdk.sampling.audience import (
    AUDIENCE_FILE,
    AudienceBasis,
    AudienceTerms,
    fit_audience_basis,
)
from hir_sdk.sampling.node_attributes import ATTRIBUTES_FILE, AttributeScale, fit_attribute_scale
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.schema.dataset import Dataset
from hir_sdk.training.config import TrainConfig, load_config
from hir_sdk.training.content_agreement import (
    ContentAgreement,
    choose_objectives,
    content_agreement,
)

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
    audience: AudienceBasis | None = None,
    audience_as_of: int | None = None,
    audience_terms: AudienceTerms | None = None,
    attributes: AttributeScale | None = None,
) -> NodeFeaturizer:
    """Node features; with `use_content`, world knowledge pooled from structural edges
    before `knowledge_as_of` (default: the validation start). Pooled rows are only used at
    cutoffs from then on, see `KnowledgeBase.gather`. With an `audience` basis, each
    node's audience row as of `audience_as_of` (default: `knowledge_as_of`), used from
    then on (`AudienceRows.gather`), from `audience_terms` when given (that basis's
    `AudienceTerms` of `graph`: the same rows, without finding the pairs again). With an
    `attributes` scale, the nodes' numeric attributes join their statistics
    (`sampling.node_attributes`).

    `like`: a featurizer of the same graph whose time-independent parts to share (its
    indexes, attribute rows and the knowledge's own content rows: only the pooled
    knowledge and the audience rows are rebuilt); `encoder`: the content encoder to use,
    so that its loaded vector cache is read once across calls."""
    knowledge = None
    as_of = graph.manifest.time.validation_start if knowledge_as_of is None else knowledge_as_of
    shared = like is not None and like.graph is graph
    if config.use_content:
        from hir_sdk.knowledge import ContentEncoder, build_knowledge

        knowledge = build_knowledge(
            dataset,
            graph,
            encoder or ContentEncoder(),
            as_of=as_of,
            like=like.knowledge if shared else None,  # its content rows: time-independent
        )
    if shared:
        featurizer = copy.copy(like)
        featurizer.knowledge = knowledge
    else:
        featurizer = NodeFeaturizer(graph, knowledge)
    featurizer.audience = None
    if audience is not None:
        rows_as_of = as_of if audience_as_of is None else audience_as_of
        if audience_terms is not None and audience_terms.num_nodes != graph.num_nodes:
            raise ValueError("make_featurizer: audience_terms come from another graph")
        featurizer.audience = (
            audience.rows(graph, rows_as_of, featurizer.node_hashes)
            if audience_terms is None
            else audience_terms.rows(rows_as_of)
        )
    if attributes is None:
        featurizer.attributes = None
    elif not shared or like.attributes is None:
        featurizer.attributes = attributes.rows(graph)  # else the copy keeps like's
    return featurizer


@dataclass(frozen=True)
class TrainingInputs:
    """What a trainer reads (`training_inputs`)."""

    featurizer: NodeFeaturizer
    audience: AudienceBasis | None  # the run saves it (`write_inputs`)
    attributes: AttributeScale | None  # likewise
    agreement: ContentAgreement | None
    config: TrainConfig  # the settings resolved by the agreement and a warm start


def training_inputs(dataset: Dataset, graph: TemporalGraph, config: TrainConfig) -> TrainingInputs:
    """What a trainer reads: its featurizer (knowledge as of its window's end, audience
    rows as of `audience_rows_at`, attributes on the scale of the nodes known at its
    window's end), the audience basis and attribute scale (which the run saves), the
    content agreement, and the settings resolved by it (`choose_objectives`, which also
    says whether the run reads audience vectors).

    A warm start reads what its init run read, so that the weights it starts from fit:
    that run's basis, or none where it had none, whatever `audience.dim` says (the
    settings then say 0, or the basis's rank where they said 0); and that run's attribute
    scale, or none. `use_attributes` then says whether the run read attributes. It also
    keeps the objectives and the pairs that run resolved `"auto"` to
    (`keep_init_choices`), so that a refresh chain learns one kind of target. A
    run reads no text (agreement None) where content is off or no node has any."""
    featurizer = make_featurizer(dataset, graph, config)
    knowledge = featurizer.knowledge
    # no text: content off, or on over a dataset where no node has any
    reads_text = knowledge is not None and bool((knowledge.source == CONTENT).any())
    agreement = (
        content_agreement(graph, knowledge, roles=config.engagement.roles, seed=config.seed)
        if reads_text
        else None
    )
    if config.init_from:
        config = keep_init_choices(config, Path(config.init_from))
    config = choose_objectives(config, agreement)
    if config.init_from:
        basis = run_audience(Path(config.init_from))
        dim = 0 if basis is None else config.audience.dim or basis.dim
        config = dataclasses.replace(config, audience=dataclasses.replace(config.audience, dim=dim))
        scale = run_attributes(Path(config.init_from))
    else:
        basis = scale = None
        if config.audience.dim:
            basis = fit_audience_basis(
                graph,
                as_of=audience_rows_at(graph, config),
                roles=config.audience.roles,
                dim=config.audience.dim,
                seed=config.seed,
                hashes=featurizer.node_hashes,
            )
        if config.use_attributes:
            scale = fit_attribute_scale(graph, graph.manifest.time.validation_start)
    # the settings say what the run read: false without numeric node columns
    config = dataclasses.replace(config, use_attributes=scale is not None)
    if basis is not None:
        featurizer.audience = basis.rows(
            graph, audience_rows_at(graph, config), featurizer.node_hashes
        )
    if scale is not None:
        featurizer.attributes = scale.rows(graph)
    return TrainingInputs(featurizer, basis, scale, agreement, config)


def write_inputs(run: Path, inputs: TrainingInputs) -> None:
    """Save the audience basis and the attribute scale a run trained with (each where it
    had one), for its refreshes, embedding and export."""
    if inputs.audience is not None:
        inputs.audience.save(Path(run) / AUDIENCE_FILE)
    if inputs.attributes is not None:
        inputs.attributes.save(Path(run) / ATTRIBUTES_FILE)


def audience_rows_at(graph: TemporalGraph, config: TrainConfig) -> int:
    """The time of the audience rows a run trains on: `audience.basis_at` of the way
    through its training window (`graph`'s), so the later half of the window learns to
    read them."""
    t = graph.manifest.time
    return t.start + int((t.validation_start - t.start) * config.audience.basis_at)


def keep_init_choices(config: TrainConfig, run: Path) -> TrainConfig:
    """`config` with each `"auto"` that `run` resolved (its config.toml) replaced by that
    run's choice: `objectives`, so that a warm start trains under the objectives its init
    run's weights were trained with (the content agreement of a longer window, or a newer
    rule, does not switch them in the middle of a refresh chain), and
    `collaborative.pairs`, so that it learns the targets its init run learned. A setting
    `config` names stays; so does everything where `run` has no config.toml."""
    path = Path(run) / "config.toml"
    if not path.is_file():
        return config
    init = load_config(path)
    if config.objectives == "auto":
        config = dataclasses.replace(config, objectives=init.objectives)
    if config.collaborative.pairs == "auto":
        pairs = init.collaborative.pairs
        config = dataclasses.replace(
            config, collaborative=dataclasses.replace(config.collaborative, pairs=pairs)
        )
    return config


def run_audience(run: Path) -> AudienceBasis | None:
    """The audience basis a run trained with; None when it trained without one."""
    path = Path(run) / AUDIENCE_FILE
    return AudienceBasis.load(path) if path.is_file() else None


def run_attributes(run: Path) -> AttributeScale | None:
    """The attribute scale a run trained with; None when it read no attributes."""
    path = Path(run) / ATTRIBUTES_FILE
    return AttributeScale.load(path) if path.is_file() else None


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
