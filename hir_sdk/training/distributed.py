"""Data-parallel training and embedding under `torchrun`: process group set-up, gradient
averaging and the collectives both use.

Each of `world_size` ranks trains on its share of every batch (anchors `rank::world_size`
of the same global batch, and likewise for engagement pairs), then the gradients are
averaged with one all-reduce per parameter before the (identical) optimizer step, which
is what DistributedDataParallel does. The average is taken explicitly because a step makes
two forward passes (views and engagement pairs) before its backward. Backend: NCCL on
GPUs, gloo on CPU. Running statistics (the projection's per-type centres) are averaged
after each step too, so the ranks keep identical models.

Rules every rank keeps, so that no rank waits forever for another:

- **One GPU per rank**: rank `LOCAL_RANK` of a machine uses `cuda:LOCAL_RANK`
  (`device_for`); more ranks than visible GPUs is an error, not a shared GPU.
- **Only rank 0 writes the run folder**, through `on_rank_zero`: every rank then learns
  whether the write worked before the next collective, and if it failed every rank
  raises (rank 0 its own error, the others `RankZeroFailed`) instead of waiting in an
  all-reduce that rank 0 will never join.
- **Every rank sees the same validation**: the cluster queue holds the whole batch's
  teacher embeddings on every rank (`gather_shares`), each rank validates the same inputs
  and the metrics are averaged (`mean_over_ranks`), so the validation loss, and with it
  the checkpoint kept as `best.pt`, do not depend on the number of ranks.

Data-parallel embedding (`hir embed` under `torchrun`) deals whole batches round-robin:
rank `r` embeds batches `r, r + W, ...` of the one-process batching and `gather_batches`
puts them back in order on every rank, so every row is computed in the very batch it would
be in alone and the result is bit-identical for any number of ranks.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import TypeVar

import numpy as np
import torch
import torch.distributed as dist

from hir_sdk.errors import InputError

DEVICES = ("auto", "cpu", "cuda")


T = TypeVar("T")


class RankZeroFailed(RuntimeError):
    """Raised on every other rank when rank 0 failed to write the run folder."""


def world() -> tuple[int, int]:
    """(rank, world size): (0, 1) outside a process group."""
    if dist.is_available() and dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def local_rank() -> int | None:
    """This process's slot on its machine (`LOCAL_RANK`, set by `torchrun`); None when
    the variable is not set."""
    value = os.environ.get("LOCAL_RANK")
    if value is None:
        return None
    if not value.strip().isdigit():
        raise InputError(f"LOCAL_RANK must be a whole number >= 0, got {value!r}")
    return int(value)


def device_for(choice: str, local_rank: int | None, cuda_devices: int) -> torch.device:
    """The device a rank trains on: `choice` ("auto": CUDA when there is a GPU), and on
    CUDA the GPU numbered `local_rank` (one GPU per rank of a machine); without a local
    rank, the current CUDA device."""
    if choice not in DEVICES:
        raise InputError(f"device must be one of {', '.join(DEVICES)}, got {choice!r}")
    if choice == "cpu" or (choice == "auto" and cuda_devices == 0):
        return torch.device("cpu")
    if cuda_devices == 0:
        raise InputError("device = 'cuda' but this machine has no visible CUDA device")
    if local_rank is None:
        return torch.device("cuda")
    if local_rank >= cuda_devices:
        raise InputError(
            f"rank {local_rank} of this machine has no GPU of its own: {cuda_devices} "
            "visible, one per rank (start at most that many ranks per machine, e.g. "
            "torchrun --nproc_per_node)"
        )
    return torch.device("cuda", local_rank)


def init_from_env() -> bool:
    """Join the process group `torchrun` describes in the environment; False when the
    process runs alone (no `WORLD_SIZE`, or 1). On GPUs each rank first selects its own
    device, `cuda:LOCAL_RANK`, so NCCL does not put every rank on GPU 0."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or dist.is_initialized():
        return dist.is_initialized()
    # torch's compiler stack (loaded by the first optimizer) keeps references to a
    # process group that exists when it is imported, so `destroy_process_group` would
    # leave gloo's threads running until interpreter teardown, which can then abort the
    # process ("terminate called without an active exception"); loaded first, it holds none
    import torch._dynamo  # noqa: F401

    cuda = torch.cuda.is_available()
    if cuda:
        device = device_for("cuda", local_rank(), torch.cuda.device_count())
        if device.index is not None:
            torch.cuda.set_device(device)
    dist.init_process_group(backend="nccl" if cuda else "gloo")
    return True


