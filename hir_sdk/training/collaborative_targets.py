"""Collaborative targets: the neighbourhoods collaborative filtering gives the entities
that users reach, for the encoder to keep.

The engagement terms place each destination near the sources that engage with it; they
train a few pairs per step, and nothing in them asks that two items reached by the same
users sit together. On real logs the text rarely says that either (two films of one
genre are liked by different people). Collaborative filtering does: a low-rank
factorisation of who reached what places items with the same audience together. This
module gives the encoder that geometry as a relational target, the way the content term
gives it the text's (`content_similarity`):

    A      the (destination x source) 0/1 matrix of the distinct pairs joined by an edge
           of `roles` with `ts < as_of` (any node type on either side)
    A ~ U S V^T                   rank `dim`, by randomized SVD (`torch.svd_lowrank`)
    t_v = normalize(U_v S)        for every destination v of such an edge

and `content_similarity_loss` asks each node's similarity distribution over the batch's
nodes of its type to follow the targets'. Only the encoder learns from it: at embedding
time a node's view is all it needs, so items that were not in `A` (new ads) are placed
by what their views share with the items that were.

`as_of` is the end of the training window: the targets read nothing the run may not.
The SVD's random start comes from `seed`, so the targets are a function of the graph,
`as_of` and the settings.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.audience import engagement_factors
from hir_sdk.training.content_similarity import ContentTargets


def collaborative_targets(
    graph: TemporalGraph,
    *,
    as_of: int,
    roles: tuple[str, ...],
    dim: int,
    seed: int,
) -> ContentTargets | None:
    """Unit rank-`dim` SVD rows of the destinations of `roles` edges before `as_of`
    (module doc); None when fewer than two destinations or sources take part."""
    factors = engagement_factors(graph, as_of=as_of, roles=roles, dim=dim, seed=seed)
    if factors is None:
        return None
    vectors = factors.u * factors.s
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)
    row_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    row_of[factors.destinations] = np.arange(len(factors.destinations))
    return ContentTargets(row_of, vectors.astype(np.float32))
