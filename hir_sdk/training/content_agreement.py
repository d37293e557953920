"""Content agreement: does the entities' text say what users engage with?

The content-similarity term (`training.content_similarity`) pulls each embedding towards
its text neighbours. That helps where the text names what drives engagement (the
synthetic world: an ad's text names its interest) and costs where it does not (a film's
title and genres say little about who likes it; docs/real-data.md). This statistic tells
the two apart before training, from the training window alone:

    for a draw of engagement edges (u, v) of the training window whose destination has
    content of its own, and whose user engaged with at least one other such destination:
        profile(u, v) = normalize(sum of the content of u's other destinations)
        pos = cos(profile, c_v);  neg = cos(profile, c_r)   r: a random node of v's type
                                           with content, created before the window ends
    agreement = P(pos > neg) (ties count half), the AUC of the text ranking what each
    user engaged with above a random item

0.5: the text says nothing about engagement; 1: it says everything. The draws are
seeded, so the value is a function of the data, the window and the seed. Nothing after
the training window is read.

`choose_objectives` turns it into the training settings (`TrainConfig.objectives`):
where the run reads no text, the engagement settings below; where the text agrees, the
configured ones (the content-similarity term, clusters that shape the space) without
the audience input (`sampling.audience`), which there only dilutes the text; where it
does not, the engagement settings, which drop the
content-similarity term (`content.weight = 0`, the text stays an input), keep the clusters
reading the space (`distill.shapes_encoder = false`), correct the in-batch softmax
for popularity (`engagement.logq_correction = true`), take smaller steps
(`optim.lr = ENGAGEMENT_LR`) and keep collaborative filtering's neighbourhoods
(`collaborative.weight = COLLABORATIVE_WEIGHT`, `training.collaborative_targets`); see
docs/real-data.md.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.event_index import pair_keys, split_pair_keys
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.knowledge.knowledge_base import CONTENT, KnowledgeBase
from hir_sdk.training.config import EngagementConfig, TrainConfig

# the agreement above which the text names what users engage with: between the synthetic
# world whose text names each ad's interest and the real and synthetic data whose text
# reveals half of it or less (benchmarks/results/content_agreement.md)
CONTENT_AGREES = 0.75
# fewer measured edges than this are too few to judge by: "auto" keeps the configured
# settings (a tiny dataset's estimate moves by several points from one draw to another)
MIN_PAIRS = 500
# the engagement settings' learning rate: on MovieLens-100K under `hir run`'s schedule
# it gave the larger A/B gain on every seed measured, against the default 3e-3
# (benchmarks/results/movielens_run.md)
ENGAGEMENT_LR = 1e-3
# the engagement settings' collaborative-target weight: with it the movies' neighbourhoods
# on MovieLens-100K tell a user's likes from their other ratings about as well as
# collaborative filtering's, and keep doing so as training goes on
# (benchmarks/results/movielens_ablation.md)
COLLABORATIVE_WEIGHT = 6.0


@dataclass(frozen=True)
class ContentAgreement:
    """The statistic (see the module) and how many edges it was measured on."""

    auc: float
    pairs: int

    @property
    def agrees(self) -> bool:
        """Whether the text names what users engage with (`CONTENT_AGREES`)."""
        return self.pairs > 0 and self.auc >= CONTENT_AGREES


def content_agreement(
    graph: TemporalGraph,
    knowledge: KnowledgeBase,
    *,
    window: str = "train",
    roles: tuple[str, ...] = EngagementConfig.roles,
    pairs: int = 20_000,
    seed: int = 0,
) -> ContentAgreement:
    """The content agreement of `graph`'s `window` (see the module); `pairs` edges at most.
    With no usable edge, `auc` is 0.5 and `pairs` 0."""
    has = knowledge.source == CONTENT

    def vectors(nodes: np.ndarray) -> np.ndarray:  # unit content rows of nodes with content
        rows = knowledge.vectors[knowledge.row_of[nodes]].astype(np.float64)
        return rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12)

    span = graph.window(window)
    # the random items: nodes that exist before the window ends (no creation time: always
    # existed), so the text of an item created later never moves the statistic
    exists = graph.created_ts < graph.manifest.time.window(window)[1]
    edges = np.arange(span.start, span.stop)
    edges = edges[np.isin(graph.etype[edges], graph.role_codes(*roles))]
    edges = edges[has[graph.dst[edges]]]
    everyone, theirs = split_pair_keys(  # distinct (user, destination) pairs
        np.unique(pair_keys(graph.src[edges], graph.dst[edges], graph.num_nodes)),
        graph.num_nodes,
    )
    count = np.bincount(everyone, minlength=graph.num_nodes)
    usable = np.flatnonzero(count[everyone] >= 2)  # a profile needs another destination
    if len(usable) == 0:
        return ContentAgreement(0.5, 0)
    rng = np.random.default_rng([seed, 0xC0A6])
    pick = np.sort(rng.choice(usable, min(pairs, len(usable)), replace=False))
    user, item = everyone[pick], theirs[pick]
    users, slot = np.unique(user, return_inverse=True)
    sums = np.zeros((len(users), knowledge.dim))
    mine = np.isin(everyone, users)
    np.add.at(sums, np.searchsorted(users, everyone[mine]), vectors(theirs[mine]))
    profile = sums[slot] - vectors(item)  # the user's other destinations
    profile /= np.maximum(np.linalg.norm(profile, axis=1, keepdims=True), 1e-12)
    kind = graph.node_type_of(np.arange(graph.num_nodes))
    random = np.empty_like(item)
    for t in np.unique(kind[item]):
        pool = np.flatnonzero(has & exists & (kind == t))
        rows = np.flatnonzero(kind[item] == t)
        random[rows] = pool[rng.integers(0, len(pool), len(rows))]
    pos = (profile * vectors(item)).sum(axis=1)
    neg = (profile * vectors(random)).sum(axis=1)
    auc = float((pos > neg).mean() + 0.5 * (pos == neg).mean())
    return ContentAgreement(auc, len(user))


def engagement_settings(config: TrainConfig) -> TrainConfig:
    """`config` with the engagement settings (see the module), marked as chosen."""
    return dataclasses.replace(
        config,
        objectives="engagement",
        content=dataclasses.replace(config.content, weight=0.0),
        distill=dataclasses.replace(config.distill, shapes_encoder=False),
        engagement=dataclasses.replace(config.engagement, logq_correction=True),
        optim=dataclasses.replace(config.optim, lr=ENGAGEMENT_LR),
        collaborative=dataclasses.replace(config.collaborative, weight=COLLABORATIVE_WEIGHT),
    )


def choose_objectives(config: TrainConfig, agreement: ContentAgreement | None) -> TrainConfig:
    """The settings a run trains with: `config` resolved by its `objectives` and the
    measured `agreement` (None: the run has no content). "auto" takes the engagement
    settings where the run reads no text (nothing but engagement can say what sits
    together), and where content is on, measured on at least `MIN_PAIRS` edges and below
    `CONTENT_AGREES`; where it measures the text agreeing, the configured settings
    without the audience input (`audience.dim = 0`); on too few edges to judge by, the
    configured settings. A resolved config says "as_configured" or "engagement"."""
    if config.objectives == "engagement":
        return engagement_settings(config)
    if config.objectives == "auto" and agreement is None:
        return engagement_settings(config)
    measured = config.objectives == "auto" and agreement is not None
    if measured and agreement.pairs >= MIN_PAIRS:
        if not agreement.agrees:
            return engagement_settings(config)
        # the text carries the neighbourhoods: the audience input only dilutes it
        config = dataclasses.replace(config, audience=dataclasses.replace(config.audience, dim=0))
    return dataclasses.replace(config, objectives="as_configured")
