"""Embedding nodes with a trained encoder: views as of each node's cutoff, batched, in eval
mode, without gradients. Shared by the trainer (validation, benchmarks) and the embedder."""

from __future__ import annotations

import numpy as np
import torch

from hir_sdk.model import HierarchicalEncoder, Impl
from hir_sdk.model.inputs import inputs_from_packed
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
    was_training = model.training
    model.eval()
    z, logits = [], []
    try:
        for lo in range(0, len(nodes), batch_size):
            packed = builder.build_view(
                nodes[lo : lo + batch_size], cutoffs[lo : lo + batch_size], view
            )
            out = model(inputs_from_packed(packed).to(device), impl)
            z.append(out.embedding.float().cpu().numpy())
            logits.append([lg.float().cpu().numpy() for lg in out.logits])
    finally:
        model.train(was_training)
    levels = [np.concatenate([b[i] for b in logits]) for i in range(len(logits[0]))]
    return np.concatenate(z), levels
