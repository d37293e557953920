"""`interest_drift`: users' interest slots move over time and conversions follow them.

A purchase's *held* leaves are, for each of the user's slots, the latest recorded move
before the purchase (`truth/interest_moves.parquet`), else the slot's planted leaves
(`leaf_start`, `leaf_end`); this is computed here from the truth files alone, with an
as-of join, independently of the generator's own look-up.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import DAY
from hir_sdk.synth import SCALES, SynthConfig, generate_world

DRIFT = 0.05
CFG = dataclasses.replace(SCALES["tiny"], n_users=3000)


def _purchases(world) -> pl.DataFrame:
    edges = pl.from_arrow(world.edges).with_columns(pl.col("edge_type").cast(pl.String))
    products = (
        pl.from_arrow(world.truth["entities"])
        .with_columns(pl.col("node_type").cast(pl.String))
        .filter(pl.col("node_type") == "product")
        .select(pl.col("node_id").alias("dst_id"), "leaf")
    )
    return (
        edges.filter(pl.col("edge_type") == "purchase")
        .join(products, on="dst_id")
        .select(pl.col("src_id").alias("node_id"), "ts", "leaf")
        .with_row_index("row")
    )


def _planted(world) -> pl.DataFrame:
    users = pl.from_arrow(world.truth["users"])
    return pl.concat(
        [
            users.select("node_id", pl.col(column).alias("leaf"))
            for column in ("leaf_start", "leaf_end")
        ]
    ).unique()


@pytest.fixture(scope="module")
def drifting():
    return generate_world(dataclasses.replace(CFG, interest_drift=DRIFT), seed=0)


@pytest.fixture(scope="module")
def steady():
    return generate_world(CFG, seed=0)


def test_moves_happen_at_the_drift_rate_and_chain(drifting):
    moves = pl.from_arrow(drifting.truth["interest_moves"])
    rate = moves.height / (CFG.n_users * CFG.days)
    assert abs(rate - DRIFT) < 4 * np.sqrt(DRIFT / (CFG.n_users * CFG.days)), rate
    assert moves["ts"].min() >= CFG.start and moves["ts"].max() < CFG.end
    assert (moves["leaf_from"] != moves["leaf_to"]).all()
    assert (moves["leaf_from"] // 16 == moves["leaf_to"] // 16).all()  # same super
    users = pl.from_arrow(drifting.truth["users"])
    assert moves.join(users, on=["node_id", "slot"], how="anti").height == 0  # used slots
    chain = moves.sort("node_id", "slot", "ts").with_columns(
        pl.col("leaf_to").shift(1).over("node_id", "slot").alias("previous")
    )
    first = chain.filter(pl.col("previous").is_null()).join(users, on=["node_id", "slot"])
    assert (first["leaf_from"] == first["leaf_end"]).all()
    later = chain.filter(pl.col("previous").is_not_null())
    assert later.height > 0 and (later["leaf_from"] == later["previous"]).all()


def test_conversions_follow_the_leaves_held_at_the_time(drifting):
    buys = _purchases(drifting)
    users = pl.from_arrow(drifting.truth["users"]).select(
        "node_id", "slot", "leaf_start", "leaf_end"
    )
    moves = pl.from_arrow(drifting.truth["interest_moves"]).select(
        "node_id", "slot", "ts", "leaf_to"
    )
    per_slot = (
        buys.join(users, on="node_id")
        .sort("ts")
        .join_asof(moves.sort("ts"), on="ts", by=["node_id", "slot"], strategy="backward")
    )
    held = pl.concat(
        [
            per_slot.select("row", pl.coalesce("leaf_to", column).alias("leaf"))
            for column in ("leaf_start", "leaf_end")
        ]
    ).unique()
    on_held = buys.join(held, on=["row", "leaf"], how="semi")
    ever = pl.concat(
        [_planted(drifting), moves.select("node_id", pl.col("leaf_to").alias("leaf"))]
    ).unique()
    stale = buys.join(ever, on=["node_id", "leaf"], how="semi").join(on_held, on="row", how="anti")
    assert buys.height > 100
    held_share, stale_share = on_held.height / buys.height, stale.height / buys.height
    assert held_share > 0.75 and stale_share < 0.15, (held_share, stale_share)


def test_late_conversions_leave_the_planted_leaves(drifting, steady):
    """In the test window, purchases land on the users' planted (start) leaves far less
    often than without drift: behaviour at test time differs from training time."""

    def late_share_on_planted(world) -> float:
        late = _purchases(world).filter(pl.col("ts") >= CFG.test_start)
        return late.join(_planted(world), on=["node_id", "leaf"], how="semi").height / late.height

    without, with_drift = late_share_on_planted(steady), late_share_on_planted(drifting)
    assert without > 0.85 and with_drift < without - 0.2, (without, with_drift)


def test_drift_changes_only_the_events(drifting, steady):
    assert drifting.nodes.equals(steady.nodes) and drifting.content.equals(steady.content)
    assert drifting.truth["users"].equals(steady.truth["users"])
    assert not drifting.edges.equals(steady.edges)
    assert "interest_moves" not in steady.truth


def test_moves_stay_in_the_world():
    short = dataclasses.replace(SCALES["tiny"], n_users=50, interest_drift=1.0)
    moves = pl.from_arrow(generate_world(short, seed=1).truth["interest_moves"])
    assert moves.height == 50 * short.days  # one move per user and day
    days = moves.group_by("node_id").agg(((pl.col("ts") - short.start) // DAY).n_unique())
    assert days.height == 50 and (days["ts"] == short.days).all()


@pytest.mark.parametrize("value", [-0.01, 1.01, float("inf"), None])
def test_out_of_range_drift_is_an_input_error(value):
    with pytest.raises(InputError, match="interest_drift must be a number in \\[0, 1\\]"):
        SynthConfig(
            "x", n_users=10, n_advertisers=2, impressions_per_user=5.0, interest_drift=value
        )
