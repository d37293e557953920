"""The engagement prior in retrieval: the blended lists, and the weight chosen on the
validation window."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation import conversion_retrieval
from hir_sdk.evaluation.conversion_retrieval import (
    EXACT,
    EXACT_PRIOR,
    FALLBACK,
    TRENDING,
    conversion_recall,
    prior_recall_grid,
    ranked_lists,
)
from hir_sdk.evaluation.prior_choice import (
    PRIOR_HALF_LIFE_SCALES,
    PRIOR_WEIGHTS,
    choose_blend_decay,
    choose_blend_weight,
    choose_prior_weight,
    prior_from_snapshots,
)
from hir_sdk.interests.hierarchy import snapshot_rows
from hir_sdk.ranking.retrieval.engagement_prior import engagement_prior
from tests.hir_sdk.interests.conftest import snapshot  # noqa: F401


def _trained_before(snapshot, start):  # noqa: F811
    """The snapshot as if its encoder had read nothing after `start` (the tiny run chose
    its checkpoint on validation, so it read further)."""
    meta = {**snapshot.meta, "as_of": start, "trained_until": start, "selected_until": None}
    return dataclasses.replace(snapshot, meta=meta)


def _choice_before_validation(graph, snapshot):  # noqa: F811
    """The snapshot as of the validation start, and the prior's choice on that window."""
    early = _trained_before(snapshot, graph.manifest.time.validation_start)
    return early, choose_prior_weight(graph, early, k_values=(5, 20))


def _validation_recall(graph, early, weight, scale, **options):  # noqa: F811
    """The validation window's recall with the prior at `weight` and half-life `scale`."""
    return conversion_recall(
        graph,
        early,
        k_values=(5, 20),
        window="validation",
        prior_weight=weight,
        prior_half_life_scale=scale,
        **options,
    )


def test_the_blended_lists_rank_embedding_score_plus_weighted_prior(tiny_graph, snapshot):  # noqa: F811
    ranked = ranked_lists(tiny_graph, snapshot, top=20, exclude_seen=True, prior_weight=0.5)
    z, rows = snapshot.embeddings(), snapshot_rows(snapshot, tiny_graph)
    cutoff = tiny_graph.manifest.time.test_start
    prior = engagement_prior(tiny_graph, ranked.ads, cutoff)
    scores = z[rows[ranked.users]] @ z[rows[ranked.ads]].T
    np.testing.assert_array_equal(ranked.lists[EXACT], ranked.rank(scores, 20))
    blended = ranked.rank(scores + 0.5 * prior[None, :], 20)
    np.testing.assert_array_equal(ranked.lists[EXACT_PRIOR], blended)
    trending = ranked.rank(np.tile(prior, (len(ranked.users), 1)), 20)
    np.testing.assert_array_equal(ranked.lists[TRENDING], trending)
    assert FALLBACK not in ranked.lists  # the blend is the list for users without a history
    for name, ids in ranked.lists.items():  # every list holds each ad at most once
        for row in ids:
            listed = row[row >= 0]
            assert len(np.unique(listed)) == len(listed), name
    # the index rows: their candidates re-scored by the blend, so ordered by it
    position = {int(a): i for i, a in enumerate(ranked.ads)}
    blend = scores + 0.5 * prior[None, :]
    for name in (n for n in ranked.lists if n.startswith("BoM")):
        for u, row in enumerate(ranked.lists[name]):
            values = [blend[u, position[int(a)]] for a in row if a >= 0]
            assert values == sorted(values, reverse=True) and len(values) > 0
    # weight 0 is the plain embedding score: no blended row, the fallback as before
    plain = ranked_lists(tiny_graph, snapshot, top=20, exclude_seen=True)
    assert EXACT_PRIOR not in plain.lists
    np.testing.assert_array_equal(plain.lists[EXACT], ranked.lists[EXACT])


