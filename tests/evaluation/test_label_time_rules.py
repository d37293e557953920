"""The labels' time rules on small hand-made graphs: a label reads only events strictly
before its window's end (an exposure whose attribution window reaches it is censored),
owners are as of each event, and nothing at or after the window's end changes a label."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph.owners import NO_OWNER
from tests.conftest import DAY, T0
from tests.hand_graph import (
    IMPRESSION,
    PURCHASE,
    RUNS,
    draw_owner_links,
    edge_list,
    funnel_manifest,
    hand_graph,
    reference_owner,
)

VALIDATION_START = T0 + 6 * DAY  # funnel_manifest's windows, 2-day attribution
WINDOW = 2 * DAY
USER, AD, ADVERTISER = 0, 1, 2  # one of each


def test_a_conversion_at_validation_start_never_labels_a_training_example():
    """Exposure at `validation_start - 2 days`: its window `(ts, validation_start]` ends on
    the validation window's first second, which the training labels may not read: it is
    censored (it used to be labelled 1 by the purchase at `validation_start`). One second
    earlier the window ends inside the training window and the label is known (0)."""
    edges = [
        (ADVERTISER, AD, RUNS, T0),
        (USER, AD, IMPRESSION, VALIDATION_START - WINDOW),
        (USER, AD, IMPRESSION, VALIDATION_START - WINDOW - 1),
        (USER, AD, PURCHASE, VALIDATION_START),
    ]
    ex = build_examples(hand_graph(funnel_manifest(), [1, 1, 1], edges), "train")
    assert ex.frame["ts"].to_list() == [VALIDATION_START - WINDOW - 1]
    assert ex.frame["label"].to_list() == [0]
    assert ex.censored == 1
    # a purchase one second before the end labels both exposures whose window holds it
    edges[-1] = (USER, AD, PURCHASE, VALIDATION_START - 1)
    ex = build_examples(hand_graph(funnel_manifest(), [1, 1, 1], edges), "train")
    assert ex.frame["label"].to_list() == [1] and ex.censored == 1


@st.composite
def funnels(draw):
    """Two users, three ads, two advertisers; ads join an advertiser at any time (or
    never, or a second one later); impressions and purchases over the ten days."""
    users, ads, advertisers = 2, 3, 2
    day = st.integers(0, 10 * DAY - 1).map(lambda s: T0 + s)
    edges = draw_owner_links(draw, users, ads, advertisers, day)
    for _ in range(draw(st.integers(1, 30))):
        user = draw(st.integers(0, users - 1))
        ad = users + draw(st.integers(0, ads - 1))
        edges.append((user, ad, draw(st.sampled_from([IMPRESSION, PURCHASE])), draw(day)))
    return [users, ads, advertisers], edges


def _reference(graph, window: str) -> tuple[list[tuple[int, int, int, int, int]], int]:
    lo, hi = graph.manifest.time.window(window)
    rows, censored = [], 0
    events = edge_list(graph)
    for user, ad, et, ts in events:
        if et != IMPRESSION or not lo <= ts < hi:
            continue
        if ts + WINDOW >= hi:
            censored += 1
            continue
        owner = reference_owner(graph, ad, ts)
        label = owner != NO_OWNER and any(
            u == user and e == PURCHASE and ts < c <= ts + WINDOW
            for u, a, e, c in events
            if reference_owner(graph, a, c) == owner
        )
        rows.append((user, ad, owner, ts, int(label)))
    return rows, censored


@settings(max_examples=150, deadline=None)
@given(funnels())
def test_labels_and_owners_equal_a_reference_as_of_each_event(drawn):
    counts, edges = drawn
    graph = hand_graph(funnel_manifest(), counts, edges)
    for window in ("train", "validation", "test"):
        ex = build_examples(graph, window)
        rows, censored = _reference(graph, window)
        assert list(ex.frame.select("user", "ad", "owner", "ts", "label").iter_rows()) == rows
        assert ex.censored == censored


@settings(max_examples=150, deadline=None)
@given(funnels(), st.data())
def test_edges_at_or_after_the_window_end_never_change_its_examples(drawn, data):
    """Moving every edge dated at or after the window's end later, dropping some and adding
    new ones there (purchases and owner links alike) leaves the window's examples as
    they were."""
    counts, edges = drawn
    graph = hand_graph(funnel_manifest(), counts, edges)
    for window in ("train", "validation"):
        hi = graph.manifest.time.window(window)[1]
        later = [
            (s, d, et, ts if ts < hi else ts + data.draw(st.integers(0, DAY)))
            for s, d, et, ts in edges
            if ts < hi or data.draw(st.booleans())
        ]
        for _ in range(data.draw(st.integers(0, 5))):
            user, ad = data.draw(st.integers(0, 1)), 2 + data.draw(st.integers(0, 2))
            owner = 5 + data.draw(st.integers(0, 1))
            ts = hi + data.draw(st.integers(0, DAY))
            later.append(
                data.draw(st.sampled_from([(user, ad, PURCHASE, ts), (owner, ad, RUNS, ts)]))
            )
        before = build_examples(graph, window)
        after = build_examples(hand_graph(funnel_manifest(), counts, later), window)
        assert after.frame.equals(before.frame)
        assert after.censored == before.censored
