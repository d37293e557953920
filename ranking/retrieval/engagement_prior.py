"""An engagement prior for retrieval: how much each item is engaged with as of a cutoff,
blended into the inner-product score.

On a time split the items engaged with most just before the cutoff are the ones most
engaged with just after it, and an embedding of unit norm cannot say how popular an item
is. The blended score of query q and item a is

    score(q, a) = q . z_a + weight * prior_a
    prior_a     = log(1 + sum of the time-decayed weights of the edges into a before the cutoff)

with the graph's own decay (each edge type's half-life, `TemporalGraph.decay_weights`),
so the prior reads nothing at or after the cutoff. `half_life_scale` stretches every
half-life (infinity: no decay, plain engagement counts): how long "popular now" lasts
depends on the log and on the window served, so the scale, like the weight, is chosen
on a window before it. The blend is again an inner product,
of `[q, weight]` with `[z_a, prior_a]` (`with_prior`): exact k-NN and the BoM index's
re-scoring rank by it unchanged. `weight` is chosen on a window before the one it serves
(`hir_sdk.evaluation.prior_choice`); 0 is the plain embedding score.
"""

from __future__ import annotations

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.ranking.retrieval.input_checks import ArrayLike, as_embeddings


def engagement_prior(
    graph: TemporalGraph, nodes: np.ndarray, cutoff: int, half_life_scale: float = 1.0
) -> np.ndarray:
    """(len(nodes),) float32 `log(1 + decayed weight of every edge into each node)`, the
    edges those before `cutoff`, decayed to it with each edge type's half-life times
    `half_life_scale` (infinity: undecayed weights)."""
    nodes = np.asarray(nodes, dtype=np.int64)
    if nodes.size and (nodes.min() < 0 or nodes.max() >= graph.num_nodes):
        raise InputError(f"nodes must be graph node ids in [0, {graph.num_nodes})")
    if not half_life_scale > 0:  # NaN too
        raise InputError(f"half_life_scale must be > 0, got {half_life_scale!r}")
    edges = np.arange(graph.edges_before(cutoff))
    if np.isinf(half_life_scale):
        weight = graph.weight[edges].astype(np.float64)
    else:
        age = (cutoff - graph.ts[edges]) / half_life_scale
        weight = graph.decayed(graph.weight[edges], age, graph.etype[edges])
    into = np.bincount(graph.dst[edges], weights=weight, minlength=graph.num_nodes)
    return np.log1p(into[nodes]).astype(np.float32)


def with_prior(
    queries: ArrayLike, items: ArrayLike, prior: np.ndarray, weight: float | ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """(B, D + 1) queries `[q, weight]` and (N, D + 1) items `[z, prior]`, whose inner
    products are the blended scores `q . z + weight * prior`; `weight` is one number or
    one per query."""
    items_ = as_embeddings(items, "items")
    queries_ = as_embeddings(queries, "queries", dim=items_.shape[1])
    prior = np.asarray(prior, dtype=np.float32)
    if prior.shape != (items_.shape[0],) or not np.isfinite(prior).all():
        raise InputError(f"prior must be ({items_.shape[0]},) finite values, got {prior.shape}")
    weights = np.asarray(weight, dtype=np.float64)
    if weights.ndim > 1 or weights.size not in (1, queries_.shape[0]):
        raise InputError(
            f"the prior weight must be one number or one per query, got {weights.shape}"
        )
    if not np.isfinite(weights).all() or (weights < 0).any():
        raise InputError(f"the prior weight must be finite and >= 0, got {weight!r}")
    column = np.broadcast_to(weights.astype(np.float32).reshape(-1), (queries_.shape[0],))
    return np.hstack([queries_, column[:, None]]), np.hstack([items_, prior[:, None]])
