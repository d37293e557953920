"""recall@K of the ads users convert on, from a snapshot: checked against direct loops."""

from __future__ import annotations

import dataclasses
import shutil

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.evaluation.conversion_retrieval import FALLBACK, conversion_recall, ranked_lists
from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import build_graph_from_dir
from hir_sdk.interests.hierarchy import snapshot_nodes, snapshot_rows
from tests.hir_sdk.interests.conftest import snapshot  # noqa: F401


def test_recall_of_exact_and_popular_lists_by_loops(tiny_graph, snapshot):  # noqa: F811
    result = conversion_recall(tiny_graph, snapshot, k_values=(5, 20))
    nodes = snapshot_nodes(snapshot, tiny_graph)
    ads = snapshot.of_type("ad")
    z = snapshot.embeddings()
    test = build_examples(tiny_graph, "test").frame.filter(pl.col("label") == 1)
    pairs = {
        (u, a)
        for u, a in zip(test["user"], test["ad"], strict=True)
        if u in set(nodes.tolist()) and a in set(nodes[ads].tolist())
    }
    assert result.pairs == len(pairs) > 0 and result.ads == len(ads)
    row = {int(n): i for i, n in enumerate(nodes)}
    cutoff = tiny_graph.manifest.time.test_start
    engaged = np.bincount(tiny_graph.dst[tiny_graph.ts < cutoff], minlength=tiny_graph.num_nodes)
    popular = sorted(nodes[ads].tolist(), key=lambda a: (-engaged[a], a))
    for i, k in enumerate((5, 20)):
        exact_hits = popular_hits = 0
        for u, a in pairs:
            scores = z[ads] @ z[row[u]]
            top = nodes[ads][np.argsort(-scores, kind="stable")[:k]]
            exact_hits += a in top
            popular_hits += a in popular[:k]
        assert result.recall["exact k-NN on embeddings"][i] == pytest.approx(
            exact_hits / len(pairs)
        )
        assert result.recall["popularity (engagement before test)"][i] == pytest.approx(
            popular_hits / len(pairs)
        )
    for values in result.recall.values():
        assert 0 <= values[0] <= values[1] <= 1
    assert "| BoM inverted index, re-scored |" in "\n".join(result.render())


def test_a_snapshot_after_the_test_start_is_refused(tiny_graph, snapshot):  # noqa: F811
    late = dataclasses.replace(
        snapshot, meta={**snapshot.meta, "as_of": tiny_graph.manifest.time.test_start + 1}
    )
    with pytest.raises(InputError, match="newer than the test start"):
        conversion_recall(tiny_graph, late)


def test_exclude_seen_skips_the_ads_each_user_engaged_before_the_test(tiny_graph, snapshot):  # noqa: F811
    result = conversion_recall(tiny_graph, snapshot, k_values=(5, 20), exclude_seen=True)
    nodes = snapshot_nodes(snapshot, tiny_graph)
    ads = snapshot.of_type("ad")
    z = snapshot.embeddings()
    cutoff = tiny_graph.manifest.time.test_start
    before = tiny_graph.ts < cutoff
    seen = set(zip(tiny_graph.src[before].tolist(), tiny_graph.dst[before].tolist(), strict=True))
    test = build_examples(tiny_graph, "test").frame.filter(pl.col("label") == 1)
    pairs = {
        (u, a)
        for u, a in zip(test["user"], test["ad"], strict=True)
        if u in set(nodes.tolist()) and a in set(nodes[ads].tolist())
    }
    assert any((u, a) in seen for u, a in pairs)  # the tiny world has repeat converters
    row = {int(n): i for i, n in enumerate(nodes)}
    engaged = np.bincount(tiny_graph.dst[before], minlength=tiny_graph.num_nodes)
    popular = sorted(nodes[ads].tolist(), key=lambda a: (-engaged[a], a))
    for i, k in enumerate((5, 20)):
        exact_hits = popular_hits = 0
        for u, a in pairs:
            ranked = nodes[ads][np.argsort(-(z[ads] @ z[row[u]]), kind="stable")]
            exact_hits += a in [b for b in ranked.tolist() if (u, b) not in seen][:k]
            popular_hits += a in [b for b in popular if (u, b) not in seen][:k]
        assert result.recall["exact k-NN on embeddings"][i] == pytest.approx(
            exact_hits / len(pairs)
        )
        assert result.recall["popularity (engagement before test)"][i] == pytest.approx(
            popular_hits / len(pairs)
        )


def test_other_scores_join_the_lists_with_the_same_candidates(tiny_graph, snapshot):  # noqa: F811
    ranked = ranked_lists(tiny_graph, snapshot, top=20, exclude_seen=True)
    z = snapshot.embeddings()
    rows = snapshot_rows(snapshot, tiny_graph)
    scores = z[rows[ranked.users]] @ z[rows[ranked.ads]].T
    # the exact k-NN list is the embedding scores ranked the same way
    np.testing.assert_array_equal(ranked.rank(scores, 20), ranked.lists["exact k-NN on embeddings"])
    keys = set(ranked.seen.tolist())
    for user, row in zip(ranked.users, ranked.rank(-scores, 20), strict=True):
        assert not {int(user) * tiny_graph.num_nodes + int(a) for a in row if a >= 0} & keys
    relevant = ranked.relevant()
    assert sum(len(r) for r in relevant) == ranked.truth.height
    for user, ads in zip(ranked.users, relevant, strict=True):
        expected = ranked.truth.filter(pl.col("user") == user)["ad"].to_list()
        assert ads.tolist() == expected


