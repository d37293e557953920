"""Collaborative targets: the neighbourhoods collaborative filtering gives the entities
that users reach, for the encoder to keep.

The engagement terms place each destination near the sources that engage with it; they
train a few pairs per step, and nothing in them asks that two items reached by the same
users sit together. On real logs the text rarely says that either (two films of one
genre are liked by different people). Collaborative filtering does: a low-rank
factorisation of who reached what places items with the same audience together. This
module gives the encoder that geometry as a relational target, the way the content term
gives it the text's (`content_similarity`):

    A      the (destination x source) 0/1 matrix of the distinct pairs before `as_of`:
           "reached": joined by an edge of `roles` (any node type on either side);
           "converted": an exposure of the destination to the user that converted, by the
           labels' attribution rule (`graph.converted_pairs`)
    A ~ U S V^T                   rank `dim`, by randomized SVD (`torch.svd_lowrank`)
    t_v = normalize(U_v S)        for every destination v of a pair

and `content_similarity_loss` asks each node's similarity distribution over the batch's
nodes of its type to follow the targets'. Only the encoder learns from it: at embedding
time a node's view is all it needs, so items that were not in `A` (new ads) are placed
by what their views share with the items that were.

Which pairs (`pairs`): the rankers predict conversions, and two items converted on by
the same users are alike in what the rankers ask, where two items only shown to (or
rated by) the same users may be liked by different ones. But conversions are rare on an
ads log: most exposed items have none in the window, and a factorisation of those few
pairs places few items. `"auto"` takes the converted pairs when they reach at least
`MIN_COVERAGE` of the reached pairs' destinations, else the reached pairs.

`as_of` is the end of the training window: the targets read nothing the run may not
(a conversion at or after it does not count). The SVD's random start comes from `seed`,
so the targets are a function of the graph, `as_of` and the settings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hir_sdk.graph.converted_pairs import converted_pairs
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.audience import engagement_pairs, pair_factors
from hir_sdk.training.config import COLLABORATIVE_PAIRS
from hir_sdk.training.content_similarity import ContentTargets

MIN_COVERAGE = 0.5


@dataclass(frozen=True)
class PairChoice:
    """What the targets factorise: `pairs` ("converted" or "reached") and `coverage`, the
    share of the reached pairs' destinations that converted pairs reach (NaN where not
    counted)."""

    pairs: str
    coverage: float


def target_pairs(
    graph: TemporalGraph,
    *,
    as_of: int,
    roles: tuple[str, ...],
    pairs: str,
    owners: OwnersAsOf | None = None,
) -> tuple[np.ndarray, np.ndarray, PairChoice]:
    """`(dst, src, choice)`: the distinct pairs `pairs` asks for (module doc). `"auto"`
    also needs two items and two users among the converted pairs (fewer factorise to
    nothing). `owners`: the graph's, when the caller has them."""
    if pairs not in COLLABORATIVE_PAIRS:
        raise ValueError(f"pairs must be one of {COLLABORATIVE_PAIRS}, got {pairs!r}")
    if pairs == "reached":
        dst, src = engagement_pairs(graph, as_of=as_of, roles=roles)
        return dst, src, PairChoice("reached", float("nan"))
    item, user = converted_pairs(graph, as_of=as_of, owners=owners)
    reached = engagement_pairs(graph, as_of=as_of, roles=roles)
    reached_items = np.unique(reached[0])
    covered = np.intersect1d(item, reached_items, assume_unique=False)
    coverage = len(covered) / len(reached_items) if len(reached_items) else 0.0
    enough = min(len(np.unique(item)), len(np.unique(user))) >= 2
    if pairs == "converted" or (coverage >= MIN_COVERAGE and enough):
        return item, user, PairChoice("converted", coverage)
    return *reached, PairChoice("reached", coverage)


def collaborative_targets(
    graph: TemporalGraph,
    *,
    as_of: int,
    roles: tuple[str, ...],
    dim: int,
    seed: int,
    pairs: str = "reached",
    owners: OwnersAsOf | None = None,
) -> tuple[ContentTargets | None, PairChoice]:
    """Unit rank-`dim` SVD rows of the destinations of the pairs before `as_of` (module
    doc), None when fewer than two destinations or sources take part; and which pairs."""
    dst, src, choice = target_pairs(graph, as_of=as_of, roles=roles, pairs=pairs, owners=owners)
    factors = pair_factors(dst, src, dim=dim, seed=seed)
    if factors is None:
        return None, choice
    vectors = factors.u * factors.s
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    row_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    row_of[factors.destinations] = np.arange(len(factors.destinations))
    return ContentTargets(row_of, vectors.astype(np.float32)), choice