def test_a_large_weight_ranks_by_the_prior_alone(tiny_graph, snapshot):  # noqa: F811
    result = conversion_recall(tiny_graph, snapshot, k_values=(5, 20), prior_weight=1e4)
    assert result.recall[EXACT_PRIOR] == pytest.approx(result.recall[TRENDING])
    assert "prior's weight is 10000" in "\n".join(result.render())


@pytest.mark.parametrize("exclude_seen", [False, True])
def test_the_grid_equals_one_recall_per_weight_and_scale(
    tiny_graph,
    snapshot,  # noqa: F811
    half_without_history,
    exclude_seen,
):
    early = _trained_before(snapshot, tiny_graph.manifest.time.validation_start)
    weights, scales = (0.0, 0.25, 4.0), (1.0, 4.0, np.inf)
    grid = prior_recall_grid(
        tiny_graph,
        early,
        weights=weights,
        half_life_scales=scales,
        k_values=(5, 20),
        exclude_seen=exclude_seen,
    )
    assert list(grid) == [(s, w) for s in scales for w in weights]
    for (scale, weight), found in grid.items():
        alone = _validation_recall(
            tiny_graph, early, weight, scale, exclude_seen=exclude_seen, index=False
        )
        method = EXACT_PRIOR if weight else EXACT
        assert list(found.recall) == [method]
        for part in ("recall", "with_history", "without_history"):
            assert getattr(found, part)[method] == getattr(alone, part)[method]
        assert (found.users, found.pairs, found.pairs_with_history) == (
            alone.users,
            alone.pairs,
            alone.pairs_with_history,
        )
    assert len({str(r.recall) for r in grid.values()}) > 1  # the settings change the lists


def test_the_weight_is_the_best_on_the_validation_window(tiny_graph, snapshot):  # noqa: F811
    early, choice = _choice_before_validation(tiny_graph, snapshot)
    assert list(choice.scores) == sorted(PRIOR_WEIGHTS) and choice.weight in PRIOR_WEIGHTS
    for weight, score in choice.scores.items():  # each score is that weight's recall
        result = _validation_recall(tiny_graph, early, weight, choice.half_life_scale)
        recall = result.with_history if choice.with_history else result.recall
        assert score == pytest.approx(np.mean(recall[EXACT_PRIOR if weight else EXACT]))
    best = max(choice.scores.values())
    assert choice.scores[choice.weight] == best
    assert all(w >= choice.weight for w, s in choice.scores.items() if s == best)
    assert "chosen on the validation window" in choice.render()


def test_the_prior_decay_is_the_best_scale_on_the_validation_window(
    tiny_graph,
    snapshot,  # noqa: F811
    half_without_history,
):
    early, choice = _choice_before_validation(tiny_graph, snapshot)
    assert list(choice.scale_scores) == list(PRIOR_HALF_LIFE_SCALES)
    best = max(choice.scale_scores.values())
    assert choice.scale_scores[choice.half_life_scale] == best
    first_best = next(h for h, s in choice.scale_scores.items() if s == best)
    assert choice.half_life_scale == first_best  # ties: the earlier scale
    # each scale's score: the recall over all pairs at that scale's own two weights
    for scale, score in choice.scale_scores.items():
        alone = choose_prior_weight(tiny_graph, early, k_values=(5, 20), half_life_scales=(scale,))
        result = conversion_recall(
            tiny_graph,
            early,
            k_values=(5, 20),
            window="validation",
            prior_weight=alone.weight,
            cold_prior_weight=alone.weight_without_history,
            prior_half_life_scale=scale,
        )
        method = EXACT_PRIOR if (alone.weight or alone.weight_without_history) else EXACT
        assert score == pytest.approx(np.mean(result.recall[method]))
        if scale == choice.half_life_scale:  # the chosen scale's weights are the choice's
            assert (alone.weight, alone.scores) == (choice.weight, choice.scores)
    assert "half-lives x" in choice.render()


