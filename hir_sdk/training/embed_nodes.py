"""Embedding nodes with a trained encoder: views as of each node's cutoff, batched, in eval
mode, without gradients. Shared by the trainer (validation, benchmarks) and the embedder.

The next batch is sampled, encoded and packed (numpy, one thread) while the model runs on
the current one. On CPU the model then gets one intra-op thread fewer than there are, so
the two never compete for a core: on a shared two-core machine an OpenMP team of two
stalls at every operator's barrier whenever the other core is busy, which costs far more
than the second thread gains. torch's thread count is process state, so it is lowered by
one call at a time and given back when that call ends (`_a_core_for_the_sampler`).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np
import torch

from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.inputs import EncoderInputs, inputs_from_packed
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.loader import BatchBuilder
from hir_sdk.training.distributed import batches_of_rank, gather_batches

_lowered = threading.Lock()  # held by the call that has lowered torch's thread count


@contextmanager
def _a_core_for_the_sampler(device: torch.device) -> Iterator[None]:
    """One torch intra-op thread fewer on CPU for the block, then the count as it was.
    Only one call lowers it at a time; a call that runs while another holds it leaves
    the count alone, so overlapping calls (A lowers, B lowers again, A restores, B
    restores A's lowered count) cannot leave the process with fewer threads."""
    if device.type != "cpu" or not _lowered.acquire(blocking=False):
        yield
        return
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(max(threads - 1, 1))
        yield
    finally:
        torch.set_num_threads(threads)
        _lowered.release()


@torch.no_grad()
def embed_nodes(
    model: HierarchicalEncoder,
    builder: BatchBuilder,
    view: ViewConfig,
    nodes: np.ndarray,
    cutoffs: np.ndarray,
    *,
    impl: Impl = Impl.AUTO,
    batch_size: int = 256,
    across_ranks: bool = False,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """`(z (N, out_dim), [logits (N, K_l) per level])` of `nodes` as of `cutoffs`.

    Views only hold edges before each cutoff, and a node's view does not depend on the
    batch it is in (counter-based sampling), so the result is the same for any batch size.
    `across_ranks`: every rank of the process group (`torchrun`) calls this with the same
    arguments, embeds its round-robin share of the batches and gets the whole result,
    bit-identical to one process's (`training.distributed.gather_batches`).
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    cutoffs = np.asarray(cutoffs, dtype=np.int64)
    if len(nodes) == 0:
        raise ValueError("embed: no nodes given")
    if cutoffs.shape != nodes.shape:
        raise ValueError("embed: nodes and cutoffs must have the same length")
    device = next(model.parameters()).device
    whole = range(0, len(nodes), batch_size)
    starts = batches_of_rank(len(nodes), batch_size) if across_ranks else list(whole)

    def prepare(lo: int) -> EncoderInputs:
        rows = slice(lo, lo + batch_size)
        return inputs_from_packed(builder.build_view(nodes[rows], cutoffs[rows], view))

    was_training = model.training
    model.eval()
    z, logits = [], []
    try:
        with _a_core_for_the_sampler(device), ThreadPoolExecutor(max_workers=1) as sampler:
            upcoming = iter(starts)
            first = next(upcoming, None)
            pending = None if first is None else sampler.submit(prepare, first)
            while pending is not None:
                x = pending.result()
                following = next(upcoming, None)
                pending = None if following is None else sampler.submit(prepare, following)
                out = model(x.to(device), impl)
                z.append(out.embedding.float().cpu().numpy())
                logits.append([lg.float().cpu().numpy() for lg in out.logits])
    finally:
        model.train(was_training)
    if not starts:  # a rank with no batch of its own (fewer batches than ranks)
        z = [np.zeros((0, model.config.out_dim), np.float32)]
        logits = [[np.zeros((0, p.shape[0]), np.float32) for p in model.prototypes.prototypes()]]
    z = np.concatenate(z)
    levels = [np.concatenate([b[i] for b in logits]) for i in range(len(logits[0]))]
    if across_ranks:
        z = gather_batches(z, len(nodes), batch_size)
        levels = [gather_batches(lg, len(nodes), batch_size) for lg in levels]
    return z, levels
