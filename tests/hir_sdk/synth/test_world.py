"""The synthetic world: determinism, validity, and the behaviour it plants."""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from hir_sdk.schema import load_dataset
from hir_sdk.schema.manifest import DAY
from hir_sdk.synth import SCALES, generate_world, write_world
from hir_sdk.synth.taxonomy import N_LEAVES, SUPER_INTERESTS, leaf_at

TINY = SCALES["tiny"]


def _files(root):
    return sorted(p.relative_to(root) for p in root.rglob("*") if p.is_file())


def test_same_seed_gives_byte_identical_files(tiny_world, tmp_path):
    again = write_world(generate_world(TINY, seed=0), tmp_path / "again")
    assert _files(again) == _files(tiny_world)
    assert len(_files(again)) == 8  # with the output marker (hir_sdk.io.MARKER_FILE)
    for rel in _files(again):
        assert (again / rel).read_bytes() == (tiny_world / rel).read_bytes(), rel


def test_other_seed_gives_other_world(tiny_world, tmp_path):
    other = write_world(generate_world(TINY, seed=1), tmp_path / "other")
    assert (other / "edges.parquet").read_bytes() != (tiny_world / "edges.parquet").read_bytes()


@pytest.fixture(scope="module")
def world(tiny_world):
    ds = load_dataset(tiny_world)
    raw = pl.read_parquet(tiny_world / "edges.parquet").with_columns(
        pl.col("edge_type", "src_type", "dst_type").cast(pl.String)
    )
    truth = {
        name: pl.read_parquet(tiny_world / "truth" / f"{name}.parquet").with_columns(
            pl.col("^node_type$").cast(pl.String)
        )
        for name in ("entities", "users", "taxonomy")
    }
    return ds, raw, truth


def test_world_passes_validation_and_stays_in_time(world):
    ds, raw, _ = world
    t = ds.manifest.time
    assert raw["ts"].min() >= t.start and raw["ts"].max() < t.end
    assert ds.manifest.node_types == ("user", "ad", "advertiser", "campaign", "product", "pixel")
    assert {s.rel for s in ds.manifest.edge_types_with_role("conversion")} == {
        "purchase",
        "pixel_fire",
    }
    assert (t.end - t.start) == TINY.days * DAY


def test_conversions_are_rare(world):
    _, raw, _ = world
    counts = dict(raw.group_by("edge_type").len().iter_rows())
    rate = counts["purchase"] / counts["impression"]
    assert 0.0005 < rate < 0.01, rate
    assert counts["impression"] > counts["click"] > counts["add_to_cart"] > counts["purchase"]


def test_funnel_steps_follow_their_causes(world):
    _, raw, _ = world

    def first(rel, key):
        return (
            raw.filter(pl.col("edge_type") == rel)
            .group_by("src_id", "dst_id")
            .agg(pl.col("ts").min().alias(key))
        )

    clicks = first("click", "click_ts").join(
        first("impression", "imp_ts"), on=["src_id", "dst_id"], how="left"
    )
    assert clicks["imp_ts"].null_count() == 0
    assert (clicks["imp_ts"] < clicks["click_ts"]).all()
    buys = first("purchase", "buy_ts").join(
        first("add_to_cart", "cart_ts"), on=["src_id", "dst_id"], how="left"
    )
    assert buys["cart_ts"].null_count() == 0
    assert (buys["cart_ts"] < buys["buy_ts"]).all()


def test_conversions_follow_leaf_interest_match(world):
    """Purchases land on the user's planted leaves far more often than impressions do."""
    _, raw, truth = world
    leaves = pl.concat(
        [
            truth["users"].select(
                pl.col("node_id").alias("src_id"), pl.col("leaf_start").alias("leaf")
            ),
            truth["users"].select(
                pl.col("node_id").alias("src_id"), pl.col("leaf_end").alias("leaf")
            ),
        ]
    ).unique()
    entity_leaf = truth["entities"].select("node_type", pl.col("node_id").alias("dst_id"), "leaf")

    def share_on_user_leaves(rel, dst_type):
        events = raw.filter(pl.col("edge_type") == rel).join(
            entity_leaf.filter(pl.col("node_type") == dst_type), on="dst_id"
        )
        hits = events.join(leaves, on=["src_id", "leaf"], how="semi").height
        return hits / events.height

    imp = share_on_user_leaves("impression", "ad")
    buy = share_on_user_leaves("purchase", "product")
    assert buy > imp + 0.25, (imp, buy)


def test_activity_is_heavy_tailed(world):
    _, raw, _ = world
    per_user = (
        raw.filter(pl.col("edge_type") == "impression")
        .group_by("src_id")
        .len()["len"]
        .sort(descending=True)
        .to_numpy()
    )
    top_decile = per_user[: max(1, len(per_user) // 10)].sum() / per_user.sum()
    assert top_decile > 0.3, top_decile


def test_cold_start_advertisers_launch_in_the_last_weeks(world):
    ds, raw, truth = world
    cold = truth["entities"].filter((pl.col("node_type") == "advertiser") & pl.col("cold_start"))
    assert cold.height >= 1
    nodes = ds.nodes.filter(pl.col("node_type") == "advertiser")
    created = nodes.join(cold.select("node_id"), on="node_id")["created_ts"]
    assert (created >= ds.manifest.time.end - TINY.cold_start_days * DAY).all()
    first_seen = (
        raw.filter(pl.col("src_type") == "advertiser")
        .join(cold.select(pl.col("node_id").alias("src_id")), on="src_id")
        .group_by("src_id")
        .agg(pl.col("ts").min())["ts"]
    )
    assert (first_seen >= ds.manifest.time.end - TINY.cold_start_days * DAY).all()


def test_content_covers_advertisers_products_ads_with_interest_words(world):
    ds, _, truth = world
    assert ds.content is not None
    assert set(ds.content["node_type"].unique()) == {"advertiser", "product", "ad"}
    products = ds.content.filter(pl.col("node_type") == "product").join(
        truth["entities"].filter(pl.col("node_type") == "product").select("node_id", "leaf"),
        on="node_id",
    )
    own = [
        any(w in text for w in leaf_at(leaf).words)
        for text, leaf in products.select("text", "leaf").iter_rows()
    ]
    assert 0.7 < float(np.mean(own)) < 1.0  # mostly own-leaf words, with noise


def test_truth_is_complete(world):
    ds, _, truth = world
    assert truth["taxonomy"].height == N_LEAVES
    assert truth["taxonomy"]["super_name"].unique().len() == len(SUPER_INTERESTS)
    non_users = ds.nodes.filter(pl.col("node_type") != "user").height
    assert truth["entities"].height == non_users
    weights = truth["users"].group_by("node_id").agg(pl.col("weight").sum())["weight"]
    assert np.allclose(weights.to_numpy(), 1.0)
    drifted = truth["users"].filter(pl.col("leaf_start") != pl.col("leaf_end"))
    assert drifted["node_id"].n_unique() == ds.nodes.filter(pl.col("node_type") == "user").height


def test_scales_grow():
    sizes = [
        SCALES[s].n_users * SCALES[s].impressions_per_user for s in ("tiny", "small", "medium")
    ]
    assert sizes == sorted(sizes)
    assert 0.8e6 < sizes[1] < 1.2e6 and 8e6 < sizes[2] < 1.2e7
