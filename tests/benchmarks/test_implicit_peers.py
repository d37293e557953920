"""The `implicit` peers of `benchmarks/movielens_peers.py` read what HIR may read and no
less: nothing at or after the cutoff, each query user's own fitted factors (zeros for a
user with no rating), the candidates' columns in the candidates' order, and the
engagement prior by the rule HIR's is chosen by."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("implicit")

from peers import implicit_models  # noqa: E402
from peers.implicit_models import implicit_scores  # noqa: E402
from peers.protocol import query_lists  # noqa: E402

from hir_sdk.evaluation.prior_choice import choose_blend_decay  # noqa: E402
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior  # noqa: E402
from tests.benchmarks.conftest import scrambled_after  # noqa: E402


@pytest.mark.parametrize("window", ["validation", "test"])
def test_the_scores_read_nothing_at_or_after_the_cutoff(graph, window):
    queries = query_lists(graph, window)
    cutoff = graph.manifest.time.window(window)[0]
    before = implicit_scores(graph, queries, factors=8, cutoff=cutoff, likes=True)
    after = implicit_scores(
        scrambled_after(graph, cutoff), queries, factors=8, cutoff=cutoff, likes=True
    )
    assert before.keys() == after.keys() and len(before) == 4
    for name in before:
        np.testing.assert_array_equal(before[name], after[name], err_msg=name)


def test_each_user_scores_with_their_own_fitted_factors(graph, monkeypatch):
    """A query user with a rating (a like) before the cutoff scores as `implicit` itself
    scores that user's row over the candidates; that row holds exactly the candidates
    they rated (liked) before the cutoff; a user with none scores 0 everywhere."""
    queries = query_lists(graph)
    fits = []
    real = implicit_models._scores

    def spy(model, matrix, rows):
        out = real(model, matrix, rows)
        fits.append((model, matrix, rows, out))
        return out

    monkeypatch.setattr(implicit_models, "_scores", spy)
    implicit_scores(graph, queries, factors=8, likes=True)
    assert len(fits) == 4
    k = graph.edges_before(graph.manifest.time.test_start)
    conversion = np.isin(graph.etype[:k], graph.role_codes("conversion"))
    for fit, (model, matrix, rows, out) in enumerate(fits):
        likes_only = fit >= 2  # ALS, BPR, then ALS and BPR on likes
        for i, user in enumerate(queries.users):
            mine = graph.src[:k] == user
            if likes_only:
                mine &= conversion
            engaged = np.unique(graph.dst[:k][mine])
            if not len(engaged):
                assert not out[i].any()
                continue
            row = rows[i]
            cols = matrix[row].indices
            np.testing.assert_array_equal(np.sort(queries.ads[cols]), engaged)
            ids, values = model.recommend(
                row, matrix[row], N=matrix.shape[1], filter_already_liked_items=False
            )
            theirs = np.empty(matrix.shape[1])
            theirs[ids] = values
            np.testing.assert_allclose(out[i], theirs, rtol=1e-4, atol=1e-5)
    assert not queries.history.all()  # users without a history were checked too


def test_a_peer_gets_the_prior_by_the_rule_hir_gets_it(graph):
    """The peer's test scores plus the weight and decay `choose_blend_decay` picks from
    its scores as of the validation start: never from the test window."""
    from movielens_peers import BLEND_WEIGHTS, with_prior

    queries, validation = query_lists(graph), query_lists(graph, "validation")
    rng = np.random.default_rng(0)
    test = {"peer": rng.normal(size=(len(queries.users), len(queries.ads)))}
    early = {"peer": rng.normal(size=(len(validation.users), len(validation.ads)))}
    choices: dict = {}
    out = with_prior(graph, queries, validation, test, early, choices=choices, scales=(1.0, 4.0))
    expected = choose_blend_decay(
        graph, validation, early["peer"], weights=BLEND_WEIGHTS, half_life_scales=(1.0, 4.0)
    )
    assert choices["peer"] == expected
    prior = engagement_prior(
        graph, queries.ads, graph.manifest.time.test_start, expected.half_life_scale
    )
    np.testing.assert_allclose(
        out["peer + engagement prior"], test["peer"] + expected.weight * prior[None, :]
    )


def test_tune_chooses_the_settings_on_the_validation_window_alone(graph, monkeypatch):
    """`--tune`: the setting of the best validation recall with the prior, ties to the
    fixed settings (first in the grid), and the same choice when every edge from the test
    start on is scrambled."""
    import movielens_peers

    grid = {
        "implicit ALS": ({"regularization": 0.05}, {"regularization": 10.0}),
        "implicit BPR": ({"iterations": 100}, {"iterations": 5, "learning_rate": 0.5}),
    }
    monkeypatch.setattr(movielens_peers, "GRID", grid)
    validation = query_lists(graph, "validation")

    def tune(g):
        return movielens_peers.tune_implicit(g, validation, seed=0, likes=True, scales=(1.0,))

    chosen = tune(graph)
    assert len(chosen) == 4
    for name, (recall, setting, _) in chosen.items():
        model = name.split(" on likes")[0].removesuffix(" (peer)")
        recalls = []
        for candidate in grid[model]:
            early = implicit_scores(
                graph,
                validation,
                cutoff=graph.manifest.time.validation_start,
                likes=True,
                models=(model,),
                settings={name: candidate},
            )[name]
            choice = choose_blend_decay(
                graph,
                validation,
                early,
                weights=movielens_peers.BLEND_WEIGHTS,
                half_life_scales=(1.0,),
            )
            recalls.append(choice.scale_scores[1.0])
        assert recall == max(recalls)
        assert setting == grid[model][recalls.index(max(recalls))]
    again = tune(scrambled_after(graph, graph.manifest.time.test_start))
    assert again.keys() == chosen.keys()
    for name, t in again.items():
        assert (t.recall, t.setting) == (chosen[name].recall, chosen[name].setting)
        np.testing.assert_array_equal(t.early, chosen[name].early)
