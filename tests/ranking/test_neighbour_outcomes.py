"""Neighbour outcomes: similarity-weighted conversion outcomes of the user's past
exposures, against a loop over the edges; nothing at or after the request is read."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking import neighbour_outcomes
from hir_sdk.ranking.hir_features import HirFeatures, similarity_columns
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.neighbour_outcomes import NeighbourOutcomes
from hir_sdk.schema.manifest import DAY

pytestmark = pytest.mark.long  # reads the tiny trained run (tests/conftest.py)

LAST, TOP = 6, 3


@pytest.fixture(scope="module")
def examples(tiny_graph, snapshot):
    """Requests of users with exposure history, from a day before the snapshot on: half
    at random times, half an hour after one of the user's conversions (conversions are
    rare; these requests have converted exposures in their history)."""
    g = tiny_graph
    rng = np.random.default_rng(3)
    exposures = np.flatnonzero(np.isin(g.etype, g.role_codes("exposure")))
    pick = rng.choice(exposures, 40, replace=False)
    ts = rng.integers(snapshot.as_of - DAY, g.manifest.time.end, 40)
    conversions = np.flatnonzero(np.isin(g.etype, g.role_codes("conversion")))
    conversions = conversions[g.ts[conversions] >= snapshot.as_of]
    after = rng.choice(conversions, 40, replace=False)
    ads = rng.choice(g.dst[exposures], 40)
    return (
        np.concatenate([g.src[pick], g.src[after]]),
        np.concatenate([g.dst[pick], ads]),
        np.concatenate([ts, g.ts[after] + 1_800]),
    )


def _by_loop(g, snapshot, owners, window_s, user, ad, t):
    """(cosines, outcomes) of the user's last LAST exposures before t found in the
    snapshot, written edge by edge."""
    rows = {int(n): j for j, n in enumerate(snapshot_nodes(snapshot, g))}
    z = snapshot.embeddings().astype(np.float64)
    if t < snapshot.as_of or int(ad) not in rows:
        return None
    exposure, conversion = g.role_codes("exposure"), g.role_codes("conversion")
    mine = [e for e in range(g.num_edges) if g.src[e] == user and g.etype[e] in exposure]
    mine = [e for e in mine if g.ts[e] < t][-LAST:]
    cos, outcome = [], []
    for e in mine:
        item, ts = int(g.dst[e]), int(g.ts[e])
        if item not in rows:
            continue
        owner = int(owners.at(np.array([item]), ts)[0])
        converted = any(
            g.src[c] == user
            and g.etype[c] in conversion
            and ts < g.ts[c] <= ts + window_s
            and g.ts[c] < t  # never a conversion at or after the request
            and owner >= 0
            and int(owners.at(np.array([g.dst[c]]), int(g.ts[c]))[0]) == owner
            for c in range(g.num_edges)
        )
        cos.append(float(z[rows[item]] @ z[rows[int(ad)]]))
        outcome.append(float(converted))
    return np.array(cos), np.array(outcome)


def test_neighbour_outcomes_by_loop(tiny_graph, snapshot, examples, monkeypatch):
    g = tiny_graph
    monkeypatch.setattr(neighbour_outcomes, "CHUNK", 9)  # blocks cut across the examples
    owners = OwnersAsOf(g)
    feature = NeighbourOutcomes(
        g, HirLookup(g, [snapshot]), last=LAST, top=TOP, temperatures=(0.1, 1.0), owners=owners
    )
    assert feature.columns == [
        "hir_nbr_rate_t0.1",
        "hir_nbr_rate_t1",
        "hir_nbr_rate_top3",
        "hir_nbr_gap",
        "hir_nbr_count",
    ]
    got = feature.compute(*examples)
    assert got.columns == feature.columns
    compared = positive = gaps = 0
    for i, (user, ad, t) in enumerate(zip(*examples, strict=True)):
        row = got.row(i, named=True)
        want = _by_loop(g, snapshot, owners, feature.window_s, user, ad, t)
        if want is None or len(want[0]) == 0:
            assert row["hir_nbr_count"] == 0
            assert all(np.isnan(row[c]) for c in feature.columns[:-1])
            continue
        cos, y = want
        assert row["hir_nbr_count"] == len(cos)
        for tau in (0.1, 1.0):
            w = np.exp((cos - cos.max()) / tau)
            assert row[f"hir_nbr_rate_t{tau:g}"] == pytest.approx((w * y).sum() / w.sum())
        top = np.argsort(-cos, kind="stable")[:TOP]
        assert row["hir_nbr_rate_top3"] == pytest.approx(y[top].mean())
        if y.any() and not y.all():
            gap = cos[y > 0].max() - cos[y == 0].max()
            assert row["hir_nbr_gap"] == pytest.approx(gap, abs=1e-6)
            gaps += 1
        else:
            assert np.isnan(row["hir_nbr_gap"])
        compared += 1
        positive += bool(y.any())
    assert compared > 40 and positive > 5 and gaps > 5  # the loop checked real outcomes


def test_a_conversion_at_or_after_the_request_is_not_read(tiny_graph, snapshot):
    """The outcome of an exposure read at times across its first attributed conversion:
    0 up to and at the conversion, 1 after it."""
    g = tiny_graph
    owners = OwnersAsOf(g)
    feature = NeighbourOutcomes(g, HirLookup(g, [snapshot]), owners=owners)
    conversion = np.flatnonzero(np.isin(g.etype, g.role_codes("conversion")))
    converted_on = owners.at(g.dst[conversion], g.ts[conversion])
    for e in np.flatnonzero(np.isin(g.etype, g.role_codes("exposure"))):
        owner, ts = owners.at(g.dst[e : e + 1], g.ts[e])[0], int(g.ts[e])
        c = conversion[
            (g.src[conversion] == g.src[e])
            & (converted_on == owner)
            & (g.ts[conversion] > ts)
            & (g.ts[conversion] <= ts + feature.window_s)
        ]
        if owner >= 0 and len(c):
            tc = int(g.ts[c].min())
            break
    else:
        pytest.fail("the tiny world has no attributed conversion")
    args = (np.full(3, g.src[e]), np.full(3, g.dst[e]), np.full(3, ts))
    got = feature.outcomes(*args, np.array([tc, tc + 1, tc + 2]))
    assert got.tolist() == [0.0, 1.0, 1.0]


def test_hir_features_carry_the_neighbour_columns(tiny_graph, snapshot, examples):
    g = tiny_graph
    with_them = HirFeatures(g, [snapshot]).compute(*examples)
    without = HirFeatures(g, [snapshot], neighbours=0).compute(*examples)
    added = [c for c in with_them.columns if c not in without.columns]
    assert added == NeighbourOutcomes(g, HirLookup(g, [snapshot])).columns
    assert set(added) <= set(similarity_columns(with_them.columns))
    assert with_them["hir_nbr_count"].sum() > 0


def test_neighbour_outcomes_refuse_bad_settings(tiny_graph, snapshot):
    lookup = HirLookup(tiny_graph, [snapshot])
    for bad in ({"last": 0}, {"top": 0}, {"temperatures": (0.1, 0.0)}, {"attribution_days": 0}):
        with pytest.raises(ValueError, match="NeighbourOutcomes"):
            NeighbourOutcomes(tiny_graph, lookup, **bad)
