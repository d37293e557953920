"""As-of features: nothing at or after an example's request time may influence it."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph import build_graph
from hir_sdk.ranking.features import AsOfFeatures
from hir_sdk.schema import load_dataset


@pytest.fixture(scope="module")
def setup(tiny_world):
    dataset = load_dataset(tiny_world)
    graph = build_graph(dataset)
    examples = build_examples(graph, "test").frame
    features = AsOfFeatures(graph)
    full = features.compute(
        examples["user"].to_numpy(), examples["ad"].to_numpy(), examples["ts"].to_numpy()
    )
    return dataset, examples, full


def _truncated_features(dataset, user, ad, t):
    """Features computed from a dataset that holds only the events before `t`."""
    cut = dataclasses.replace(dataset, edges=dataset.edges.filter(pl.col("ts") < t))
    return AsOfFeatures(build_graph(cut)).compute(np.array([user]), np.array([ad]), np.array([t]))


@settings(max_examples=25, deadline=None)
@given(st.integers(min_value=0, max_value=10**9))
def test_no_feature_uses_an_event_at_or_after_the_request_time(setup, pick):
    dataset, examples, full = setup
    row = pick % examples.height
    user, ad, t = (int(examples[c][row]) for c in ("user", "ad", "ts"))
    alone = _truncated_features(dataset, user, ad, t)
    np.testing.assert_array_equal(alone.to_numpy()[0], full.to_numpy()[row])


def test_the_exposure_itself_is_not_counted(setup):
    """Its own impression is at the request time: not in `user_imps`, but in the next
    exposure's count."""
    dataset, examples, full = setup
    graph = build_graph(dataset)
    f = AsOfFeatures(graph)
    row = 0
    user, ad, t = (int(examples[c][row]) for c in ("user", "ad", "ts"))
    now = f.compute(np.array([user]), np.array([ad]), np.array([t]))
    later = f.compute(np.array([user]), np.array([ad]), np.array([t + 1]))
    assert later["ua_imps"][0] >= now["ua_imps"][0] + 1
    assert later["ad_imps"][0] >= now["ad_imps"][0] + 1


def test_features_are_finite_except_missing_recency_and_attributes(setup):
    _, examples, full = setup
    assert full.height == examples.height
    recency = [c for c in full.columns if "days_since" in c or c == "ad_age_days"]
    others = full.drop(recency).select(pl.exclude("^.*_attr_.*$")).to_numpy()
    assert np.isfinite(others).all()
    rates = full.select(pl.col("^.*_(ctr|cvr)$")).to_numpy()
    assert ((rates > 0) & (rates < 1)).all()


def test_node_attributes_join_as_they_are(setup):
    """The world's ads have a `bid` and its products a `price`: an example reads its ad's
    bid as written in nodes.parquet; no column for what users and ads never have."""
    dataset, examples, full = setup
    assert [c for c in full.columns if "_attr_" in c] == ["ad_attr_bid"]
    nodes = dataset.nodes.select("index", "bid")
    bids = examples.select(pl.col("ad").alias("index")).join(nodes, on="index", how="left")
    np.testing.assert_array_equal(full["ad_attr_bid"].to_numpy(), bids["bid"].to_numpy())
    assert np.isfinite(full["ad_attr_bid"].to_numpy()).all()
