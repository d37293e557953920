"""`hir fit`: train the Hierarchical Encoder on a dataset's training window."""

from __future__ import annotations

import argparse
import dataclasses

from hir_sdk.training import TrainConfig, Trainer, load_config


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fit", help="train the encoder", description=__doc__)
    parser.add_argument("--data", required=True, help="dataset folder (manifest + parquet)")
    parser.add_argument("--out", required=True, help="run folder (checkpoints, metrics)")
    parser.add_argument("--config", help="TOML training config (default: built-in)")
    parser.add_argument("--seed", type=int, default=None, help="overrides the config's seed")
    parser.add_argument("--max-steps", type=int, default=None, help="stop early at this step")
    parser.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoints/last.pt"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    config = load_config(args.config) if args.config else TrainConfig()
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)
    trainer = Trainer(args.data, args.out, config)
    if args.resume:
        trainer.resume()
    result = trainer.fit(max_steps=args.max_steps, progress=not args.quiet)
    print(
        f"trained {result.steps} steps; best validation loss {result.best_validation:.4f}; "
        f"run: {result.run}"
    )
    return 0
