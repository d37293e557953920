"""The loader: identical batches for 0, 1 and 2 workers; chunks shuffled and either
spread over the epoch or kept in time order; resuming mid-epoch; the process's thread
settings as they were; no fork from a process that has joined a process group."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import pytest
import torch.distributed as dist
from threadpoolctl import threadpool_info

from hir_sdk.sampling import blas_threads
from hir_sdk.sampling.loader import (
    AnchorSchedule,
    BatchBuilder,
    LoaderConfig,
    anchors_from_events,
    make_loader,
    worker_start_method,
)
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.schema.manifest import DAY
from tests.thread_settings import thread_settings


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


def _loader(graph, anchors, cutoffs, workers: int, epoch: int = 0, start: int = 0):
    config = LoaderConfig(batch_size=64, num_workers=workers, chunk_days=3)
    schedule = AnchorSchedule(anchors, cutoffs, config)
    builder = BatchBuilder(graph, featurizer=NodeFeaturizer(graph))
    return make_loader(builder, schedule, epoch=epoch, start_batch=start)


def _stream(graph, anchors, cutoffs, workers: int, epoch: int = 0, start: int = 0):
    return list(_loader(graph, anchors, cutoffs, workers, epoch, start))


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


def test_time_order_shuffles_only_within_chunks(setup):
    _, anchors, cutoffs = setup
    config = LoaderConfig(batch_size=64, chunk_days=3, seed=5)  # order "time", the default
    schedule = AnchorSchedule(anchors, cutoffs, config)
    e0, e1 = schedule.epoch_order(0), schedule.epoch_order(1)
    assert sorted(e0.tolist()) == list(range(len(anchors)))
    assert e0.tolist() != e1.tolist()  # epochs differ
    chunk = (schedule.cutoffs - schedule.cutoffs[0]) // (3 * DAY)
    assert (np.diff(chunk[e0]) >= 0).all()  # chunks stay in time order
    assert not (np.diff(schedule.cutoffs[e0]) >= 0).all()  # but shuffled inside


def test_spread_order_spans_the_window_from_the_first_batches(setup):
    _, anchors, cutoffs = setup
    spread = AnchorSchedule(
        anchors, cutoffs, LoaderConfig(batch_size=64, chunk_days=3, seed=5, order="spread")
    )
    timed = AnchorSchedule(anchors, cutoffs, LoaderConfig(batch_size=64, chunk_days=3, seed=5))
    e0 = spread.epoch_order(0)
    assert sorted(e0.tolist()) == list(range(len(anchors)))
    assert e0.tolist() != spread.epoch_order(1).tolist()
    # the same rows as the time order's chunks, only interleaved
    chunk = (spread.cutoffs - spread.cutoffs[0]) // (3 * DAY)
    sizes = np.bincount(chunk)
    assert len(sizes) >= 3
    for c in range(len(sizes)):
        in_c = chunk[e0] == c
        assert e0[in_c].tolist() == [r for r in timed.epoch_order(0) if chunk[r] == c]
    # every prefix holds each chunk in proportion to its size
    for n in (64, 128, 300, len(e0) // 2):
        held = np.bincount(chunk[e0[:n]], minlength=len(sizes))
        assert (np.abs(held - sizes * n / len(e0)) <= 2).all(), (n, held)
    # while the time order's first batch holds the first chunk only
    assert set(chunk[timed.epoch_order(0)[:64]].tolist()) == {0}


def test_anchors_from_events(tiny_graph):
    anchors, cutoffs = anchors_from_events(tiny_graph, "train")
    lo, hi = tiny_graph.manifest.time.window("train")
    assert ((cutoffs >= lo) & (cutoffs < hi)).all()
    assert (tiny_graph.created_ts[anchors] < cutoffs).all()
    pairs = set(zip(anchors.tolist(), (cutoffs // DAY).tolist(), strict=True))
    assert len(pairs) == len(anchors)  # once per node and day
    assert len(set(tiny_graph.node_type_of(anchors).tolist())) >= 2


def test_loader_config_validation():
    with pytest.raises(ValueError, match="batch_size"):
        LoaderConfig(batch_size=0)
    with pytest.raises(ValueError, match="order must be one of"):
        LoaderConfig(order="random")


# ---- process-wide state ---------------------------------------------------------------
def test_iterating_the_loader_leaves_the_thread_settings_as_they_were(setup):
    graph, anchors, cutoffs = setup
    before = thread_settings()
    for workers in (0, 1):
        assert len(_stream(graph, anchors[:128], cutoffs[:128], workers)) == 2
        assert thread_settings() == before


def test_samplers_in_two_threads_give_the_blas_threads_back(setup, monkeypatch):
    """Thread B starts encoding while thread A is inside its one-BLAS-thread block, and
    the blocks overlap as A in, B in, A out, B out: each encodes with one BLAS thread (B
    still after A's block has ended), and afterwards BLAS has the thread count it had
    before."""
    graph, anchors, cutoffs = setup
    builder = BatchBuilder(graph)
    before = thread_settings()
    if all(n == 1 for api, n in before[0] if api == "blas"):
        pytest.skip("BLAS runs one thread here: a lost thread count would not show")
    with blas_threads.one_blas_thread():  # the main thread sets the count first: threads
        pass  # A and B must still be able to set it (threadpoolctl's controlling thread)
    a_in, b_arrived, a_out = threading.Event(), threading.Event(), threading.Event()
    inside = {}  # the BLAS thread counts each thread encoded with

    class Announced:  # B says when it reaches the block
        def __init__(self, lock):
            self.lock = lock

        def __enter__(self):
            if threading.current_thread().name == "B":
                b_arrived.set()
            return self.lock.__enter__()

        def __exit__(self, *exc):
            return self.lock.__exit__(*exc)

    pack = BatchBuilder._pack

    def ordered_pack(self, sub):  # runs inside the block
        name = threading.current_thread().name
        inside[name] = {d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"}
        if name == "A":
            a_in.set()
            b_arrived.wait()
        else:
            a_out.wait()
            inside["B after A"] = {
                d["num_threads"] for d in threadpool_info() if d["user_api"] == "blas"
            }
        return pack(self, sub)

    def a():
        builder.build_view(anchors[:8], cutoffs[:8], builder.sampler.config.student)
        a_out.set()

    def b():
        a_in.wait()
        builder.build_view(anchors[8:16], cutoffs[8:16], builder.sampler.config.student)

    monkeypatch.setattr(blas_threads, "_lock", Announced(blas_threads._lock))
    monkeypatch.setattr(BatchBuilder, "_pack", ordered_pack)
    threads = [threading.Thread(target=a, name="A"), threading.Thread(target=b, name="B")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert inside == {"A": {1}, "B": {1}, "B after A": {1}}  # every BLAS library loaded
    assert thread_settings() == before


def test_workers_are_not_forked_from_a_process_group_member(setup, tmp_path):
    """Once the process has joined a process group, loader workers start from a
    forkserver. (The two-rank `hir fit` test in tests/hir_sdk/training/test_distributed.py
    trains with such workers.)"""
    graph, anchors, cutoffs = setup
    assert worker_start_method() == "fork"
    assert _loader(graph, anchors, cutoffs, 1).multiprocessing_context.get_start_method() == (
        "fork"
    )
    dist.init_process_group(
        "gloo", init_method=f"file://{tmp_path / 'store'}", rank=0, world_size=1
    )
    try:
        assert worker_start_method() == "forkserver"
        loader = _loader(graph, anchors, cutoffs, 1)
        assert loader.multiprocessing_context.get_start_method() == "forkserver"
        assert _loader(graph, anchors, cutoffs, 0).multiprocessing_context is None
    finally:
        dist.destroy_process_group()
