"""Arrival snapshots: exactly the entities created since the base snapshot, embedded as a
full snapshot at the same time would embed them, tokenised with the base's quantizer,
and found by `HirLookup` for requests after them (and never before)."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.interests import embed_entities
from hir_sdk.interests.arrivals import arrival_times, embed_arrivals
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.schema.manifest import DAY
from hir_sdk.training.embedder import Embedder


@pytest.fixture(scope="module")
def arrived(tiny_run, tiny_world, snapshot):
    return embed_arrivals(tiny_run, tiny_world, snapshot, "test_start")


def test_arrivals_are_the_entities_created_since_the_base(arrived, snapshot, tiny_graph):
    g = tiny_graph
    start, stop = snapshot.as_of, g.manifest.time.test_start
    assert arrived is not None and arrived.as_of == stop
    assert arrived.meta["arrivals_since"] == start
    nodes = snapshot_nodes(arrived, g)
    born = g.created_ts
    expected = np.flatnonzero((born >= start) & (born < stop))
    assert len(expected) > 0
    np.testing.assert_array_equal(np.sort(nodes), expected)
    assert not set(nodes.tolist()) & set(snapshot_nodes(snapshot, g).tolist())


def test_arrivals_embed_like_a_full_snapshot_and_share_the_base_quantizer(
    arrived, snapshot, tiny_run, tiny_world, tiny_graph
):
    full = embed_entities(tiny_run, tiny_world, "test_start", codebooks=4, codewords=16)
    row_in_full = {int(n): i for i, n in enumerate(snapshot_nodes(full, tiny_graph))}
    rows = [row_in_full[int(n)] for n in snapshot_nodes(arrived, tiny_graph)]
    # the same model, subgraphs and inputs; only the batches differ (171 arrivals vs every
    # entity), and on CPUs whose BLAS kernels block rows by batch size a row can differ
    # in its last bit (seen on AMD EPYC: 13 of 2,736 values, 9e-8)
    np.testing.assert_allclose(arrived.embeddings(), full.embeddings()[rows], rtol=0, atol=1e-6)
    for level in range(3):
        np.testing.assert_array_equal(arrived.clusters(level), full.clusters(level)[rows])
    assert arrived.quantizer is snapshot.quantizer
    # an embedder loaded for another time and moved here (`Embedder.at`) gives the same
    other = Embedder(tiny_run, tiny_world, "validation_start")
    reused = embed_entities(
        tiny_run, tiny_world, "test_start", codebooks=4, codewords=16, embedder=other
    )
    np.testing.assert_array_equal(reused.embeddings(), full.embeddings())
    np.testing.assert_array_equal(reused.tokens(), full.tokens())
    moved = embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", embedder=other)
    assert moved is not None
    np.testing.assert_array_equal(moved.embeddings(), arrived.embeddings())
    np.testing.assert_array_equal(moved.tokens(), arrived.tokens())
    z = arrived.embeddings()
    np.testing.assert_array_equal(
        arrived.tokens(), snapshot.quantizer.tokens(snapshot.quantizer.encode(z))
    )


def test_lookup_reads_new_entities_from_arrivals_and_others_from_the_base(
    arrived, snapshot, tiny_graph
):
    g = tiny_graph
    lookup = HirLookup(g, [snapshot, arrived])
    new = snapshot_nodes(arrived, g)
    old = snapshot_nodes(snapshot, g)[:50]
    before, after = arrived.as_of - 1, arrived.as_of
    got = lookup.lookup(
        np.concatenate([new, new, old]), np.repeat([before, after, after], [len(new), len(new), 50])
    )
    assert not got.found[: len(new)].any()  # not yet arrived for a request before it
    assert got.found[len(new) :].all()
    np.testing.assert_array_equal(got.z[len(new) : 2 * len(new)], arrived.embeddings())
    np.testing.assert_array_equal(got.z[2 * len(new) :], snapshot.embeddings()[:50])
    np.testing.assert_array_equal(got.tokens[2 * len(new) :], snapshot.tokens()[:50])


def test_max_age_embeds_only_the_recent_arrivals_and_the_same_rows(
    arrived, snapshot, tiny_run, tiny_world, tiny_graph
):
    """With `max_age`, only the entities created at most that long before the arrival
    time are embedded again, each exactly as without the bound; an age beyond the span
    since the base changes nothing."""
    g, stop = tiny_graph, arrived.as_of
    nodes = snapshot_nodes(arrived, g)
    born = g.created_ts[nodes]
    age = int(np.median(stop - born))
    recent = embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", max_age=age)
    assert recent is not None
    kept = snapshot_nodes(recent, g)
    expected = np.sort(nodes[born >= stop - age])
    assert 0 < len(expected) < len(nodes)
    np.testing.assert_array_equal(np.sort(kept), expected)
    row = {int(n): i for i, n in enumerate(nodes)}
    rows = [row[int(n)] for n in kept]
    np.testing.assert_allclose(recent.embeddings(), arrived.embeddings()[rows], rtol=0, atol=1e-6)
    np.testing.assert_array_equal(recent.tokens(), arrived.tokens()[rows])
    span = stop - snapshot.as_of
    whole = embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", max_age=span)
    np.testing.assert_array_equal(whole.embeddings(), arrived.embeddings())
    with pytest.raises(InputError, match="maximum age"):
        embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", max_age=0)


def test_after_a_previous_arrival_older_entities_come_back_where_their_age_doubles(
    arrived, snapshot, tiny_run, tiny_world, tiny_graph
):
    """With `last`, an entity created before it is embedded again only while younger than
    `fresh_age`, or where its age in periods of `as_of - last` gains a binary digit; each
    one kept exactly as without the rule. A `fresh_age` beyond every age changes nothing."""
    g, stop = tiny_graph, arrived.as_of
    nodes = snapshot_nodes(arrived, g)
    born = g.created_ts[nodes]
    period = max(int(np.percentile(stop - born, 20)), 1)
    last, fresh = stop - period, int(np.percentile(stop - born, 40))
    rows = embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", last=last, fresh_age=fresh)
    assert rows is not None
    digits = [int(x).bit_length() for x in (stop - born) // period]
    before = [int(x).bit_length() for x in np.maximum(last - born, 0) // period]
    want = (born >= last) | (stop - born < fresh) | (np.array(digits) > np.array(before))
    doubled = (np.array(digits) > np.array(before)) & (born < last) & (stop - born >= fresh)
    assert doubled.any() and (~want).any()  # some kept by the doubling alone, some left out
    kept = snapshot_nodes(rows, g)
    np.testing.assert_array_equal(np.sort(kept), np.sort(nodes[want]))
    row = {int(n): i for i, n in enumerate(nodes)}
    index = [row[int(n)] for n in kept]
    np.testing.assert_allclose(rows.embeddings(), arrived.embeddings()[index], rtol=0, atol=1e-6)
    every = embed_arrivals(
        tiny_run,
        tiny_world,
        snapshot,
        "test_start",
        last=last,
        fresh_age=int(stop - born.min()) + 1,
    )
    np.testing.assert_array_equal(every.embeddings(), arrived.embeddings())
    with pytest.raises(InputError, match="previous arrival time must come before"):
        embed_arrivals(tiny_run, tiny_world, snapshot, "test_start", last=stop)


def test_nothing_new_is_none_and_a_time_before_the_base_is_refused(
    snapshot, tiny_run, tiny_world, tiny_graph
):
    t = snapshot.as_of
    born = tiny_graph.created_ts
    assert not ((born >= t) & (born < t + 1)).any()  # nothing is created in that second
    assert embed_arrivals(tiny_run, tiny_world, snapshot, t + 1) is None
    with pytest.raises(InputError, match="after the base snapshot"):
        embed_arrivals(tiny_run, tiny_world, snapshot, t)


def test_arrival_times() -> None:
    assert arrival_times(0, 3 * DAY, DAY) == [DAY, 2 * DAY]
    assert arrival_times(0, 3 * DAY + 1, DAY) == [DAY, 2 * DAY, 3 * DAY]
    assert arrival_times(5, 5, DAY) == []
    with pytest.raises(ValueError):
        arrival_times(0, DAY, 0)


def test_arrival_times_are_bounded_on_a_long_span() -> None:
    """A span of more than `most` intervals gets `most` evenly spaced times; a shorter
    one keeps its daily times."""
    assert arrival_times(0, 3 * DAY, DAY, most=5) == [DAY, 2 * DAY]
    years = arrival_times(0, 3650 * DAY, DAY, most=120)
    assert len(years) == 120 and years[-1] < 3650 * DAY
    steps = np.diff([0, *years])
    assert (steps == steps[0]).all() and steps[0] == -(-3650 * DAY // 121)
    assert arrival_times(0, 121 * DAY, DAY, most=120) == [d * DAY for d in range(1, 121)]
    assert arrival_times(0, 10 * DAY, DAY, most=0) == []
    with pytest.raises(ValueError):
        arrival_times(0, DAY, DAY, most=-1)
