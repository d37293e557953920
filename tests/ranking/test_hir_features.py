"""HIR feature columns: the right snapshot for each request time, values from a loop."""

from __future__ import annotations

import dataclasses

import numpy as np
import polars as pl
import pytest

from hir_sdk.interests import embed_entities
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking import recent_interest
from hir_sdk.ranking.hir_features import HirFeatures
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.interest_history import InterestHistory
from hir_sdk.ranking.recent_interest import RecentInterest

pytestmark = pytest.mark.long  # minutes of work: scheduled first (tests/conftest.py)


@pytest.fixture(scope="module")
def later(tiny_run, tiny_world):
    return embed_entities(tiny_run, tiny_world, "test_start", codebooks=4, codewords=16)


def test_features_come_from_the_latest_snapshot_not_after_the_request(snapshot, later, tiny_graph):
    g = tiny_graph
    t0, t1 = snapshot.as_of, later.as_of
    rng = np.random.default_rng(0)
    users = g.type_offsets[g.type_code("user")] + rng.integers(0, g.num_nodes_of("user"), 300)
    ads = g.type_offsets[g.type_code("ad")] + rng.integers(0, g.num_nodes_of("ad"), 300)
    ts = rng.integers(t0 - 5 * 86_400, g.manifest.time.end, 300)
    ts[:3] = [t0 - 1, t0, t1]  # the edges of the as-of rule
    features = HirFeatures(g, [later, snapshot], dims=2).compute(users, ads, ts)
    maps = {}
    for snap in (snapshot, later):
        maps[snap.as_of] = {int(n): i for i, n in enumerate(snapshot_nodes(snap, g))}
    checked = 0
    for i in range(300):
        chosen = later if ts[i] >= t1 else snapshot if ts[i] >= t0 else None
        row = features.row(i, named=True)
        if chosen is None:
            assert np.isnan(row["hir_cos"]) and np.isnan(row["hir_user_l0"])
            continue
        u = maps[chosen.as_of].get(int(users[i]))
        a = maps[chosen.as_of].get(int(ads[i]))
        if a is not None:
            assert row["hir_ad_l1"] == chosen.clusters(1)[a]
            assert row["hir_ad_e1"] == pytest.approx(chosen.embeddings()[a, 1])
        if u is None or a is None:
            assert np.isnan(row["hir_cos"]) and np.isnan(row["hir_same_l0"])
            continue
        z = chosen.embeddings()
        assert row["hir_cos"] == pytest.approx(float(z[u] @ z[a]), abs=1e-6)
        shared = set(chosen.tokens()[u].tolist()) & set(chosen.tokens()[a].tolist())
        assert row["hir_bom_overlap"] == len(shared)
        same = chosen.clusters(0)[u] == chosen.clusters(0)[a]
        assert row["hir_same_l0"] == float(same)
        checked += 1
    assert checked > 100
    assert np.isnan(features["hir_cos"][0])  # one second before the first snapshot


def test_needs_snapshots():
    with pytest.raises(ValueError, match="at least one snapshot"):
        HirFeatures(None, [])


def test_interest_history_counts_by_loop(snapshot, later, tiny_graph):
    """Each count: the user's exposures / clicks with ts < t onto ads that sit, in the
    example's snapshot, in the candidate's cluster; and the same events weighted
    2^(-age / half-life) for each half-life."""
    assert _history_nonzero_by_loop(tiny_graph, snapshot, later) > 20


def test_interest_history_keys_hold_clusters_past_the_first_snapshots_sizes(
    snapshot, later, tiny_graph
):
    """A later snapshot with twice the prototypes per level, every other row moved to the
    new half: `(user, cluster)` keys must not run into the next user's (`user * K + c`
    made `(u, c + K)` equal `(u + 1, c)`)."""
    sizes = [len(p) for p in later.prototypes]
    odd = pl.int_range(pl.len()) % 2 == 1
    wide = dataclasses.replace(
        later,
        prototypes=[np.concatenate([p, p]) for p in later.prototypes],
        table=later.table.with_columns(
            pl.when(odd)
            .then(pl.col(f"cluster_l{level}") + size)
            .otherwise(pl.col(f"cluster_l{level}"))
            for level, size in enumerate(sizes)
        ),
    )
    assert _history_nonzero_by_loop(tiny_graph, snapshot, wide) > 20


def _history_nonzero_by_loop(g, snapshot, later) -> int:
    """Check InterestHistory against a loop on 60 real (user, ad) pairs; how many counts
    were not zero."""
    lookup = HirLookup(g, [later, snapshot])
    history = InterestHistory(g, lookup, half_lives=(0.5, 4.0))
    rng = np.random.default_rng(1)
    exposures = np.flatnonzero(g.etype == g.edge_type_code("impression"))
    pick = rng.choice(exposures, 60, replace=False)  # real (user, ad) pairs with history
    users, ads = g.src[pick], g.dst[pick]
    ts = rng.integers(snapshot.as_of - 86_400, g.manifest.time.end, 60)
    got = history.compute(users, ads, ts)
    roles = {"exposure": g.edge_type_code("impression"), "click": g.edge_type_code("click")}
    nonzero = 0
    for i in range(60):
        chosen = later if ts[i] >= later.as_of else snapshot if ts[i] >= snapshot.as_of else None
        row = got.row(i, named=True)
        if chosen is None:
            assert np.isnan(row["hir_hist_exposure_l0"])
            continue
        rows = {int(n): j for j, n in enumerate(snapshot_nodes(chosen, g))}
        if int(ads[i]) not in rows:
            assert np.isnan(row["hir_hist_click_l1"])
            continue
        for level in range(3):
            mine = chosen.clusters(level)[rows[int(ads[i])]]
            for role, code in roles.items():
                edges = np.flatnonzero((g.src == users[i]) & (g.etype == code) & (g.ts < ts[i]))
                same = [
                    e
                    for e in edges
                    if int(g.dst[e]) in rows and chosen.clusters(level)[rows[int(g.dst[e])]] == mine
                ]
                want = len(same)
                assert row[f"hir_hist_{role}_l{level}"] == want
                for h in (0.5, 4.0):
                    decayed = sum(2.0 ** (-(ts[i] - g.ts[e]) / (h * 86_400)) for e in same)
                    assert row[f"hir_hist_{role}_l{level}_h{h:g}d"] == pytest.approx(decayed)
                nonzero += want > 0
            e, c = row[f"hir_hist_exposure_l{level}"], row[f"hir_hist_click_l{level}"]
            assert row[f"hir_hist_ctr_l{level}"] == pytest.approx((c + 1) / (e + 2))
    return nonzero


