"""`implicit`'s alternating least squares (Hu et al. 2008) and Bayesian personalized
ranking (Rendle et al. 2009), trained on every rating before the cutoff (the test start
unless given; confidence 1, plus 1 for a like), or on the likes alone, 64 factors,
seeded, one thread.

Settings: ALS regularization 0.05, 15 iterations; BPR implicit's defaults, 100
iterations; or per model those of `GRID` (`movielens_peers.py --tune` chooses them on
the validation window, as HIR's and the RecBole peers' are chosen; the fixed settings
come first in each grid, so they win ties)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from implicit.als import AlternatingLeastSquares
from implicit.bpr import BayesianPersonalizedRanking
from threadpoolctl import threadpool_limits

from hir_sdk.evaluation.conversion_retrieval import RankedLists
from hir_sdk.graph import TemporalGraph

MODELS = ("implicit ALS", "implicit BPR")
GRID: dict[str, tuple[dict, ...]] = {
    "implicit ALS": tuple(
        {"regularization": reg, "alpha": alpha}
        for reg in (0.05, 1.0, 10.0)
        for alpha in (1.0, 10.0, 40.0)
    ),
    "implicit BPR": tuple(
        {"learning_rate": rate, "regularization": reg, "iterations": iterations}
        for rate in (0.01, 0.05)
        for reg in (0.01, 0.1)
        for iterations in (100, 50, 200)
    ),
}


def implicit_scores(
    graph: TemporalGraph,
    ranked: RankedLists,
    *,
    factors: int = 64,
    seed: int = 0,
    cutoff: int | None = None,
    likes: bool = False,
    models: tuple[str, ...] = MODELS,
    settings: dict[str, dict] | None = None,
) -> dict[str, np.ndarray]:
    """(U, A) scores of the implicit peers (`models`) for the query users over the
    candidate ads, trained on the ratings before `cutoff` (default the test start); with
    `likes`, each also trained on the likes alone ("... on likes": a rating without a like
    is no positive), the matrix a team ranking for likes might give it. `settings`: the
    model's keyword arguments by output name (default the fixed settings)."""
    cutoff = graph.manifest.time.test_start if cutoff is None else cutoff
    k = graph.edges_before(cutoff)
    users = np.flatnonzero(np.isin(np.arange(graph.num_nodes), graph.src[:k]))
    user_row = np.full(graph.num_nodes, -1)
    user_row[users] = np.arange(len(users))
    item_col = np.full(graph.num_nodes, -1)
    item_col[ranked.ads] = np.arange(len(ranked.ads))
    src, dst = graph.src[:k], graph.dst[:k]
    keep = (user_row[src] >= 0) & (item_col[dst] >= 0)  # user -> candidate edges
    matrices = {"": keep}  # duplicates add up: a rating is 1, a rating plus a like 2
    if likes:
        matrices[" on likes"] = keep & np.isin(graph.etype[:k], graph.role_codes("conversion"))
    out = {}
    rows = user_row[ranked.users]
    for suffix, edges in matrices.items():
        matrix = sp.csr_matrix(
            (np.ones(int(edges.sum()), np.float32), (user_row[src[edges]], item_col[dst[edges]])),
            shape=(len(users), len(ranked.ads)),
        )
        for name in models:
            label = f"{name}{suffix} (peer)"
            model = _model(name, factors, seed, (settings or {}).get(label, {}))
            out[label] = _scores(model, matrix, rows)
    return out


def _model(name: str, factors: int, seed: int, setting: dict):
    """`name`'s model with the fixed settings, `setting` overriding them."""
    common = {"factors": factors, "random_state": seed, "num_threads": 1}
    if name == "implicit ALS":
        return AlternatingLeastSquares(
            **common, **({"regularization": 0.05, "iterations": 15} | setting)
        )
    return BayesianPersonalizedRanking(**common, **({"iterations": 100} | setting))


def _scores(model, matrix: sp.csr_matrix, rows: np.ndarray) -> np.ndarray:
    """The fitted model's (U, A) scores for the query users' `rows` (-1: no rating)."""
    with threadpool_limits(1, "blas"):  # implicit asks for it (its own threads do the work)
        model.fit(matrix, show_progress=False)
    # a user with no rating (no like) before the cutoff has no factors: zeros, as the
    # RecBole peers give it (row -1 would read the last trained user's, and BPR leaves an
    # empty row's random start as it was)
    trained = (rows >= 0) & (np.diff(matrix.indptr)[rows] > 0)
    u = np.where(trained[:, None], np.asarray(model.user_factors)[rows], 0.0)
    return u @ np.asarray(model.item_factors).T
