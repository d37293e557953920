"""The RecBole peers of `benchmarks/movielens_peers.py` (run where RecBole and what it
imports are installed: `benchmarks/requirements-peers.txt`): nothing at or after the test
start is read, and the selection fit scores the validation queries, so a RecBole peer
gets the engagement prior by the rule HIR's and the `implicit` peers' get it."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")
from peers import recbole_models  # noqa: E402
from peers.protocol import query_lists  # noqa: E402

from tests.benchmarks.conftest import scrambled_after  # noqa: E402

recbole_models.compatibility()  # RecBole 1.2.0 imports names NumPy 2 removed
pytest.importorskip("recbole.config")  # with colorlog, pandas, ... (not SDK dependencies)


def fit(graph, tmp_path, queries_of=None):
    """LightGCN, two epochs at most, for the queries of `queries_of` (default `graph`)."""
    queries_of = graph if queries_of is None else queries_of
    return recbole_models.recbole_fit(
        "LightGCN",
        graph,
        query_lists(queries_of),
        tmp_path,
        max_epochs=2,
        validation=query_lists(queries_of, "validation"),
    )


def test_lightgcn_reads_nothing_at_or_after_the_test_start(graph, tmp_path):
    """Edges from the test start on scrambled: the same epoch choice, validation file,
    scores of the validation queries and of the test queries (the queries themselves
    read the test window's truth, so both runs rank the original graph's)."""
    torch = pytest.importorskip("torch")
    torch.set_num_threads(1)
    cutoff = graph.manifest.time.test_start
    a = fit(graph, tmp_path / "a")
    b = fit(scrambled_after(graph, cutoff), tmp_path / "b", queries_of=graph)
    valid = "LightGCN-select/peers/peers.valid.inter"
    assert (tmp_path / "a" / valid).read_text() == (tmp_path / "b" / valid).read_text()
    assert a.epochs == b.epochs
    np.testing.assert_array_equal(a.scores, b.scores)
    np.testing.assert_array_equal(a.validation_scores, b.validation_scores)


def test_the_selection_fit_scores_the_validation_queries(graph, tmp_path):
    validation = query_lists(graph, "validation")
    peer = fit(graph, tmp_path)
    assert peer.validation_scores.shape == (len(validation.users), len(validation.ads))
    assert peer.scores.shape == (len(query_lists(graph).users), len(peer.ad_nodes))
    # users with no rating before the validation start score 0, the others do not
    known = np.isin(
        validation.users, graph.src[: graph.edges_before(graph.manifest.time.validation_start)]
    )
    assert not peer.validation_scores[~known].any()
    assert np.abs(peer.validation_scores[known]).sum(axis=1).min() > 0
