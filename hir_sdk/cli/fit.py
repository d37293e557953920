"""`hir fit`: train the Hierarchical Encoder on a dataset's training window.

Under `torchrun --nproc_per_node=N -m hir_sdk.cli.main fit ...` the ranks join one
process group (gloo on CPU, NCCL on GPUs) and train data-parallel; rank 0 writes the run.

`--out` must be absent or empty for a new run, and a run folder that `hir fit` wrote for
`--resume`: a new run never mixes with an old one. It is checked before anything is
loaded (by every rank, before they join: rank 0 writes nothing until all have checked).
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.errors import InputError

if TYPE_CHECKING:
    from hir_sdk.training import Trainer


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("fit", help="train the encoder", description=__doc__)
    parser.add_argument("--data", required=True, help="dataset folder (manifest + parquet)")
    parser.add_argument(
        "--out",
        required=True,
        help="run folder (checkpoints, metrics): absent or empty, or a run with --resume",
    )
    parser.add_argument(
        "--config",
        help="TOML training config (default: built-in; with --resume, the run's own config.toml)",
    )
    parser.add_argument("--seed", type=int, default=None, help="overrides the config's seed")
    parser.add_argument(
        "--max-steps", type=at_least(1), default=None, help="stop early at this step"
    )
    parser.add_argument(
        "--until",
        default=None,
        help="end the training window early (ISO time, seconds or a split name); "
        "overrides the config's train_until",
    )
    parser.add_argument(
        "--refresh",
        action="store_true",
        help="a refresh run: keep the last checkpoint instead of choosing one on the window "
        "after --until, which may then be any time before the dataset's end (select = last)",
    )
    parser.add_argument(
        "--init-from",
        default=None,
        help="warm start: begin with this earlier run's best.pt weights (init_from)",
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue from OUT/checkpoints/last.pt"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    import torch

    from hir_sdk.io import check_new, check_ours
    from hir_sdk.io.output_folder import marker_kind
    from hir_sdk.training import TrainConfig, Trainer, load_config
    from hir_sdk.training.distributed import init_from_env

    own = Path(args.out) / "config.toml"  # a resumed run continues under its own settings
    if args.config:
        config = load_config(args.config)
    elif args.resume and own.is_file():
        config = load_config(own)
    else:
        config = TrainConfig()
    if args.seed is not None:
        config = dataclasses.replace(config, seed=args.seed)
    if args.until is not None:
        config = dataclasses.replace(config, train_until=args.until)
    if args.refresh:
        config = dataclasses.replace(config, select="last")
    if args.init_from is not None:
        config = dataclasses.replace(config, init_from=args.init_from)
    inputs = [args.data, config.init_from or None]
    if args.resume:
        check_ours(args.out, kind="run", inputs=inputs)
        _check_resumable(Path(args.out))
    else:
        if marker_kind(args.out) == "run":
            _check_resumable(Path(args.out))  # else check_new says to pass --resume
        check_new(args.out, kind="run", inputs=inputs)
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
        kept = (
            f"best validation loss {result.best_validation:.4f}"
            if trainer.selects
            else "kept the last checkpoint (a refresh run)"
        )
        steps = f"trained {result.steps} steps on {trainer.world_size} rank(s)"
        print(f"{steps}; {kept}; run: {result.run}")
        for note in (objectives_note(trainer), pairs_note(trainer)):
            if note:
                print(note)
    return 0


def pairs_note(trainer: Trainer) -> str:
    """Which pairs the collaborative targets factorised, and the coverage that chose
    them under `collaborative.pairs = "auto"` (`training.collaborative_targets`)."""
    import math

    from hir_sdk.training.collaborative_targets import MIN_COVERAGE

    choice = trainer.similarity.collaborative_pairs
    if choice is None:
        return ""
    which = "who converted through" if choice.pairs == "converted" else "who reached"
    coverage = (
        ""
        if math.isnan(choice.coverage)  # the reached pairs were asked for: not counted
        else f" (the converted pairs reach {choice.coverage:.0%} of the reached items; "
        f'"auto" takes them from {MIN_COVERAGE:.0%})'
    )
    return f"collaborative targets: {which} what{coverage}"


def objectives_note(trainer: Trainer) -> str:
    """Which settings a run trained with, and what chose them under `objectives = "auto"`
    (`training.content_agreement`): the content agreement, or that the run read no text;
    "" where content is on and no edge was measured."""
    from hir_sdk.training.content_agreement import CONTENT_AGREES, MIN_PAIRS

    agreement, c = trainer.content_agreement, trainer.config
    engagement = (
        "the engagement settings (clusters read the space, popularity-corrected softmax, "
        "collaborative targets)"
    )
    if agreement is None:
        chosen = engagement if c.objectives == "engagement" else "the configured settings"
        return f"no text read (use_content = false, or no node has text); trained with {chosen}"
    if agreement.pairs == 0:
        return ""
    chosen = (
        "the engagement settings (no content-similarity term, clusters read the space, "
        "popularity-corrected softmax)"
        if c.objectives == "engagement"
        else f"the configured settings (content.weight = {c.content.weight:g}"
        + (", no audience input)" if c.audience.dim == 0 else ")")
    )
    few = f", too few to judge by (< {MIN_PAIRS})" if agreement.pairs < MIN_PAIRS else ""
    return (
        f"content agreement {agreement.auc:.2f} on {agreement.pairs:,} edges{few} (the text "
        f"says what users engage with from {CONTENT_AGREES}); trained with {chosen}; see "
        "docs/real-data.md"
    )


def _check_resumable(run: Path) -> None:
    """An `InputError` for a run folder that holds no checkpoint (interrupted before its
    first): `--resume` has nothing to continue and a new run may not start over it, so
    the message says what to do instead of pointing from one to the other."""
    if not (run / "checkpoints" / "last.pt").is_file():
        raise InputError(
            "this training run stopped before its first checkpoint (no "
            "checkpoints/last.pt), so there is nothing to resume: remove the folder and "
            "start again, or choose another path",
            file=run,
        )
