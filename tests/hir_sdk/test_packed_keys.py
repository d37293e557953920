"""Every place that packs two ids into one integer key, against a dict keyed by the pair
itself, with missing (-1) parts wherever the code can meet them.

The user x owner features' key `user * N + owner` let a missing owner borrow from the user
(`(u, -1) == (u - 1, N - 1)`): keys now come from `pair_keys`, whose digits are shifted
by one. The sites and what covers each:

- `pair_keys` / `split_pair_keys` and `EventIndex` grouped by them: here;
- the as-of features (user x owner): tests/ranking/test_feature_keys.py;
- the labels (user x owner of the converted-on node): here and
  tests/evaluation/test_label_time_rules.py;
- the interest history (user x cluster): tests/ranking/test_hir_features.py;
- co-engagement and structural neighbour sums (node x node), conversion retrieval's
  seen pairs (user x ad, -1 pads), the click labels of the multistage ranker (user x
  ad), the engagement sampler's (type, creation time) key: here;
- the graph build's (node, edge id) CSR key and the schema's (src type, relation, dst
  type) table key (unknown types are refused before, so no -1 reaches them): here;
- the samplers' (slot, node) codes, whose nodes are always real (no -1): the views'
  tests (a view equals the same view drawn alone; every edge's local ends map back to
  its global ends), tests/hir_sdk/sampling/test_views.py; the node featurizer's (node,
  edge type) degrees: tests/hir_sdk/model/test_components.py (against a loop).
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.evaluation.conversion_retrieval import _seen_pairs, _unseen_first
from hir_sdk.graph.build import _csr
from hir_sdk.graph.event_index import EventIndex, pair_keys, split_pair_keys
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.knowledge.knowledge_base import structural_neighbour_sums
from hir_sdk.ranking.sequence import MultiStageRanker, RankingExamples
from hir_sdk.schema import DatasetManifest, EdgeTypeSpec, TimeSplits
from hir_sdk.schema.manifest import MAX_TIME
from hir_sdk.schema.tables import _edge_type_codes
from hir_sdk.training.co_engagement import co_engaged_content
from hir_sdk.training.objectives import EngagementSampler
from tests.conftest import DAY, T0
from tests.hand_graph import CLICK, IMPRESSION, RUNS, edge_list, funnel_manifest, hand_graph

ORDERS = [("user", "ad", "advertiser"), ("ad", "advertiser", "user"), ("advertiser", "ad", "user")]


@settings(max_examples=300, deadline=None)
@given(
    size=st.integers(0, 40),
    pairs=st.lists(st.tuples(st.integers(-1, 60), st.integers(-1, 39)), max_size=30),
)
def test_pair_keys_are_equal_exactly_for_equal_pairs_and_keep_their_order(size, pairs):
    pairs = [(a, b) for a, b in pairs if b < size]
    first = np.array([a for a, _ in pairs], dtype=np.int64)
    second = np.array([b for _, b in pairs], dtype=np.int64)
    keys = pair_keys(first, second, size)
    by_pair: dict[tuple[int, int], int] = {}
    for pair, key in zip(pairs, keys.tolist(), strict=True):
        assert by_pair.setdefault(pair, key) == key
    assert len(set(by_pair.values())) == len(by_pair)  # distinct pairs, distinct keys
    assert sorted(by_pair, key=by_pair.__getitem__) == sorted(by_pair)  # lexicographic
    back = split_pair_keys(keys, size)
    assert back[0].tolist() == first.tolist() and back[1].tolist() == second.tolist()


def test_pair_keys_refuse_parts_out_of_range_and_keys_past_int64():
    with pytest.raises(ValueError, match="not below 5"):
        pair_keys(np.array([0]), np.array([5]), 5)
    with pytest.raises(ValueError, match=">= -1"):
        pair_keys(np.array([-2]), np.array([0]), 5)
    with pytest.raises(ValueError, match="do not fit in int64"):
        pair_keys(np.array([2**40]), np.array([0]), 2**30)


@settings(max_examples=200, deadline=None)
@given(
    events=st.lists(
        st.tuples(st.integers(-1, 4), st.integers(-1, 3), st.integers(0, 20)), max_size=40
    ),
    queries=st.lists(
        st.tuples(st.integers(-1, 4), st.integers(-1, 3), st.integers(-5, 25)), max_size=20
    ),
)
def test_event_index_grouped_by_pairs_counts_like_a_dict(events, queries):
    """Users 0..4 x owners 0..3 (the last owner is the radix' top digit) with missing
    parts on both sides."""
    size = 4
    times: dict[tuple[int, int], list[int]] = {}
    for u, o, t in events:
        times.setdefault((u, o), []).append(t)
    e = np.array(events, dtype=np.int64).reshape(-1, 3)
    index = EventIndex(pair_keys(e[:, 0], e[:, 1], size), e[:, 2])
    q = np.array(queries, dtype=np.int64).reshape(-1, 3)
    got = index.count_before(pair_keys(q[:, 0], q[:, 1], size), q[:, 2])
    want = [sum(s < t for s in times.get((u, o), [])) for u, o, t in queries]
    assert got.tolist() == want


def test_event_index_answers_query_times_far_outside_the_events():
    """`t - t0` used to wrap around for a query time near the int64 minimum: the count
    of events before it came out as all of them."""
    index = EventIndex(np.zeros(3, dtype=np.int64), np.array([T0, T0 + 1, T0 + 2]))
    far = np.array([np.iinfo(np.int64).min + 5, -(2**62), 0, T0 + 1, 2**62], dtype=np.int64)
    assert index.count_before(np.zeros(5, dtype=np.int64), far).tolist() == [0, 0, 0, 1, 3]


@st.composite
def engagement_graphs(draw):
    """Users, ads and advertisers in any type order (so the last node may be of any of
    them), ads owned by an advertiser or by nobody, impressions and clicks."""
    order = draw(st.sampled_from(ORDERS))
    counts = {"user": draw(st.integers(1, 4)), "ad": draw(st.integers(1, 5)), "advertiser": 2}
    offsets, at = {}, 0
    for name in order:
        offsets[name], at = at, at + counts[name]
    day = st.integers(0, 9 * DAY).map(lambda s: T0 + s)
    edges = []
    for ad in range(counts["ad"]):
        owner = draw(st.integers(-1, 1))
        if owner >= 0:
            edges.append((offsets["advertiser"] + owner, offsets["ad"] + ad, RUNS, draw(day)))
    for _ in range(draw(st.integers(0, 20))):
        u = offsets["user"] + draw(st.integers(0, counts["user"] - 1))
        a = offsets["ad"] + draw(st.integers(0, counts["ad"] - 1))
        edges.append((u, a, draw(st.sampled_from([IMPRESSION, CLICK])), draw(day)))
    graph = hand_graph(funnel_manifest(order), [counts[n] for n in order], edges)
    return graph, offsets, counts


@settings(max_examples=100, deadline=None)
@given(engagement_graphs(), st.integers(0, 10 * DAY))
def test_co_engaged_content_equals_a_dict_of_user_node_pairs(drawn, offset):
    graph, offsets, counts = drawn
    as_of = T0 + offset
    ads = np.arange(offsets["ad"], offsets["ad"] + counts["ad"])
    row_of = np.full(graph.num_nodes, -1, dtype=np.int64)
    row_of[ads] = np.arange(len(ads))[::-1]
    vectors = np.random.default_rng(len(ads)).normal(size=(len(ads), 3))
    got = co_engaged_content(graph, row_of, vectors, as_of=as_of, roles=("exposure", "click"))
    reached: dict[int, set[int]] = {}
    for s, d, et, ts in edge_list(graph):
        if et in (IMPRESSION, CLICK) and ts < as_of:
            reached.setdefault(s, set()).add(d)
    want = np.zeros_like(vectors)
    for nodes in reached.values():
        for v in nodes:
            for w in nodes - {v}:
                want[row_of[v]] += vectors[row_of[w]] / len(nodes)
    np.testing.assert_allclose(got, want, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(engagement_graphs(), st.integers(0, 10 * DAY))
def test_structural_neighbour_sums_equal_a_dict_of_neighbours(drawn, offset):
    graph, offsets, counts = drawn
    as_of = T0 + offset
    is_target = np.ones(graph.num_nodes, dtype=bool)
    row_of = np.arange(graph.num_nodes)[::-1].copy()
    rows = np.random.default_rng(graph.num_nodes).normal(size=(graph.num_nodes, 2))
    targets, sums = structural_neighbour_sums(graph, is_target, row_of, rows, as_of=as_of)
    links: dict[int, set[int]] = {}
    for s, d, et, ts in edge_list(graph):
        if et == RUNS and ts < as_of:
            links.setdefault(s, set()).add(d)
            links.setdefault(d, set()).add(s)
    assert targets.tolist() == sorted(links)
    for v, total in zip(targets.tolist(), sums, strict=True):
        np.testing.assert_allclose(total, sum(rows[row_of[w]] for w in links[v]), atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(engagement_graphs(), st.data())
def test_seen_pairs_and_ranked_lists_with_padding_equal_a_dict(drawn, data):
    """Ranked lists padded with -1: a pad is never "seen", whatever the user before it saw
    (`user * N - 1` is the previous user's pair with the last node)."""
    graph, offsets, counts = drawn
    users = np.arange(offsets["user"], offsets["user"] + counts["user"])
    ads = np.arange(offsets["ad"], offsets["ad"] + counts["ad"])
    cutoff = T0 + data.draw(st.integers(0, 10 * DAY))
    seen = {(s, d) for s, d, _, ts in edge_list(graph) if ts < cutoff and s in users and d in ads}
    keys = _seen_pairs(graph, users, ads, cutoff)
    assert sorted(zip(*split_pair_keys(keys, graph.num_nodes), strict=True)) == sorted(seen)
    ids = np.array(
        [data.draw(st.lists(st.sampled_from([-1, *ads.tolist()]), min_size=4, max_size=4))]
        * len(users)
    )
    got = _unseen_first(ids, users, keys, graph.num_nodes)
    for row, user in enumerate(users.tolist()):
        kept = [a for a in ids[row].tolist() if not (a >= 0 and (user, a) in seen)]
        assert got[row].tolist() == kept + [-1] * (4 - len(kept))


@settings(max_examples=60, deadline=None)
@given(engagement_graphs(), st.data())
def test_click_labels_equal_a_dict_of_user_ad_clicks(drawn, data):
    graph, offsets, counts = drawn
    ranker = MultiStageRanker(graph, None)
    n = 8
    user = offsets["user"] + np.array(
        data.draw(st.lists(st.integers(0, counts["user"] - 1), min_size=n, max_size=n))
    )
    ad = offsets["ad"] + np.array(
        data.draw(st.lists(st.integers(0, counts["ad"] - 1), min_size=n, max_size=n))
    )
    ts = T0 + np.array(data.draw(st.lists(st.integers(0, 9 * DAY), min_size=n, max_size=n)))
    ex = RankingExamples(
        user=user,
        ad=ad,
        owner=np.full(n, -1),
        ts=ts,
        label=np.zeros(n, dtype=np.float32),
        dense=None,
    )
    window = ranker.config.click_window_s
    clicks = [(s, d, t) for s, d, et, t in edge_list(graph) if et == CLICK]
    want = [
        float(any(s == u and d == a and t < c <= t + window for s, d, c in clicks))
        for u, a, t in zip(user.tolist(), ad.tolist(), ts.tolist(), strict=True)
    ]
    assert ranker.click_labels(ex).tolist() == want


def test_random_negatives_keep_their_type_at_the_latest_valid_times():
    """Times near the last one a dataset may hold (`MAX_TIME`, year 9999): the sampler's
    key of (type, creation time) keeps each type apart, so ads never get advertisers as
    negatives (millisecond timestamps, which once ran a `type * 2^40 + time` key into the
    next type, are refused at validation)."""
    t = MAX_TIME - 10 * DAY
    manifest = DatasetManifest(
        name="ms",
        node_types=("user", "ad", "advertiser"),
        edge_types=(
            EdgeTypeSpec("user", "click", "ad", "click"),
            EdgeTypeSpec("advertiser", "runs", "ad", "structural"),
        ),
        time=TimeSplits(t, t + 6 * DAY, t + 8 * DAY, t + 10 * DAY),
        owner_type="advertiser",
    )
    edges = [(u, 3 + a, 0, t + DAY + 100 * u + a) for u in range(3) for a in range(3)]
    created = [t] * 3 + [t, t + DAY + 150, t + 2 * DAY] + [t] * 2
    graph = hand_graph(manifest, [3, 3, 2], edges, created_ts=created)
    got = EngagementSampler(graph, OwnersAsOf(graph), "train", ("click",)).sample(300, 0, 0)
    assert (graph.node_type_of(got.random_neg) == graph.type_code("ad")).all()
    assert (graph.created_ts[got.random_neg] < got.ts).all()
    assert set(got.random_neg.tolist()) == {3, 4}  # the third ad is created after every click


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=40))
def test_graph_build_groups_edge_ids_by_node_like_a_dict(owners):
    """`owner * E + edge id`: each node's edge ids, in id order, for 7 nodes."""
    ptr, order = _csr(pl.Series(owners, dtype=pl.Int64), 7)
    for node in range(7):
        want = [e for e, o in enumerate(owners) if o == node]
        assert order[ptr[node] : ptr[node + 1]].tolist() == want


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 2)), max_size=30))
def test_edge_type_table_finds_each_declared_triple_like_a_dict(triples):
    """`(src * R + rel) * T + dst` over three node types and two relations, the last type
    and relation included."""
    types, rels = ("a", "b", "c"), ["r", "s"]
    declared = [("c", "s", "a"), ("a", "r", "c"), ("c", "r", "c"), ("b", "s", "b")]
    manifest = DatasetManifest(
        name="t",
        node_types=types,
        edge_types=tuple(EdgeTypeSpec(x, r, y, "exposure") for x, r, y in declared),
        time=TimeSplits(T0, T0 + 1, T0 + 2, T0 + 3),
    )
    position = {triple: k for k, triple in enumerate(declared)}
    codes = np.array(triples, dtype=np.int64).reshape(-1, 3)
    got = _edge_type_codes(manifest, codes[:, 0], codes[:, 1], codes[:, 2], rels)
    want = [position.get((types[x], rels[r], types[y]), -1) for x, r, y in triples]
    assert got.tolist() == want
