"""The A/B's test slices, checked against a brute-force reading of the tiny world's edges."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.errors import InputError
from hir_sdk.evaluation.pipeline import ABConfig
from hir_sdk.evaluation.slices import test_slices as slices_of
from hir_sdk.graph.owners import OwnersAsOf, owner_of_nodes
from tests.conftest import T0
from tests.hand_graph import IMPRESSION, RUNS, draw_owner_links, funnel_manifest, hand_graph

DAY = 86_400
NEW = "new advertisers (first seen < {} days before the request)"


@pytest.fixture(scope="module")
def requests(tiny_graph):
    """Every edge into an owned node from the validation start on, as (user, ad, owner, ts)."""
    g = tiny_graph
    owners = owner_of_nodes(g)
    keep = (owners[g.dst] >= 0) & (g.ts >= g.manifest.time.validation_start)
    return g.src[keep], g.dst[keep], owners[g.dst[keep]], g.ts[keep]


def _first_seen(g, node: int) -> int:
    return int(g.ts[(g.src == node) | (g.dst == node)].min())


def test_new_and_cold_start_advertisers_match_the_edges(tiny_graph, requests):
    g = tiny_graph
    user, ad, owner, ts = requests
    cutoff = g.manifest.time.test_start
    got = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=7)
    seen = {int(o): _first_seen(g, int(o)) for o in np.unique(owner)}
    owner_seen = np.array([seen[int(o)] for o in owner])
    assert np.array_equal(got["cold-start advertisers"], owner_seen >= cutoff)
    new = got[NEW.format(7)]
    assert np.array_equal(new, owner_seen > ts - 7 * DAY)
    # the slice is about the advertiser's age at the request: it holds requests on both
    # sides of the cutoff, and not every request of a new advertiser stays new
    assert new[ts < cutoff].any() and new[ts >= cutoff].any() and not new.all()
    assert 0 < got["cold-start advertisers"].sum()
    # a longer horizon keeps every new advertiser's request and adds older ones
    longer = slices_of(g, user, ad, owner, ts, cutoff=cutoff, new_days=30)[NEW.format(30)]
    assert (longer >= new).all() and longer.sum() > new.sum()


def test_examples_without_an_owner_are_never_new(tiny_graph, requests):
    g = tiny_graph
    user, ad, owner, ts = requests
    orphan = np.full_like(owner, -1)
    got = slices_of(g, user, ad, orphan, ts, cutoff=g.manifest.time.test_start)
    assert not got[NEW.format(14)].any() and not got["cold-start advertisers"].any()


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
