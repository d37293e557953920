"""What each rank runs in `test_distributed`'s two-rank failure and validation tests.

The test starts two plain processes with RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and
MASTER_PORT set (as a cluster scheduler would; no `torchrun` agent stops one rank when
the other fails). Each rank trains the tiny world with validation and a checkpoint at
every step; from step 2 on, rank 0's disk is full, so its checkpoint write raises. Each
rank writes `rank{R}.json` into OUT: its validation loss before training, the error it
stopped with, its step, its best validation loss and a hash of its cluster queue.

A rank then stays alive until both ranks have reported, as a GPU rank would: a process
that exits closes its gloo connections, which wakes a peer that NCCL would leave waiting.
It then leaves its process group, as `hir fit` does, writes `rank{R}_after.json` (the
gloo and store threads still running after that), and exits with status 1 if it
stopped with an error.

    python -m tests.hir_sdk.training.two_rank_worker DATA RUN OUT
"""

from __future__ import annotations

import dataclasses
import errno
import glob
import hashlib
import json
import sys
import time
from pathlib import Path

import torch

from hir_sdk.training import Trainer
from hir_sdk.training import trainer as trainer_module
from hir_sdk.training.config import TrainConfig
from hir_sdk.training.distributed import init_from_env, world
from tests.hir_sdk.training.test_trainer import CONFIG

FULL_FROM_STEP = 2  # rank 0's checkpoint writes fail from this step on


def config() -> TrainConfig:
    """The tiny test config: validation and a checkpoint at every step, no prototype
    seeding, batches prepared in the training process (no worker start-up to wait for)."""
    return dataclasses.replace(
        CONFIG,
        steps=4,
        eval_every=1,
        checkpoint_every=1,
        num_workers=0,
        distill=dataclasses.replace(CONFIG.distill, seed_prototypes_at=()),
    )


def _full_disk_from_step_2(rank: int):
    real = trainer_module.save_checkpoint

    def save(state, path):
        if rank == 0 and state["step"] >= FULL_FROM_STEP:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        real(state, path)

    return save


def _native_threads() -> list[str]:
    """The names of this process's threads (Linux), skipping any that end meanwhile."""
    names = []
    for path in glob.glob("/proc/self/task/*/comm"):
        try:
            names.append(Path(path).read_text().strip())
        except OSError:
            continue
    return names


def main(data: str, run: str, out: str) -> int:
    init_from_env()
    rank, size = world()
    assert size == 2, size
    trainer = Trainer(data, run, config())
    report: dict[str, object] = {"rank": rank, "initial_val_loss": trainer.validate()["val_loss"]}
    trainer_module.save_checkpoint = _full_disk_from_step_2(rank)
    failure: Exception | None = None
    try:
        trainer.fit(progress=False)
    except Exception as err:
        failure = err
    queue = trainer.queue.state_dict()
    report |= {
        "error": None if failure is None else type(failure).__name__,
        "step": trainer.step,
        "best_validation": trainer.best_validation,
        "queue_rows": int((queue["types"] >= 0).sum()),
        "queue": hashlib.sha256(
            queue["z"].numpy().tobytes() + queue["types"].numpy().tobytes()
        ).hexdigest(),
    }
    Path(out, f"rank{rank}.json").write_text(json.dumps(report))
    while not all(Path(out, f"rank{r}.json").exists() for r in range(size)):
        time.sleep(0.05)  # the test's process timeout bounds this
    # as `hir fit` does: a process group left to interpreter teardown can abort the
    # process ("terminate called without an active exception") instead of exiting
    torch.distributed.destroy_process_group()
    # what is left of gloo and its store must go with the group, not at interpreter
    # teardown, where it raced the other rank's exit (Linux: native threads by name)
    left = sorted(name for name in _native_threads() if "gloo" in name or "tcpstore" in name)
    Path(out, f"rank{rank}_after.json").write_text(json.dumps({"threads": left}))
    if failure is not None:
        print(f"rank {rank}: {failure!r}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