def _collective_device() -> torch.device:
    """Where small tensors for a collective live: the rank's GPU under NCCL, else CPU."""
    if dist.get_backend() == "nccl":
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def on_rank_zero(action: Callable[[], T]) -> T | None:
    """Run `action` (a write to the run folder) on rank 0 only, then tell every rank
    whether it worked: if it raised, rank 0 raises its error and every other rank
    `RankZeroFailed`, all before anyone reaches the next collective. Returns what
    `action` returned on rank 0, None on the others; alone, just `action()`. Every rank
    must call this at the same point (it is a collective)."""
    rank, size = world()
    if size == 1:
        return action()
    error: Exception | None = None
    result = None
    if rank == 0:
        try:
            result = action()
        except Exception as err:  # any failure stops every rank, below
            error = err
    failed = torch.tensor([error is not None], dtype=torch.int32, device=_collective_device())
    dist.all_reduce(failed, op=dist.ReduceOp.MAX)
    if error is not None:
        raise error
    if failed.item():
        raise RankZeroFailed("rank 0 failed to write the run folder (its log says why)")
    return result


def from_rank_zero(action: Callable[[], T]) -> T:
    """Run `action` on rank 0 only and give its result to every rank (pickled, one
    broadcast), so that all ranks go on with the very same object (e.g. a fitted
    quantizer) even where their arithmetic would differ. A failure stops every rank, as
    in `on_rank_zero`. Alone, just `action()`. A collective: every rank calls it."""
    _, size = world()
    if size == 1:
        return action()
    box = [on_rank_zero(action)]  # the result on rank 0, None on the others
    dist.broadcast_object_list(box, src=0, device=_collective_device())
    return box[0]


def batches_of_rank(total: int, batch: int) -> list[int]:
    """Start rows of the `batch`-row batches of `total` rows that this rank handles:
    batches `rank, rank + W, ...` (all of them when alone)."""
    rank, size = world()
    return list(range(0, total, batch))[rank::size]


def gather_batches(part: np.ndarray, total: int, batch: int) -> np.ndarray:
    """The whole `total`-row array, on every rank, from each rank's `part`: the rows of its
    batches (`batches_of_rank(total, batch)`) stacked in order. The identity when alone.

    ```
    W = 2, total = 5, batch = 2:  rank 0 holds rows 0 1 | 4,  rank 1 rows 2 3
    padded to the longest share, gathered, then each rank's rows put back in place
    ```
    """
    _, size = world()
    if size == 1:
        return part
    holder = (np.arange(total) // batch) % size  # the rank that embedded each row
    rows = [np.flatnonzero(holder == r) for r in range(size)]  # each rank's, in its order
    if len(part) != len(rows[dist.get_rank()]):
        raise ValueError(f"gather_batches: {len(part)} rows, not this rank's batches' rows")
    most = max(len(r) for r in rows)
    padded = np.zeros((most, *part.shape[1:]), dtype=part.dtype)
    padded[: len(part)] = part
    device = _collective_device()
    mine = torch.from_numpy(padded).to(device)
    pieces = [torch.empty_like(mine) for _ in range(size)]
    dist.all_gather(pieces, mine)
    whole = np.empty((total, *part.shape[1:]), dtype=part.dtype)
    for r, piece in enumerate(pieces):
        whole[rows[r]] = piece.cpu().numpy()[: len(rows[r])]
    return whole


def mean_over_ranks(values: dict[str, float]) -> dict[str, float]:
    """Each value averaged over the ranks (one all-reduce), so every rank holds the very
    same numbers; integers stay integers. The identity when alone."""
    _, size = world()
    if size == 1:
        return values
    names = list(values)
    total = torch.tensor(
        [float(values[k]) for k in names], dtype=torch.float64, device=_collective_device()
    )
    dist.all_reduce(total, op=dist.ReduceOp.SUM)
    mean = (total / size).tolist()
    return {
        k: round(m) if isinstance(values[k], int) else m for k, m in zip(names, mean, strict=True)
    }


def gather_shares(*parts: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """The whole batch from every rank's share of it (rank `r` holds rows `r::world_size`,
    as the loader deals them), in the batch's own order, on every rank. The tensors of
    `parts` share their first dimension. The identity when alone.

    ```
    ranks' shares, padded to the longest   row j of rank r   -> batch row j * W + r
    rank 0: b0 b2 b4      stack (j, r):    b0 b1 | b2 b3 | b4 _  -> flatten, drop padding
    rank 1: b1 b3 _
    ```
    """
    _, size = world()
    if size == 1:
        return parts
    device = parts[0].device
    count = torch.tensor([len(parts[0])], dtype=torch.int64, device=device)
    counts = [torch.zeros_like(count) for _ in range(size)]
    dist.all_gather(counts, count)
    sizes = [int(c) for c in counts]
    total, most = sum(sizes), max(sizes)
    if sizes != [len(range(r, total, size)) for r in range(size)]:
        raise ValueError(f"gather_shares: shares {sizes} are not rows r::{size} of one batch")
    whole = []
    for part in parts:
        padded = part.new_zeros((most, *part.shape[1:]))
        padded[: len(part)] = part
        pieces = [torch.empty_like(padded) for _ in range(size)]
        dist.all_gather(pieces, padded)
        whole.append(torch.stack(pieces, dim=1).flatten(0, 1)[:total])  # (total, ...)
    return tuple(whole)


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
