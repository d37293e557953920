"""Owners as of a time: the breadth-first owner over the structural edges dated before it,
checked against a loop on small random ownership graphs, and blind to later edges."""

from __future__ import annotations

import dataclasses

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf, owner_of_nodes
from hir_sdk.schema import DatasetManifest, EdgeTypeSpec, TimeSplits
from tests.conftest import DAY, T0
from tests.hand_graph import hand_graph, reference_owner

TYPES = ("ad", "campaign", "advertiser", "product", "user")
LINKS = (("campaign", "ad"), ("advertiser", "campaign"), ("advertiser", "product"))
LINKS += (("product", "ad"), ("user", "ad"))
MANIFEST = DatasetManifest(
    name="owners",
    node_types=TYPES,
    edge_types=tuple(
        EdgeTypeSpec(a, "links", b, "exposure" if a == "user" else "structural") for a, b in LINKS
    ),
    time=TimeSplits(T0, T0 + 4 * DAY, T0 + 6 * DAY, T0 + 10 * DAY),
    owner_type="advertiser",
)


@st.composite
def ownership(draw, extra_after: bool = False):
    """A random graph of the five types (every kind of link, a few per node; edges at a
    handful of shared times, so ties happen), and query times."""
    counts = [draw(st.integers(1, 4)) for _ in TYPES]
    offsets = np.concatenate([[0], np.cumsum(counts)])
    when = st.sampled_from([T0 + k * DAY for k in range(8)])
    edges = []
    for _ in range(draw(st.integers(0, 14))):
        code = draw(st.integers(0, len(LINKS) - 1))
        a, b = (TYPES.index(x) for x in LINKS[code])
        src = int(offsets[a]) + draw(st.integers(0, counts[a] - 1))
        dst = int(offsets[b]) + draw(st.integers(0, counts[b] - 1))
        edges.append((src, dst, code, draw(when)))
    times = draw(st.lists(when.map(lambda t: t + draw(st.sampled_from([-1, 0, 1]))), max_size=4))
    return counts, edges, [*times, T0, T0 + 100 * DAY]


@settings(max_examples=200, deadline=None)
@given(ownership())
def test_owners_as_of_equal_breadth_first_search_on_the_cut_graph(drawn):
    counts, edges, times = drawn
    graph = hand_graph(MANIFEST, counts, edges)
    owners = OwnersAsOf(graph)
    nodes = np.arange(graph.num_nodes)
    for t in times:
        got = owners.at(nodes, t)
        want = [reference_owner(graph, int(v), t) for v in nodes]
        assert got.tolist() == want, t
    # after every edge: the owners of the whole log
    np.testing.assert_array_equal(owners.at(nodes, 2**62), owner_of_nodes(graph))


@settings(max_examples=100, deadline=None)
@given(ownership(), st.data())
def test_edges_at_or_after_the_time_never_change_the_owner(drawn, data):
    """Adding structural edges dated at or after `t`, or moving existing ones there,
    leaves every owner as of `t` unchanged."""
    counts, edges, times = drawn
    t = times[0] if len(times) > 2 else T0 + 3 * DAY
    graph = hand_graph(MANIFEST, counts, edges)
    offsets = np.concatenate([[0], np.cumsum(counts)])
    later = [
        (src, dst, code, ts if ts < t else ts + data.draw(st.integers(0, 5 * DAY)))
        for src, dst, code, ts in edges
    ]
    for _ in range(data.draw(st.integers(1, 6))):
        code = data.draw(st.integers(0, len(LINKS) - 2))
        a, b = (TYPES.index(x) for x in LINKS[code])
        src = int(offsets[a]) + data.draw(st.integers(0, counts[a] - 1))
        dst = int(offsets[b]) + data.draw(st.integers(0, counts[b] - 1))
        later.append((src, dst, code, t + data.draw(st.integers(0, 5 * DAY))))
    nodes = np.arange(graph.num_nodes)
    np.testing.assert_array_equal(
        OwnersAsOf(hand_graph(MANIFEST, counts, later)).at(nodes, t), OwnersAsOf(graph).at(nodes, t)
    )


def test_an_ad_gets_its_owner_from_the_edges_time_on():
    """ad 0 -campaign 0- advertiser 0 from day 2 (the campaign's link is logged late);
    on day 5 ad 0 also joins product 0 of advertiser 1, two hops away as well."""
    ad, campaign, advertiser, product = 0, 1, 2, 4  # counts 1, 1, 2, 1, 0 users
    edges = [
        (campaign, ad, 0, T0),
        (advertiser, campaign, 1, T0 + 2 * DAY),
        (advertiser + 1, product, 2, T0),
        (product, ad, 3, T0 + 5 * DAY),
    ]
    owners = OwnersAsOf(hand_graph(MANIFEST, [1, 1, 2, 1, 0], edges))
    t = np.array([T0, T0 + 2 * DAY, T0 + 2 * DAY + 1, T0 + 5 * DAY, T0 + 5 * DAY + 1])
    assert owners.at(np.zeros(5, dtype=np.int64), t).tolist() == [
        NO_OWNER,
        NO_OWNER,  # the link at day 2 counts only after it
        advertiser,
        advertiser,
        advertiser,  # both two hops away now: the lower index wins
    ]
    assert owners.at(np.array([advertiser + 1]), T0 - 10).tolist() == [advertiser + 1]


def test_without_an_owner_type_every_node_owns_itself():
    manifest = dataclasses.replace(MANIFEST, owner_type=None)  # same graph, no owner
    graph = hand_graph(manifest, [2, 1, 1, 1, 1], [(2, 0, 0, T0)])
    nodes = np.arange(graph.num_nodes)
    np.testing.assert_array_equal(OwnersAsOf(graph).at(nodes, T0 + DAY), nodes)
