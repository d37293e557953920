"""Converted pairs: the exposures whose user converted on the exposed node's owner within
the attribution window and before the cutoff, checked exposure by exposure against a
loop over the user's conversions, and against the labels of the ranking examples."""

from __future__ import annotations

import numpy as np

from hir_sdk.evaluation.examples import build_examples
from hir_sdk.graph.converted_pairs import converted_pairs
from hir_sdk.graph.owners import NO_OWNER, OwnersAsOf
from hir_sdk.schema.manifest import DAY


def _by_loop(graph, as_of: int) -> set[tuple[int, int]]:
    owners = OwnersAsOf(graph)
    window = int(round(graph.manifest.attribution_window_days * DAY))
    conversion = np.isin(graph.etype, graph.role_codes("conversion"))
    conversions: dict[int, list[tuple[int, int]]] = {}
    ends = graph.src[conversion], graph.dst[conversion], graph.ts[conversion]
    for u, d, t in zip(*ends, strict=True):
        conversions.setdefault(int(u), []).append((int(t), int(owners.at(np.array([d]), t)[0])))
    out = set()
    k = graph.edges_before(as_of)
    exposed = np.flatnonzero(np.isin(graph.etype[:k], graph.role_codes("exposure")))
    for e in exposed:
        u, item, ts = int(graph.src[e]), int(graph.dst[e]), int(graph.ts[e])
        owner = int(owners.at(np.array([item]), ts)[0])
        if owner == NO_OWNER:
            continue
        until = min(ts + window, as_of - 1)
        if any(ts < t <= until and o == owner for t, o in conversions.get(u, [])):
            out.add((item, u))
    return out


def test_pairs_are_the_exposures_that_converted_before_the_cutoff(tiny_graph):
    g = tiny_graph
    for as_of in (g.manifest.time.validation_start, g.manifest.time.test_start):
        item, user = converted_pairs(g, as_of=as_of)
        got = set(zip(item.tolist(), user.tolist(), strict=True))
        assert len(got) == len(item) > 10  # distinct, and enough to mean something
        assert got == _by_loop(g, as_of)
        order = np.lexsort((user, item))
        np.testing.assert_array_equal(order, np.arange(len(item)))


def test_a_later_cutoff_keeps_every_pair_and_reads_conversions_it_may(tiny_graph):
    """Nothing at or after the cutoff counts: a later cutoff only adds pairs, among them
    exposures before the first cutoff whose conversion came after it."""
    g = tiny_graph
    early, late = g.manifest.time.validation_start, g.manifest.time.test_start
    before = set(zip(*(a.tolist() for a in converted_pairs(g, as_of=early)), strict=True))
    after = set(zip(*(a.tolist() for a in converted_pairs(g, as_of=late)), strict=True))
    assert before < after
    assert _by_loop(g, late) == after
    k = g.edges_before(early)
    exposed = np.isin(g.etype[:k], g.role_codes("exposure"))
    shown_early = set(zip(g.dst[:k][exposed].tolist(), g.src[:k][exposed].tolist(), strict=True))
    assert (after - before) & shown_early  # exposed before `early`, converted after it


def test_a_conversion_at_the_cutoff_does_not_count_and_one_before_it_does(tiny_graph):
    """Cut at each of a few conversions' own times: the pairs equal the loop's, and the
    pair a conversion completes appears from the cutoff one second after it."""
    g = tiny_graph
    conversion = np.isin(g.etype, g.role_codes("conversion"))
    times = np.unique(g.ts[conversion])
    changed = 0
    for t in times[:: max(1, len(times) // 8)][:8]:
        at = set(zip(*(a.tolist() for a in converted_pairs(g, as_of=int(t))), strict=True))
        after = set(zip(*(a.tolist() for a in converted_pairs(g, as_of=int(t) + 1)), strict=True))
        assert at == _by_loop(g, int(t)) and after == _by_loop(g, int(t) + 1)
        assert at <= after
        changed += at != after
    assert changed > 0


def test_the_pairs_agree_with_the_training_examples_labels(tiny_graph):
    """Every labelled training exposure with label 1 (its window ends before the
    validation start) is a converted pair as of the validation start, and every
    converted pair has an exposure that is labelled 1 or is censored."""
    g = tiny_graph
    examples = build_examples(g, "train").frame
    item, user = converted_pairs(g, as_of=g.manifest.time.validation_start)
    pairs = set(zip(item.tolist(), user.tolist(), strict=True))
    positive = examples.filter(examples["label"] == 1)
    assert len(positive) > 0
    labelled = set(zip(positive["ad"].to_list(), positive["user"].to_list(), strict=True))
    assert labelled <= pairs
    # the others converted after an exposure whose window the training labels censor
    end = g.manifest.time.validation_start
    window = int(round(g.manifest.attribution_window_days * DAY))
    k = g.edges_before(end)
    exposed = np.isin(g.etype[:k], g.role_codes("exposure")) & (g.ts[:k] + window >= end)
    censored = set(zip(g.dst[:k][exposed].tolist(), g.src[:k][exposed].tolist(), strict=True))
    assert pairs - labelled and pairs - labelled <= censored
