"""`hir fit`: train the Hierarchical Encoder on a dataset's training window.

Under `torchrun --nproc_per_node=N -m hir_sdk.cli.main fit ...` the ranks join one
process group (gloo on CPU, NCCL on GPUs) and train data-parallel; rank 0 writes the run.
"""

from __future__ import annotations

import argparse
import dataclasses

import torch

from hir_sdk.training import TrainConfig, Trainer, load_config
from hir_sdk.training.distributed import init_from_env


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fit", help="train the encoder", description=__doc__)
    parser.add_argument("--data", required=True, help="dataset folder (manifest + parquet)")
    parser.add_argument("--out", required=True, help="run folder (checkpoints, metrics)")
    parser.add_argument("--config", help="TOML training config (default: built-in)")
    parser.add_argument("--seed", type=int, default=None, help="overrides the config's seed")
    parser.add_argument("--max-steps", type=int, default=None, help="stop early at this step")
    parser.add_argument(
        "--until",
        default=None,
        help="end the training window early (ISO time, seconds or a split name); "
        "overrides the config's train_until",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoints/last.pt"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config) if args.config else TrainConfig()
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)
    if args.until is not None:
        config = dataclasses.replace(config, train_until=args.until)
    distributed = init_from_env()
    try:
        trainer = Trainer(args.data, args.out, config)
        if args.resume:
            trainer.resume()
        result = trainer.fit(max_steps=args.max_steps, progress=not args.quiet)
    finally:
        if distributed:
            torch.distributed.destroy_process_group()
    if trainer.rank == 0:
        print(
            f"trained {result.steps} steps on {trainer.world_size} rank(s); best validation "
            f"loss {result.best_validation:.4f}; run: {result.run}"
        )
    return 0
