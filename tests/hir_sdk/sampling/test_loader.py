"""The loader: identical batches for 0, 1 and 2 workers; shuffling only within chunks;
resuming mid-epoch."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from hir_sdk.sampling.loader import (
    AnchorSchedule,
    BatchBuilder,
    LoaderConfig,
    anchors_from_events,
    make_loader,
)
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.schema.manifest import SECONDS_PER_DAY


@pytest.fixture(scope="module")
def setup(tiny_graph):
    anchors, cutoffs = anchors_from_events(tiny_graph, "train")
    keep = slice(0, 900)  # a few hundred anchors keep the test quick
    return tiny_graph, anchors[keep], cutoffs[keep]


def _flat(batch) -> list[np.ndarray]:
    return [
        getattr(view, f.name)
        for view in (batch.teacher, batch.student)
        for f in dataclasses.fields(view)
        if isinstance(getattr(view, f.name), np.ndarray)
    ]


def _stream(graph, anchors, cutoffs, workers: int, epoch: int = 0, start: int = 0):
    config = LoaderConfig(batch_size=64, num_workers=workers, chunk_days=3)
    schedule = AnchorSchedule(anchors, cutoffs, config)
    builder = BatchBuilder(graph, featurizer=NodeFeaturizer(graph))
    return list(make_loader(builder, schedule, epoch=epoch, start_batch=start))


def test_identical_batches_for_0_1_2_workers(setup):
    graph, anchors, cutoffs = setup
    streams = [_stream(graph, anchors, cutoffs, w) for w in (0, 1, 2)]
    assert len(streams[0]) == -(-len(anchors) // 64) > 3
    for a, b, c in zip(*streams, strict=True):
        assert a.index == b.index == c.index
        for x, y, z in zip(_flat(a), _flat(b), _flat(c), strict=True):
            assert x.dtype == y.dtype == z.dtype
            assert np.array_equal(x, y) and np.array_equal(x, z)


def test_resume_mid_epoch_continues_identically(setup):
    graph, anchors, cutoffs = setup
    full = _stream(graph, anchors, cutoffs, 0, epoch=1)
    tail = _stream(graph, anchors, cutoffs, 0, epoch=1, start=3)
    assert [b.index for b in tail] == [b.index for b in full[3:]]
    for a, b in zip(full[3:], tail, strict=True):
        assert all(np.array_equal(x, y) for x, y in zip(_flat(a), _flat(b), strict=True))


def test_shuffling_stays_within_time_chunks(setup):
    _, anchors, cutoffs = setup
    config = LoaderConfig(batch_size=64, chunk_days=3, seed=5)
    schedule = AnchorSchedule(anchors, cutoffs, config)
    e0, e1 = schedule.epoch_order(0), schedule.epoch_order(1)
    assert sorted(e0.tolist()) == list(range(len(anchors)))
    assert e0.tolist() != e1.tolist()  # epochs differ
    chunk = (schedule.cutoffs - schedule.cutoffs[0]) // (3 * SECONDS_PER_DAY)
    assert (np.diff(chunk[e0]) >= 0).all()  # chunks stay in time order
    assert not (np.diff(schedule.cutoffs[e0]) >= 0).all()  # but shuffled inside


def test_anchors_from_events(tiny_graph):
    anchors, cutoffs = anchors_from_events(tiny_graph, "train")
    lo, hi = tiny_graph.manifest.time.window("train")
    assert ((cutoffs >= lo) & (cutoffs < hi)).all()
    assert (tiny_graph.created_ts[anchors] < cutoffs).all()
    pairs = set(zip(anchors.tolist(), (cutoffs // SECONDS_PER_DAY).tolist(), strict=True))
    assert len(pairs) == len(anchors)  # once per node and day
    assert len(set(tiny_graph.node_type_of(anchors).tolist())) >= 2


def test_loader_config_validation():
    with pytest.raises(ValueError, match="batch_size"):
        LoaderConfig(batch_size=0)