def test_recent_interest_by_loop(snapshot, later, tiny_graph, monkeypatch):
    """Max / mean cosine between the candidate and the user's last `last` clicked and
    exposed ads before t, every embedding read as of t, against a loop over the edges."""
    g = tiny_graph
    monkeypatch.setattr(recent_interest, "CHUNK", 7)  # blocks cut across the examples
    lookup = HirLookup(g, [later, snapshot])
    recent = RecentInterest(g, lookup, last=5)
    rng = np.random.default_rng(2)
    exposures = np.flatnonzero(g.etype == g.edge_type_code("impression"))
    pick = rng.choice(exposures, 40, replace=False)
    users, ads = g.src[pick], g.dst[pick]
    ts = rng.integers(snapshot.as_of - 86_400, g.manifest.time.end, 40)
    got = recent.compute(users, ads, ts)
    rows = {
        s.as_of: {int(n): j for j, n in enumerate(snapshot_nodes(s, g))} for s in (snapshot, later)
    }

    def embedding(node: int, t: int) -> np.ndarray | None:
        for s in (later, snapshot):  # the latest snapshot at or before t that holds it
            if s.as_of <= t and node in rows[s.as_of]:
                return s.embeddings()[rows[s.as_of][node]]
        return None

    roles = {"exposure": g.edge_type_code("impression"), "click": g.edge_type_code("click")}
    compared = 0
    for i in range(40):
        row = got.row(i, named=True)
        z = embedding(int(ads[i]), int(ts[i]))
        for role, code in roles.items():
            edges = np.flatnonzero((g.src == users[i]) & (g.etype == code) & (g.ts < ts[i]))
            past = [embedding(int(g.dst[e]), int(ts[i])) for e in edges[-5:]]
            sims = [
                float(p.astype(np.float64) @ z) for p in past if p is not None and z is not None
            ]
            if not sims:
                assert np.isnan(row[f"hir_recent_{role}_max"])
                assert np.isnan(row[f"hir_recent_{role}_mean"])
                continue
            assert row[f"hir_recent_{role}_max"] == pytest.approx(max(sims), abs=1e-6)
            assert row[f"hir_recent_{role}_mean"] == pytest.approx(np.mean(sims), abs=1e-6)
            compared += 1
    assert compared > 30


def test_recent_interest_needs_a_history_length(snapshot, tiny_graph):
    with pytest.raises(ValueError, match="last must be >= 1"):
        RecentInterest(tiny_graph, HirLookup(tiny_graph, [snapshot]), last=0)


def test_interest_history_refuses_bad_half_lives(snapshot, tiny_graph):
    lookup = HirLookup(tiny_graph, [snapshot])
    for bad in ((0.0,), (3.0, -1.0), (float("nan"),)):
        with pytest.raises(ValueError, match="half-lives"):
            InterestHistory(tiny_graph, lookup, half_lives=bad)


def test_hir_features_share_one_exposure_history_and_the_callers_owners(
    snapshot, later, tiny_graph
):
    """The recent-interest and neighbour-outcome columns read one exposure history, and
    the owners and conversions a caller passes; the columns are those of features built
    on their own."""
    from hir_sdk.graph.owners import OwnersAsOf, conversion_index
    from hir_sdk.ranking.neighbour_outcomes import NeighbourOutcomes

    g = tiny_graph
    lookup = HirLookup(g, [later, snapshot])
    owners = OwnersAsOf(g)
    conversions = conversion_index(g, owners)
    features = HirFeatures(
        g,
        lookup,
        history=False,
        recent=5,
        neighbours=8,
        owners=owners,
        conversions=conversions,
    )
    assert features.neighbours.owners is owners
    assert features.neighbours._conversions is conversions
    assert features.recent._history["exposure"] is features.neighbours._history
    exposures = np.flatnonzero(g.etype == g.edge_type_code("impression"))
    pick = np.random.default_rng(4).choice(exposures, 60, replace=False)
    user, ad, ts = g.src[pick], g.dst[pick], g.ts[pick] + 1
    got = features.compute(user, ad, ts)
    alone = pl.concat(
        [
            RecentInterest(g, lookup, last=5).compute(user, ad, ts),
            NeighbourOutcomes(g, lookup, last=8).compute(user, ad, ts),
        ],
        how="horizontal",
    )
    assert got.select(alone.columns).equals(alone)
    assert alone["hir_nbr_count"].max() > 0  # the neighbour columns hold real values
