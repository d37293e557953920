"""Embedding nodes with a trained encoder: views as of each node's cutoff, batched, in eval
mode, without gradients. Shared by the trainer (validation, benchmarks) and the embedder.

The next batch is sampled, encoded and packed (numpy, one thread) while the model runs on
the current one. On CPU the model then gets one intra-op thread fewer than there are, so
the two never compete for a core: on a shared two-core machine an OpenMP team of two
stalls at every operator's barrier whenever the other core is busy, which costs far more
than the second thread gains.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.inputs import EncoderInputs, inputs_from_packed
from hir_sdk.sampling.config import ViewConfig
from hir_sdk.sampling.loader import BatchBuilder


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
) -> tuple[np.ndarray, list[np.ndarray]]:
    """`(z (N, out_dim), [logits (N, K_l) per level])` of `nodes` as of `cutoffs`.

    Views only hold edges before each cutoff, and a node's view does not depend on the
    batch it is in (counter-based sampling), so the result is the same for any batch size.
    """
    nodes = np.asarray(nodes, dtype=np.int64)
    cutoffs = np.asarray(cutoffs, dtype=np.int64)
    if len(nodes) == 0:
        raise ValueError("embed: no nodes given")
    if cutoffs.shape != nodes.shape:
        raise ValueError("embed: nodes and cutoffs must have the same length")
    device = next(model.parameters()).device
    starts = list(range(0, len(nodes), batch_size))

    def prepare(lo: int) -> EncoderInputs:
        rows = slice(lo, lo + batch_size)
        return inputs_from_packed(builder.build_view(nodes[rows], cutoffs[rows], view))

    was_training = model.training
    threads = torch.get_num_threads()
    model.eval()
    z, logits = [], []
    try:
        if device.type == "cpu":
            torch.set_num_threads(max(threads - 1, 1))
        with ThreadPoolExecutor(max_workers=1) as sampler:
            pending = sampler.submit(prepare, starts[0])
            for lo in starts:
                x = pending.result()
                if lo + batch_size < len(nodes):
                    pending = sampler.submit(prepare, lo + batch_size)
                out = model(x.to(device), impl)
                z.append(out.embedding.float().cpu().numpy())
                logits.append([lg.float().cpu().numpy() for lg in out.logits])
    finally:
        torch.set_num_threads(threads)
        model.train(was_training)
    levels = [np.concatenate([b[i] for b in logits]) for i in range(len(logits[0]))]
    return np.concatenate(z), levels
