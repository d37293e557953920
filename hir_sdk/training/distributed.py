"""Data-parallel training under `torchrun`: process group set-up and gradient averaging.

Each of `world_size` ranks trains on its share of every batch (anchors `rank::world_size`
of the same global batch, and likewise for engagement pairs), then the gradients are
averaged with one all-reduce per parameter before the (identical) optimizer step, which
is what DistributedDataParallel does. The average is taken explicitly because a step makes
two forward passes (views and engagement pairs) before its backward. Backend: NCCL on
GPUs, gloo on CPU. Running statistics (the projection's per-type centres) are averaged
after each step too, so the ranks keep identical models. Only rank 0 writes the run folder.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import torch
import torch.distributed as dist


def world() -> tuple[int, int]:
    """(rank, world size): (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def init_from_env() -> bool:
    """Join the process group `torchrun` describes in the environment; False when the
    process runs alone (no `WORLD_SIZE`, or 1)."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return dist.is_initialized()
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend=backend)
    return True


def average_gradients(parameters: Iterable[torch.nn.Parameter]) -> None:
    """All-reduce every gradient to its mean over the ranks (no-op when alone)."""
    _, size = world()
    if size == 1:
        return
    for p in parameters:
        if p.grad is not None:
            dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
            p.grad.div_(size)


def average_float_buffers(module: torch.nn.Module) -> None:
    """All-reduce every floating-point buffer (running statistics such as the projection's
    type centres) to its mean over the ranks, so every rank keeps the same model; boolean
    and integer buffers are OR-ed / max-ed. No-op when alone."""
    _, size = world()
    if size == 1:
        return
    for b in module.buffers():
        if b.is_floating_point():
            dist.all_reduce(b, op=dist.ReduceOp.SUM)
            b.div_(size)
        else:
            merged = b.to(torch.int64)
            dist.all_reduce(merged, op=dist.ReduceOp.MAX)
            b.copy_(merged.to(b.dtype))