def test_the_validation_window_ranks_as_of_its_start_against_its_own_likes(tiny_graph, snapshot):  # noqa: F811
    start = tiny_graph.manifest.time.validation_start
    if snapshot.as_of > start:
        with pytest.raises(InputError, match="newer than the validation start"):
            conversion_recall(tiny_graph, snapshot, window="validation")
        snapshot = dataclasses.replace(snapshot, meta={**snapshot.meta, "as_of": start})
    ranked = ranked_lists(tiny_graph, snapshot, window="validation", exclude_seen=True)
    truth = build_examples(tiny_graph, "validation").frame.filter(pl.col("label") == 1)
    nodes = set(snapshot_nodes(snapshot, tiny_graph).tolist())
    want = {(u, a) for u, a in zip(truth["user"], truth["ad"], strict=True) if u in nodes}
    got = set(zip(ranked.truth["user"], ranked.truth["ad"], strict=True))
    assert got and got <= want  # the validation window's likes, not the test window's
    test = build_examples(tiny_graph, "test").frame.filter(pl.col("label") == 1)
    assert got != set(zip(test["user"], test["ad"], strict=True))
    # seen: each user's ads before the validation start, so none of them is listed
    before = tiny_graph.ts < start
    for i, u in enumerate(ranked.users):
        earlier = set(tiny_graph.dst[before & (tiny_graph.src == u)].tolist())
        listed = set(ranked.lists["exact k-NN on embeddings"][i].tolist()) - {-1}
        assert not listed & earlier
    with pytest.raises(InputError, match="window must be one of"):
        conversion_recall(tiny_graph, snapshot, window="train")


@pytest.mark.parametrize("window", ["validation", "test"])
def test_recall_by_history_where_every_user_has_one(tiny_graph, snapshot, window):  # noqa: F811
    start = tiny_graph.manifest.time.window(window)[0]
    snapshot = dataclasses.replace(snapshot, meta={**snapshot.meta, "as_of": start})
    ranked = ranked_lists(tiny_graph, snapshot, top=20, window=window)
    earlier = set(tiny_graph.src[tiny_graph.ts < start].tolist())
    assert ranked.history.tolist() == [int(u) in earlier for u in ranked.users]
    assert ranked.history.all() and FALLBACK not in ranked.lists  # it would be exact k-NN
    result = conversion_recall(tiny_graph, snapshot, k_values=(5, 20), window=window)
    assert result.pairs_with_history == result.pairs
    assert result.with_history == result.recall and result.without_history == {}
    assert "with a history" not in "\n".join(result.render())


def test_users_new_in_the_window_get_the_popular_list(tiny_world, tiny_graph, snapshot, tmp_path):  # noqa: F811
    # the same world with two query users' edges before the test start removed: they
    # arrive in the test window (node ids, and so the snapshot's rows, are unchanged)
    start = tiny_graph.manifest.time.test_start
    users = ranked_lists(tiny_graph, snapshot, top=20).users[:2]
    new = tiny_graph.node_ids_of(users).tolist()
    shutil.copytree(tiny_world, tmp_path / "world")
    edges = pl.read_parquet(tiny_world / "edges.parquet")
    early = (pl.col("src_type") == "user") & pl.col("src_id").is_in(new) & (pl.col("ts") < start)
    edges.filter(~early).write_parquet(tmp_path / "world" / "edges.parquet")
    graph = build_graph_from_dir(tmp_path / "world")
    ranked = ranked_lists(graph, snapshot, top=20)
    assert ranked.history.tolist() == [u not in users for u in ranked.users]
    popular = ranked.lists["popularity (engagement before test)"]
    exact = ranked.lists["exact k-NN on embeddings"]
    fallback = ranked.lists[FALLBACK]
    for i, warm in enumerate(ranked.history):
        assert fallback[i].tolist() == (exact[i] if warm else popular[i]).tolist()
    result = conversion_recall(graph, snapshot, k_values=(5, 20))
    cold = ranked.truth["user"].is_in(users).sum()
    assert 0 < cold and result.pairs_with_history == result.pairs - cold
    truth = ranked.truth.filter(pl.col("user").is_in(users))
    want = [np.mean([a in popular[0][:k] for a in truth["ad"]]) for k in (5, 20)]
    assert result.without_history[FALLBACK] == pytest.approx(want)
    assert result.without_history["popularity (engagement before test)"] == pytest.approx(want)
    with_history = result.with_history["exact k-NN on embeddings"]
    assert result.with_history[FALLBACK] == with_history
    for name, overall in result.recall.items():  # the two slices' recalls weigh into it
        for j, r in enumerate(overall):
            warm, cold_r = result.with_history[name][j], result.without_history[name][j]
            weighted = (warm * result.pairs_with_history + cold_r * cold) / result.pairs
            assert r == pytest.approx(weighted)
    table = "\n".join(result.render())
    assert f"{result.pairs_with_history:,} by users with an edge before it" in table
    assert f"| {FALLBACK} |" in table and "@20, without" in table
