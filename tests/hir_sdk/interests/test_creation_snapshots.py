"""Creation snapshots: each entity created since the base snapshot embedded once, as of
its creation time + latency, with the base's quantizer; rows that do not depend on the
snapshot's end, and that `HirLookup` serves only from their own time on."""

from __future__ import annotations

import numpy as np
import pytest

from hir_sdk.errors import InputError
from hir_sdk.interests.arrivals import ON_CREATION, embed_arrivals, embed_on_creation
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.training.embedder import Embedder

LATENCY = 60


@pytest.fixture(scope="module")
def created(tiny_run, tiny_world, snapshot):
    return embed_on_creation(tiny_run, tiny_world, snapshot, "test_start", latency=LATENCY)


def test_rows_are_the_entities_created_since_the_base_each_at_its_own_time(
    created, snapshot, tiny_graph
):
    g = tiny_graph
    start, stop = snapshot.as_of, g.manifest.time.test_start
    assert created is not None
    nodes = snapshot_nodes(created, g)
    born = g.created_ts
    expected = np.flatnonzero((born >= start) & (born + LATENCY < stop))
    assert len(expected) > 10
    np.testing.assert_array_equal(np.sort(nodes), expected)
    times = created.table["as_of"].to_numpy()
    np.testing.assert_array_equal(times, born[nodes] + LATENCY)
    assert len(np.unique(times)) > 10  # the rows really have their own times
    assert created.as_of == times.min() > start
    assert created.meta["arrivals_since"] == start and created.meta[ON_CREATION] == LATENCY
    assert created.quantizer is snapshot.quantizer
    q = snapshot.quantizer
    np.testing.assert_array_equal(created.tokens(), q.tokens(q.encode(created.embeddings())))


def test_each_row_is_embedded_as_of_its_own_time_whatever_the_batch_or_the_end(
    created, snapshot, tiny_run, tiny_world, tiny_graph
):
    g = tiny_graph
    nodes = snapshot_nodes(created, g)
    times = created.table["as_of"].to_numpy()
    embedder = Embedder(tiny_run, tiny_world, snapshot.as_of)
    pick = np.arange(len(nodes))[::-7]  # other batches, another order
    z, _ = embedder.embed(nodes[pick], times[pick])
    np.testing.assert_allclose(z, created.embeddings()[pick], rtol=0, atol=1e-6)
    # the same rows embedded at the snapshot's end see their first days of engagement
    at_end, _ = embedder.embed(nodes, np.full(len(nodes), g.manifest.time.test_start))
    moved = np.abs(at_end - created.embeddings()).max(axis=1) > 1e-4
    assert moved.mean() > 0.5
    # an earlier end keeps the rows before it, unchanged: nothing after a row's time counts
    stop = int(np.median(times))
    early = embed_on_creation(tiny_run, tiny_world, snapshot, stop, latency=LATENCY)
    assert early is not None
    kept = np.isin(nodes, snapshot_nodes(early, g))
    assert 0 < kept.sum() == len(early.table) < len(nodes)
    assert (times[kept] < stop).all() and (times[~kept] >= stop).all()
    np.testing.assert_allclose(early.embeddings(), created.embeddings()[kept], rtol=0, atol=1e-6)


def test_lookup_serves_a_row_from_its_own_time_and_a_later_arrival_after_it(
    created, snapshot, tiny_run, tiny_world, tiny_graph
):
    g = tiny_graph
    nodes = snapshot_nodes(created, g)
    times = created.table["as_of"].to_numpy()
    arrived = embed_arrivals(tiny_run, tiny_world, snapshot, "test_start")
    assert arrived is not None
    lookup = HirLookup(g, [snapshot, created, arrived])
    before = lookup.lookup(nodes, times - 1)
    assert not before.found.any()  # not embedded yet
    at = lookup.lookup(nodes, times)
    assert at.found.all()
    np.testing.assert_array_equal(at.z, created.embeddings())
    np.testing.assert_array_equal(at.tokens, created.tokens())
    # from the arrival snapshot's time on, its fresher rows win
    row_in_arrived = {int(n): i for i, n in enumerate(snapshot_nodes(arrived, g))}
    later = lookup.lookup(nodes, np.full(len(nodes), arrived.as_of))
    assert later.found.all()
    rows = [row_in_arrived[int(n)] for n in nodes]
    np.testing.assert_array_equal(later.z, arrived.embeddings()[rows])
    # entities of the base snapshot are untouched
    old = snapshot_nodes(snapshot, g)[:20]
    np.testing.assert_array_equal(
        lookup.lookup(old, np.full(20, created.as_of)).z, snapshot.embeddings()[:20]
    )


def test_bad_latency_or_stop_is_refused(snapshot, tiny_run, tiny_world):
    with pytest.raises(InputError, match="latency must be >= 1 second"):
        embed_on_creation(tiny_run, tiny_world, snapshot, "test_start", latency=0)
    with pytest.raises(InputError, match="stop after the base snapshot"):
        embed_on_creation(tiny_run, tiny_world, snapshot, snapshot.as_of)