@pytest.fixture
def half_without_history(monkeypatch):
    """Every other query user counted as without a history (the tiny world's converting
    users all have one)."""

    def alternate(graph, users, cutoff):
        return np.arange(len(users)) % 2 == 0

    monkeypatch.setattr(conversion_retrieval, "users_with_history", alternate)


def test_users_without_a_history_get_their_own_weight(
    tiny_graph,
    snapshot,  # noqa: F811
    half_without_history,
):
    early, choice = _choice_before_validation(tiny_graph, snapshot)
    assert choice.with_history and list(choice.cold_scores) == sorted(PRIOR_WEIGHTS)
    for weight, score in choice.cold_scores.items():  # each over the pairs without one
        result = _validation_recall(tiny_graph, early, weight, choice.half_life_scale)
        values = result.without_history[EXACT_PRIOR if weight else EXACT]
        assert score == pytest.approx(np.mean(values))
    # the best on their pairs (the smallest among equals), but never below the first
    best = max(choice.cold_scores.values())
    chosen = min(w for w, s in choice.cold_scores.items() if s == best)
    assert choice.cold_weight == max(chosen, choice.weight)
    assert choice.weight_without_history == choice.cold_weight
    assert "for users without a history" in choice.render()


def test_users_without_a_history_rank_by_their_own_weight(
    tiny_graph,
    snapshot,  # noqa: F811
    half_without_history,
):
    ranked = ranked_lists(
        tiny_graph, snapshot, top=20, exclude_seen=True, prior_weight=0.5, cold_prior_weight=1e4
    )
    history = ranked.history
    assert history.any() and (~history).any()
    same = ranked_lists(tiny_graph, snapshot, top=20, exclude_seen=True, prior_weight=0.5)
    # users with a history: the blend at 0.5, as without a separate weight
    np.testing.assert_array_equal(
        ranked.lists[EXACT_PRIOR][history], same.lists[EXACT_PRIOR][history]
    )
    # users without one: the prior alone (a weight that drowns the embedding's score)
    np.testing.assert_array_equal(
        ranked.lists[EXACT_PRIOR][~history], ranked.lists[TRENDING][~history]
    )
    # no prior for users with a history still blends for those without
    cold_only = ranked_lists(tiny_graph, snapshot, top=20, exclude_seen=True, cold_prior_weight=1e4)
    np.testing.assert_array_equal(cold_only.lists[EXACT_PRIOR][history], same.lists[EXACT][history])
    result = conversion_recall(tiny_graph, snapshot, prior_weight=0.5, cold_prior_weight=2.0)
    assert "0.5 (2 for users without a history)" in "\n".join(result.render())


def test_a_snapshot_whose_encoder_read_the_window_is_refused(tiny_graph, snapshot):  # noqa: F811
    # the tiny run chose its checkpoint on the validation window
    with pytest.raises(InputError, match="read data after the validation start"):
        choose_prior_weight(tiny_graph, snapshot)


def test_a_score_matrix_gets_the_weight_by_the_same_rule(tiny_graph, snapshot):  # noqa: F811
    start = tiny_graph.manifest.time.validation_start
    early = _trained_before(snapshot, start)
    ranked = ranked_lists(tiny_graph, early, top=20, window="validation")
    z, rows = early.embeddings(), snapshot_rows(early, tiny_graph)
    scores = z[rows[ranked.users]] @ z[rows[ranked.ads]].T
    prior = engagement_prior(tiny_graph, ranked.ads, start)
    by_matrix = choose_blend_weight(ranked, scores, prior, k_values=(5, 20))
    by_snapshot = choose_prior_weight(tiny_graph, early, k_values=(5, 20), half_life_scales=(1.0,))
    assert by_matrix.scores == pytest.approx(by_snapshot.scores)
    assert by_matrix.weight == by_snapshot.weight
    # with the decay too: at one scale the weight's choice, over all scales the best one
    one = choose_blend_decay(tiny_graph, ranked, scores, half_life_scales=(1.0,), k_values=(5, 20))
    assert (one.weight, one.scores, one.half_life_scale) == (
        by_matrix.weight,
        by_matrix.scores,
        1.0,
    )
    decay = choose_blend_decay(tiny_graph, ranked, scores, k_values=(5, 20))
    assert list(decay.scale_scores) == list(PRIOR_HALF_LIFE_SCALES)
    best = max(decay.scale_scores.values())
    assert decay.half_life_scale == next(h for h, v in decay.scale_scores.items() if v == best)
    scaled = engagement_prior(tiny_graph, ranked.ads, start, decay.half_life_scale)
    assert decay.weight == choose_blend_weight(ranked, scores, scaled, k_values=(5, 20)).weight
    # scores that put each user's own conversions first need no prior
    truth = {(int(u), int(a)) for u, a in ranked.truth.iter_rows()}
    perfect = np.array(
        [[float((int(u), int(a)) in truth) for a in ranked.ads] for u in ranked.users]
    )
    assert choose_blend_weight(ranked, perfect * 100, prior, k_values=(5, 20)).weight == 0.0


