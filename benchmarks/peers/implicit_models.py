"""`implicit`'s alternating least squares (Hu et al. 2008) and Bayesian personalized
ranking (Rendle et al. 2009), trained on every rating before the cutoff (the test start
unless given; confidence 1, plus 1 for a like), 64 factors, seeded, one thread."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from implicit.als import AlternatingLeastSquares
from implicit.bpr import BayesianPersonalizedRanking
from threadpoolctl import threadpool_limits

from hir_sdk.evaluation.conversion_retrieval import RankedLists
from hir_sdk.graph import TemporalGraph


def implicit_scores(
    graph: TemporalGraph,
    ranked: RankedLists,
    *,
    factors: int = 64,
    seed: int = 0,
    cutoff: int | None = None,
) -> dict[str, np.ndarray]:
    """(U, A) scores of the implicit peers for the query users over the candidate ads,
    trained on the ratings before `cutoff` (default the test start)."""
    cutoff = graph.manifest.time.test_start if cutoff is None else cutoff
    k = graph.edges_before(cutoff)
    users = np.flatnonzero(np.isin(np.arange(graph.num_nodes), graph.src[:k]))
    user_row = np.full(graph.num_nodes, -1)
    user_row[users] = np.arange(len(users))
    item_col = np.full(graph.num_nodes, -1)
    item_col[ranked.ads] = np.arange(len(ranked.ads))
    src, dst = graph.src[:k], graph.dst[:k]
    keep = (user_row[src] >= 0) & (item_col[dst] >= 0)  # user -> candidate edges
    matrix = sp.csr_matrix(
        (np.ones(int(keep.sum()), np.float32), (user_row[src[keep]], item_col[dst[keep]])),
        shape=(len(users), len(ranked.ads)),
    )  # duplicates add up: a rating is 1, a rating plus a like 2
    models = {
        "implicit ALS (peer)": AlternatingLeastSquares(
            factors=factors, regularization=0.05, iterations=15, random_state=seed, num_threads=1
        ),
        "implicit BPR (peer)": BayesianPersonalizedRanking(
            factors=factors, iterations=100, random_state=seed, num_threads=1
        ),
    }
    out = {}
    rows = user_row[ranked.users]
    for name, model in models.items():
        with threadpool_limits(1, "blas"):  # implicit asks for it (its own threads do the work)
            model.fit(matrix, show_progress=False)
        # a user with no rating before the test start has no factors: zeros, as the
        # RecBole peers give it (row -1 would read the last trained user's)
        u = np.where(rows[:, None] >= 0, np.asarray(model.user_factors)[rows], 0.0)
        v = np.asarray(model.item_factors)
        out[name] = u @ v.T
    return out
