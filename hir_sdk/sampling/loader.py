"""The pipelined, reproducible loader: workers sample, encode and pack upcoming batches
while the model trains on the current one.

Reproducibility rests on two facts: batch `i` of epoch `e` holds a fixed set of anchors
(each fixed time chunk shuffled by a generator seeded with (seed, epoch, chunk)), and a
view depends only on its anchor and cutoff (counter-based sampling). So the stream of
batches is bit-identical for 0, 1 or 2 workers, and a run can resume at any batch.

```
anchors sorted by cutoff -> | chunk 0 | chunk 1 | chunk 2 | ...   (chunk_days each)
epoch e: each chunk permuted by rng(seed, e, chunk), then
  order "time":   the chunks kept in time order (a stream through the window; default)
  order "spread": the chunks interleaved, so every stretch of batches spans the window
batch i = anchors[i*B:(i+1)*B] -> sample teacher+student -> encode -> pack -> model
```

A run shorter than an epoch (the usual case) reaches, in time order, only the start of
its window; "spread" trains on all of it. Which trains the better encoder is measured,
not assumed (docs/sampling.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
import torch.distributed as dist
from threadpoolctl import threadpool_limits
from torch.utils.data import DataLoader, Dataset

from hir_sdk.graph.temporal_graph import TemporalGraph
from hir_sdk.sampling.blas_threads import one_blas_thread
from hir_sdk.sampling.config import ANCHOR_ORDERS, SamplerConfig, ViewConfig
from hir_sdk.sampling.encodings import EncodingConfig, encode
from hir_sdk.sampling.node_features import NodeFeaturizer
from hir_sdk.sampling.packing import PackedBatch, bucket_length, pack
from hir_sdk.sampling.subgraphs import Subgraphs
from hir_sdk.sampling.views import ViewSampler
from hir_sdk.schema.manifest import DAY


@dataclass(frozen=True)
class LoaderConfig:
    batch_size: int = 128
    chunk_days: float = 7.0
    num_workers: int = 0
    prefetch: int = 2
    seed: int = 0
    rank: int = 0  # data-parallel training: this process takes rows rank::world_size
    world_size: int = 1
    order: str = "time"  # the chunks in time order ("time") or interleaved ("spread")

    def __post_init__(self) -> None:
        if self.batch_size < 1 or self.chunk_days <= 0 or self.num_workers < 0:
            raise ValueError("LoaderConfig: need batch_size >= 1, chunk_days > 0, num_workers >= 0")
        if self.order not in ANCHOR_ORDERS:
            raise ValueError(
                f"LoaderConfig: order must be one of {ANCHOR_ORDERS}, got {self.order!r}"
            )
        if self.prefetch < 1:
            raise ValueError("LoaderConfig: prefetch must be >= 1")
        if not 0 <= self.rank < self.world_size:
            raise ValueError("LoaderConfig: need 0 <= rank < world_size")


@dataclass(frozen=True)
class TrainingBatch:
    """The teacher and student views of one batch of anchors, packed, and the views of
    the other nodes its step reads (e.g. engagement pairs), when the loader built them.
    A step that reads only the other views gets no anchor views (None)."""

    index: int
    teacher: PackedBatch | None
    student: PackedBatch | None
    extra: PackedBatch | None = None


# step -> (nodes, cutoffs, view) of more views a step needs, built with its batch
ExtraViews = Callable[[int], tuple[np.ndarray, np.ndarray, ViewConfig]]


def anchors_from_events(
    graph: TemporalGraph,
    window: str,
    *,
    roles: tuple[str, ...] = ("exposure", "click", "conversion"),
) -> tuple[np.ndarray, np.ndarray]:
    """Training anchors from a window's engagement edges: each endpoint, once per day it
    is active, with its first event time that day as the cutoff (the view it gets is its
    neighbourhood just before it engages)."""
    codes = graph.role_codes(*roles)
    edges = np.arange(graph.window(window).start, graph.window(window).stop)
    edges = edges[np.isin(graph.etype[edges], codes)]
    node = np.concatenate([graph.src[edges], graph.dst[edges]])
    ts = np.concatenate([graph.ts[edges], graph.ts[edges]])
    day = ts // DAY
    order = np.lexsort((ts, day, node))
    node, ts, day = node[order], ts[order], day[order]
    first = np.ones(len(node), dtype=bool)
    first[1:] = (node[1:] != node[:-1]) | (day[1:] != day[:-1])
    node, ts = node[first], ts[first]
    alive = graph.created_ts[node] < ts
    return node[alive], ts[alive]


class AnchorSchedule:
    """Which anchors go into batch `i` of epoch `e`."""

    def __init__(self, anchors: np.ndarray, cutoffs: np.ndarray, config: LoaderConfig) -> None:
        anchors = np.asarray(anchors, dtype=np.int64)
        cutoffs = np.asarray(cutoffs, dtype=np.int64)
        order = np.lexsort((anchors, cutoffs))
        self.anchors, self.cutoffs = anchors[order], cutoffs[order]
        self.config = config
        chunk_s = int(config.chunk_days * DAY)
        start = int(self.cutoffs[0]) if len(self.cutoffs) else 0
        chunk = (self.cutoffs - start) // chunk_s
        self._bounds = np.flatnonzero(np.diff(chunk)) + 1

    def __len__(self) -> int:
        return -(-len(self.anchors) // self.config.batch_size)

    def epoch_order(self, epoch: int) -> np.ndarray:
        """Row indices in epoch `epoch`'s order. Each chunk is permuted; "time" keeps the
        chunks in time order, "spread" interleaves them: the k-th of a chunk's n rows
        goes to position (k + offset) / n of the epoch (offset: a seeded draw in [0, 1) per
        chunk), so any run of consecutive batches holds each chunk in proportion to its
        size."""
        spread = self.config.order == "spread"
        parts, keys = [], []
        for i, part in enumerate(np.split(np.arange(len(self.anchors)), self._bounds)):
            rng = np.random.default_rng([self.config.seed, epoch, i])
            parts.append(part[rng.permutation(len(part))])
            if spread:
                keys.append((np.arange(len(part)) + rng.random()) / len(part))
        if not parts:
            return np.zeros(0, dtype=np.int64)
        rows = np.concatenate(parts)
        return rows[np.argsort(np.concatenate(keys), kind="stable")] if spread else rows

    def batch(self, epoch: int, index: int) -> tuple[np.ndarray, np.ndarray]:
        order = self.epoch_order(epoch)
        rows = order[index * self.config.batch_size : (index + 1) * self.config.batch_size]
        return self.anchors[rows], self.cutoffs[rows]


class BatchBuilder:
    """Samples, encodes, featurizes and packs the teacher and student views of a batch.

    Without a `featurizer` the packed batches carry structure only (no node features).
    """

    def __init__(
        self,
        graph: TemporalGraph,
        sampler: SamplerConfig | None = None,
        encoding: EncodingConfig | None = None,
        featurizer: NodeFeaturizer | None = None,
    ) -> None:
        self.sampler = ViewSampler(graph, sampler)
        self.encoding = encoding or EncodingConfig()
        self.featurizer = featurizer
        self.graph = graph

    def _pack(self, sub: Subgraphs) -> PackedBatch:
        features = None
        if self.featurizer is not None:
            features = self.featurizer.features(
                sub.nodes,
                np.repeat(sub.cutoffs, sub.sizes()),
                length=bucket_length(max(len(sub.nodes), 1)),
            )
        return pack(
            sub, encode(self.graph, sub, self.encoding), self.encoding.far, features=features
        )

    def build_view(self, anchors: np.ndarray, cutoffs: np.ndarray, view: ViewConfig) -> PackedBatch:
        """One view (e.g. the student's) of a batch of anchors, packed."""
        sub = self.sampler.sample(anchors, cutoffs, view)
        with one_blas_thread():
            return self._pack(sub)

    def build(
        self,
        anchors: np.ndarray,
        cutoffs: np.ndarray,
        index: int = 0,
        extra: tuple[np.ndarray, np.ndarray, ViewConfig] | None = None,
        *,
        anchor_views: bool = True,
    ) -> TrainingBatch:
        """The batch's views (unless `anchor_views` is False), and those of `extra` =
        (nodes, cutoffs, view) if given. Each view is a function of its nodes and cutoffs
        alone, so leaving some out changes none of the others."""
        views = self.sampler.views(anchors, cutoffs) if anchor_views else None
        more = None if extra is None else self.sampler.sample(*extra)
        # one BLAS thread in every process: multi-threaded BLAS sums in another order,
        # and the random-walk encodings would differ in the last bit between workers
        with one_blas_thread():
            teacher = None if views is None else self._pack(views.teacher)
            student = None if views is None else self._pack(views.student)
            packed = None if more is None else self._pack(more)
        return TrainingBatch(index=index, teacher=teacher, student=student, extra=packed)


class _EpochBatches(Dataset):
    def __init__(
        self,
        builder: BatchBuilder,
        schedule: AnchorSchedule,
        epoch: int,
        start: int,
        extra: ExtraViews | None = None,
        anchors_from: int = 0,
    ) -> None:
        self.builder, self.schedule, self.epoch, self.start = builder, schedule, epoch, start
        self.extra, self.anchors_from = extra, anchors_from
        self._order = schedule.epoch_order(epoch)

    def __len__(self) -> int:
        return max(len(self.schedule) - self.start, 0)

    def __getitem__(self, i: int) -> TrainingBatch:
        index = self.start + i
        config = self.schedule.config
        size = config.batch_size
        rows = self._order[index * size : (index + 1) * size][config.rank :: config.world_size]
        step = self.epoch * len(self.schedule) + index  # the training step of this batch
        return self.builder.build(
            self.schedule.anchors[rows],
            self.schedule.cutoffs[rows],
            index,
            None if self.extra is None else self.extra(step),
            anchor_views=step >= self.anchors_from,
        )


def _keep(batch: TrainingBatch) -> TrainingBatch:
    return batch


def _single_threaded_worker(worker_id: int) -> None:
    """Workers sample with numpy: one BLAS and one torch thread each keeps them from
    competing with the training process for cores (oversubscription halves throughput on
    a 2-core machine). A worker is a process of its own, so these settings stay in it."""
    del worker_id
    torch.set_num_threads(1)
    threadpool_limits(1)


def worker_start_method() -> str:
    """How loader workers start: forked from the training process, except once it has
    joined a process group (`torchrun`). Forking then would copy the group's live
    threads, sockets and locks (gloo, NCCL) into a child that can deadlock on them, so
    each worker is forked instead from a clean `forkserver` process, at the cost of
    importing the SDK and receiving the dataset once per worker and epoch."""
    return "forkserver" if dist.is_available() and dist.is_initialized() else "fork"


def make_loader(
    builder: BatchBuilder,
    schedule: AnchorSchedule,
    *,
    epoch: int,
    start_batch: int = 0,
    extra: ExtraViews | None = None,
    anchors_from: int = 0,
) -> DataLoader:
    """Batches `start_batch..` of `epoch`, in order, prepared by `num_workers` processes
    (0: in the training process, synchronously; see `worker_start_method`). With `extra`,
    each batch also carries the views `extra(step)` names, step = epoch * batches per
    epoch + batch (with forked-server workers, `extra` must pickle). Steps before
    `anchors_from` get no anchor views (their loss does not read them)."""
    workers = schedule.config.num_workers
    return DataLoader(
        _EpochBatches(builder, schedule, epoch, start_batch, extra, anchors_from),
        batch_size=None,
        shuffle=False,
        num_workers=workers,
        collate_fn=_keep,
        prefetch_factor=schedule.config.prefetch if workers else None,
        multiprocessing_context=worker_start_method() if workers else None,
        worker_init_fn=_single_threaded_worker if workers else None,
        generator=torch.Generator().manual_seed(schedule.config.seed),
    )