def test_the_job_chooses_from_the_newest_snapshot_that_read_nothing_of_the_window(
    tiny_graph,
    snapshot,  # noqa: F811
):
    start = tiny_graph.manifest.time.validation_start
    early = _trained_before(snapshot, start)
    # the tiny run's own snapshot read the validation window: nothing to choose on
    assert prior_from_snapshots(tiny_graph, [snapshot]) is None
    chosen = prior_from_snapshots(tiny_graph, [early, snapshot])
    assert chosen is not None
    assert chosen.scores == choose_prior_weight(tiny_graph, early).scores
    # a snapshot without the window's converting users: no conversion to choose on
    ads_only = dataclasses.replace(early, table=early.table.filter(pl.col("node_type") == "ad"))
    assert prior_from_snapshots(tiny_graph, [ads_only]) is None


def test_the_choice_reads_nothing_at_or_after_the_test_start(
    tiny_world,
    tiny_graph,
    tmp_path,
    snapshot,  # noqa: F811
):
    """Copies of real edges dated from the test start on, and of every conversion in the
    three days after it (which would label the validation window's last exposures),
    leave the weights and the decay chosen on the validation window as they were: its
    labels end before the test start, and the priors are as of the validation start."""
    import shutil

    from hir_sdk.graph import build_graph_from_dir
    from hir_sdk.schema.manifest import DAY

    later = tmp_path / "later"
    shutil.copytree(tiny_world, later)
    edges = pl.read_parquet(later / "edges.parquet")
    t = tiny_graph.manifest.time
    extra = edges.sample(n=3000, seed=1, with_replacement=True)
    ts = np.random.default_rng(0).integers(t.test_start, t.end, len(extra))
    extra = extra.with_columns(pl.Series("ts", ts).cast(edges["ts"].dtype))
    converted = edges.filter(pl.col("edge_type").cast(pl.String).is_in(["purchase", "pixel_fire"]))
    ts = t.test_start + converted["ts"].cast(pl.Int64).to_numpy() % (3 * DAY)
    converted = converted.with_columns(pl.Series("ts", ts).cast(edges["ts"].dtype))
    pl.concat([edges, extra, converted]).write_parquet(later / "edges.parquet")
    graph = build_graph_from_dir(later)
    early, choice = _choice_before_validation(tiny_graph, snapshot)
    assert choose_prior_weight(graph, early, k_values=(5, 20)) == choice
    ranked = ranked_lists(tiny_graph, early, top=20, window="validation")
    again = ranked_lists(graph, early, top=20, window="validation")
    assert again.truth.equals(ranked.truth)
    z, rows = early.embeddings(), snapshot_rows(early, tiny_graph)
    scores = z[rows[ranked.users]] @ z[rows[ranked.ads]].T
    decay = choose_blend_decay(tiny_graph, ranked, scores, k_values=(5, 20))
    assert choose_blend_decay(graph, again, scores, k_values=(5, 20)) == decay
