"""The as-of features' grouped counts equal a dict reference on small hand-made graphs,
whatever the order of the node types and with ads that have no owner.

The user x owner counts group events by one packed integer key; a packing that lets a
missing owner (-1) borrow from the user made `(u, no owner)` equal `(u - 1, the last
node)`, so a user was credited with another user's exposures to ownerless ads."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.graph.owners import NO_OWNER
from hir_sdk.ranking.features import AsOfFeatures
from tests.conftest import DAY, T0
from tests.hand_graph import (
    CLICK,
    IMPRESSION,
    PURCHASE,
    RUNS,
    funnel_manifest,
    hand_graph,
    reference_owner,
)


def test_ownerless_ads_of_one_user_do_not_count_for_the_previous_user_and_last_owner():
    """The owner type last in `node_types`: its last node is index N - 1. User 5's
    impression of an ownerless ad must not show up as user 4's impression of that owner
    (`5 * N - 1 == 4 * N + N - 1`)."""
    users, ads = 6, 31  # ad 0 belongs to the one advertiser, ads 1..30 to nobody
    graph = hand_graph(
        funnel_manifest(),
        [users, ads, 1],
        [
            (users + ads, users, RUNS, T0),  # advertiser -runs-> ad 0
            (5, users + 7, IMPRESSION, T0 + DAY),  # user 5 sees ownerless ad 7
        ],
    )
    last = graph.num_nodes - 1
    f = AsOfFeatures(graph)
    assert f.owners.at(np.array([users]), T0 + 2 * DAY)[0] == last
    got = f.compute(np.array([4, 5]), np.array([users, users + 1]), np.full(2, T0 + 2 * DAY))
    assert got["ua_imps"].to_list() == [0.0, 1.0]  # user 4 never saw the advertiser
    assert got["adv_imps"].to_list() == [0.0, 1.0]  # the ownerless ads' own group


def _reference_counts(graph, user: int, ad: int, t: int) -> dict[str, float]:
    owner = reference_owner(graph, ad, t)
    out = {}
    for role, name in ((IMPRESSION, "imps"), (CLICK, "clicks"), (PURCHASE, "convs")):
        events = [
            (u, reference_owner(graph, a, ts))
            for u, a, et, ts in zip(
                graph.src.tolist(),
                graph.dst.tolist(),
                graph.etype.tolist(),
                graph.ts.tolist(),
                strict=True,
            )
            if et == role and ts < t
        ]
        per_user: dict[int, int] = {}
        per_owner: dict[int, int] = {}
        per_pair: dict[tuple[int, int], int] = {}
        for u, o in events:
            per_user[u] = per_user.get(u, 0) + 1
            per_owner[o] = per_owner.get(o, 0) + 1
            per_pair[u, o] = per_pair.get((u, o), 0) + 1
        out[f"user_{name}"] = per_user.get(user, 0)
        out[f"adv_{name}"] = per_owner.get(owner, 0)
        out[f"ua_{name}"] = per_pair.get((user, owner), 0)
    out["has_owner"] = float(owner != NO_OWNER)
    return out


ORDERS = [
    ("user", "ad", "advertiser"),
    ("advertiser", "user", "ad"),
    ("ad", "advertiser", "user"),
    ("user", "advertiser", "ad"),
]


@st.composite
def funnel_graphs(draw):
    order = draw(st.sampled_from(ORDERS))
    counts = {"user": draw(st.integers(1, 4)), "ad": draw(st.integers(1, 5))}
    counts["advertiser"] = draw(st.integers(1, 3))
    offsets, at = {}, 0
    for name in order:
        offsets[name] = at
        at += counts[name]
    day = st.integers(0, 9 * DAY).map(lambda s: T0 + s)
    edges = []
    for ad in range(counts["ad"]):  # each ad: no owner, or one advertiser from some day on
        owner = draw(st.integers(-1, counts["advertiser"] - 1))
        if owner >= 0:
            edges.append((offsets["advertiser"] + owner, offsets["ad"] + ad, RUNS, draw(day)))
    for _ in range(draw(st.integers(0, 25))):
        u = offsets["user"] + draw(st.integers(0, counts["user"] - 1))
        a = offsets["ad"] + draw(st.integers(0, counts["ad"] - 1))
        edges.append((u, a, draw(st.sampled_from([IMPRESSION, CLICK, PURCHASE])), draw(day)))
    graph = hand_graph(funnel_manifest(order), [counts[name] for name in order], edges)
    queries = [
        (
            offsets["user"] + draw(st.integers(0, counts["user"] - 1)),
            offsets["ad"] + draw(st.integers(0, counts["ad"] - 1)),
            draw(day),
        )
        for _ in range(6)
    ]
    return graph, queries


@settings(max_examples=150, deadline=None)
@given(funnel_graphs())
def test_grouped_counts_equal_a_dict_reference(drawn):
    graph, queries = drawn
    user, ad, t = (np.array(column) for column in zip(*queries, strict=True))
    got = AsOfFeatures(graph).compute(user, ad, t)
    for row, (u, a, ts) in enumerate(queries):
        for name, value in _reference_counts(graph, u, a, ts).items():
            assert got[name][row] == value, (name, u, a, ts)
