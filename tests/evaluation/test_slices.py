"""The A/B's test slices, checked against a brute-force reading of the tiny world's edges."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.evaluation.slices import slice_rules
from hir_sdk.evaluation.slices import test_slices as slices_of
from hir_sdk.graph.owners import OwnersAsOf, owner_of_nodes
from hir_sdk.schema import EdgeTypeSpec
from hir_sdk.schema.manifest import DAY
from tests.conftest import T0
from tests.hand_graph import (
    IMPRESSION,
    RUNS,
    draw_owner_links,
    edge_list,
    funnel_manifest,
    hand_graph,
)

NEW_ADS = "new ads (first exposure < {} days before the request)"
NEW = "new advertisers (first exposure < {} days before the request)"


@pytest.fixture(scope="module")
def requests(tiny_graph):
    """Every edge into an owned node from the validation start on, as (user, ad, owner, ts)."""
    g = tiny_graph
    owners = owner_of_nodes(g)
    keep = (owners[g.dst] >= 0) & (g.ts >= g.manifest.time.validation_start)
    return g.src[keep], g.dst[keep], owners[g.dst[keep]], g.ts[keep]


def _first_exposures(g) -> tuple[dict[int, int], dict[int, int]]:
    """First exposure of each ad, and of each owner (of an ad it owned at that time), by
    a plain loop over the exposure edges."""
    exposure = set(g.role_codes("exposure").tolist())
    owners = OwnersAsOf(g)
    ad_first, owner_first = {}, {}
    for _, ad, etype, ts in edge_list(g):
        if etype not in exposure:
            continue
        ad_first.setdefault(ad, ts)  # edges come in time order
        owner = int(owners.at(np.array([ad]), ts)[0])
        if owner >= 0:
            owner_first.setdefault(owner, ts)
    return ad_first, owner_first


def test_new_and_cold_start_slices_match_the_edges(tiny_graph, requests):
    g = tiny_graph
    user, ad, owner, ts = requests
    cutoff = g.manifest.time.test_start
    got = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=7)
    ad_first, owner_first = _first_exposures(g)
    late = np.iinfo(np.int64).max
    ad_seen = np.array([ad_first.get(int(a), late) for a in ad])
    owner_seen = np.array([owner_first.get(int(o), late) for o in owner])
    assert np.array_equal(got["cold-start ads"], ad_seen >= cutoff)
    assert np.array_equal(got[NEW_ADS.format(7)], ad_seen > ts - 7 * DAY)
    assert np.array_equal(got["cold-start advertisers"], owner_seen >= cutoff)
    new = got[NEW.format(7)]
    assert np.array_equal(new, owner_seen > ts - 7 * DAY)
    # the slice is about the advertiser's age at the request: it holds requests on both
    # sides of the cutoff, and not every request of a new advertiser stays new
    assert new[ts < cutoff].any() and new[ts >= cutoff].any() and not new.all()
    assert 0 < got["cold-start advertisers"].sum() and 0 < got["cold-start ads"].sum()
    # an advertiser is first exposed no later than its ads: a new ad's advertiser may be
    # old, never the other way round
    assert (got["cold-start ads"] >= got["cold-start advertisers"]).all()
    # a longer horizon keeps every new advertiser's request and adds older ones
    longer = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=30)[NEW.format(30)]
    assert (longer >= new).all() and longer.sum() > new.sum()


def _structural_first_graph(owner_type: str | None = "advertiser"):
    """Advertisers that make products users buy (structural edges) long before their
    first ad is shown: users 0-2, ads 3-6, products 7-8, advertisers 9-11."""
    links = [
        ("user", "impression", "ad", "exposure"),
        ("user", "purchase", "product", "conversion"),
        ("advertiser", "runs", "ad", "structural"),
        ("advertiser", "makes", "product", "structural"),
    ]
    manifest = dataclasses.replace(
        funnel_manifest(("user", "ad", "product", "advertiser")),
        edge_types=tuple(EdgeTypeSpec(*link) for link in links),
        owner_type=owner_type,
    )
    impression, purchase, runs, makes = range(4)
    (u0, u1, u2), (a0, a1, a2, a3), (p0, p1), (adv0, adv1, adv2) = (
        (0, 1, 2),
        (3, 4, 5, 6),
        (7, 8),
        (9, 10, 11),
    )

    def at(days: float) -> int:
        return T0 + int(days * DAY)

    edges = [
        (adv0, p0, makes, at(0)),
        (u0, p0, purchase, at(0.5)),
        (adv1, p1, makes, at(0)),
        (u1, p1, purchase, at(1)),
        (adv2, a3, runs, at(1)),  # adv2 sets up an ad long before it is shown
        (adv0, a0, runs, at(1)),
        (u0, a0, impression, at(2)),  # adv0's first exposure: day 2
        (adv1, a2, runs, at(5)),
        (u2, a2, impression, at(6.5)),  # adv1's first exposure: day 6.5
        (adv0, a1, runs, at(7.5)),
        # the requests (each an exposure)
        (u2, a3, impression, at(8.1)),
        (u0, a1, impression, at(8.2)),
        (u1, a2, impression, at(8.5)),
        (u0, a0, impression, at(9.0)),
        (u1, a2, impression, at(9.6)),
    ]
    graph = hand_graph(manifest, (3, 4, 2, 3), edges)
    requests = (
        np.array([u2, u0, u1, u0, u1]),
        np.array([a3, a1, a2, a0, a2]),
        np.array([at(8.1), at(8.2), at(8.5), at(9.0), at(9.6)]),
    )
    return graph, requests, (adv0, adv1, adv2)


def test_advertisers_seen_through_structural_edges_are_new_at_their_first_exposure():
    g, (user, ad, ts), advertisers = _structural_first_graph()
    cutoff = g.manifest.time.test_start
    owners = OwnersAsOf(g)
    owner = owners.at(ad, ts)
    adv0, adv1, adv2 = advertisers
    assert owner.tolist() == [adv2, adv0, adv1, adv0, adv1]
    # every advertiser has an edge long before the test window: counted from its first
    # edge of any kind, none would be new and these slices would be empty
    for adv in advertisers:
        assert g.ts[(g.src == adv) | (g.dst == adv)].min() <= T0 + DAY
    got = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=3, owners=owners)
    assert {k: v.tolist() for k, v in got.items() if "sparse" not in k} == {
        # requests: adv2's ad a3 (shown first at day 8.1), adv0's new ad a1 (adv0 shown
        # since day 2), adv1's a2 (shown since day 6.5) at days 8.5 and 9.6, adv0's a0
        "cold-start ads": [True, True, False, False, False],
        NEW_ADS.format(3): [True, True, True, False, False],
        "cold-start advertisers": [True, False, False, False, False],
        NEW.format(3): [True, False, True, False, False],
    }
    # the same slices when the owners are built inside
    again = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=3)
    assert {k: v.tolist() for k, v in again.items()} == {k: v.tolist() for k, v in got.items()}


def test_without_an_owner_type_each_ad_is_its_own_owner():
    g, (user, ad, ts), _ = _structural_first_graph(owner_type=None)
    owner = OwnersAsOf(g).at(ad, ts)
    assert np.array_equal(owner, ad)
    got = slices_of(g, user, ad, owner, ts, cutoff=g.manifest.time.test_start, new_days=3)
    assert not any("advertisers" in name for name in got)  # they would repeat the ads'
    assert got["cold-start ads"].tolist() == [True, True, False, False, False]
    rules = slice_rules(g, new_days=3)
    assert "each ad is its own owner" in rules["advertisers"]
    assert set(got) - set(rules) == set()


def test_every_slice_has_a_rule(tiny_graph, requests):
    got = slices_of(tiny_graph, *requests, cutoff=tiny_graph.manifest.time.test_start)
    rules = slice_rules(tiny_graph)
    assert set(got) <= set(rules) | {n for n in got if n.startswith("super-interest")}
    assert "first exposure" in rules["cold-start advertisers"]
    assert "; an advertiser's first exposure is" in rules["cold-start advertisers"]


def test_examples_without_an_owner_are_never_new_advertisers(tiny_graph, requests):
    g = tiny_graph
    user, ad, owner, ts = requests
    orphan = np.full_like(owner, -1)
    got = slices_of(g, user, ad, orphan, ts, cutoff=g.manifest.time.test_start)
    assert not got[NEW.format(14)].any() and not got["cold-start advertisers"].any()
    assert got[NEW_ADS.format(14)].any()  # the ad slices do not need an owner


def test_new_days_must_be_positive(tiny_graph, requests):
    with pytest.raises(ValueError, match="new_days must be >= 1, got 0"):
        slices_of(tiny_graph, *requests, cutoff=tiny_graph.manifest.time.test_start, new_days=0)
    # the A/B refuses it before any work
    with pytest.raises(InputError, match="new_advertiser_days must be >= 1, got 0"):
        ABConfig(new_advertiser_days=0)


@st.composite
def _requests_and_later_edges(draw):
    """A small funnel graph, requests in its test window, and for each request edges dated
    at or after it (owner links and impressions) to add."""
    users, ads, advertisers = 3, 4, 2
    day = st.integers(0, 10 * DAY - 1).map(lambda s: T0 + s)
    edges = draw_owner_links(draw, users, ads, advertisers, day)
    for _ in range(draw(st.integers(0, 20))):
        u, a = draw(st.integers(0, users - 1)), users + draw(st.integers(0, ads - 1))
        edges.append((u, a, IMPRESSION, draw(day)))
    test_day = st.integers(8 * DAY, 10 * DAY - 1).map(lambda s: T0 + s)
    requests = [
        (draw(st.integers(0, users - 1)), users + draw(st.integers(0, ads - 1)), draw(test_day))
        for _ in range(4)
    ]
    later = []
    for _, _, t in requests:
        for _ in range(draw(st.integers(1, 4))):
            ad = users + draw(st.integers(0, ads - 1))
            owner = users + ads + draw(st.integers(0, advertisers - 1))
            user = draw(st.integers(0, users - 1))
            when = t + draw(st.integers(0, DAY))
            later.append(
                draw(st.sampled_from([(owner, ad, RUNS, when), (user, ad, IMPRESSION, when)]))
            )
    return [users, ads, advertisers], edges, requests, later


@settings(max_examples=100, deadline=None)
@given(_requests_and_later_edges())
def test_a_requests_slices_never_read_edges_at_or_after_it(drawn):
    """Each request's owner (as of its time) and slices, computed from the graph and from
    the graph with edges at or after the request added: the same."""
    counts, edges, requests, later = drawn
    for user, ad, t in requests:
        mine = [e for e in later if e[3] >= t]
        results = []
        for graph in (
            hand_graph(funnel_manifest(), counts, edges),
            hand_graph(funnel_manifest(), counts, edges + mine),
        ):
            owner = OwnersAsOf(graph).at(np.array([ad]), t)
            got = slices_of(
                graph,
                np.array([user]),
                np.array([ad]),
                owner,
                np.array([t]),
                cutoff=graph.manifest.time.test_start,
                min_events=2,
                new_days=1,
            )
            results.append((owner.tolist(), {k: v.tolist() for k, v in got.items()}))
        assert results[0] == results[1]
