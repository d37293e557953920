"""`hir synth`: write a synthetic ads world (tables, manifest, hidden truth).

`--content-reveal` sets the share of advertisers, products and ads whose text names
their own interest (1, the default: all; 0: the text is independent of the interest);
`--interest-drift` the probability per user and day that one of the user's interests
moves to a related leaf (0, the default: only the slow drift of one slot). See
docs/synthetic-world.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import time

from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.synth import SCALES, SynthConfig


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "synth", help="generate a synthetic ads world", description=__doc__
    )
    parser.add_argument("--out", required=True, help="output folder (absent or empty)")
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--content-reveal",
        type=float,
        default=1.0,
        metavar="SHARE",
        help="share of entities whose text is drawn from their own interest, in [0, 1] "
        "(default 1; 0: the text reveals nothing)",
    )
    parser.add_argument(
        "--interest-drift",
        type=float,
        default=0.0,
        metavar="P",
        help="probability per user and day that one interest moves to a related leaf, "
        "in [0, 1] (default 0)",
    )
    add_overwrite_option(parser, "hir synth or hir dataset")
    parser.set_defaults(run=run)


def _knobs(cfg: SynthConfig) -> str:
    """The knobs that differ from their defaults, for the summary line."""
    parts = [] if cfg.content_reveal == 1.0 else [f"content reveal {cfg.content_reveal:g}"]
    parts += [] if cfg.interest_drift == 0.0 else [f"interest drift {cfg.interest_drift:g}"]
    return "".join(f", {part}" for part in parts)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.io import check_free

    started = time.perf_counter()
    cfg = dataclasses.replace(
        SCALES[args.scale],
        content_reveal=args.content_reveal,
        interest_drift=args.interest_drift,
    )  # an out-of-range knob is an InputError before anything is touched
    check_free(args.out, kind="dataset", overwrite=args.overwrite)
    # the slow imports, once the quick checks have passed
    from hir_sdk.synth import generate_world, write_world

    world = generate_world(cfg, args.seed)
    write_world(world, args.out, overwrite=args.overwrite)
    print(
        f"wrote {args.scale} world (seed {args.seed}{_knobs(cfg)}) to {args.out}: "
        f"{world.nodes.num_rows:,} nodes, {world.edges.num_rows:,} edges, "
        f"{world.content.num_rows:,} content rows in {time.perf_counter() - started:.1f}s"
    )
    return 0
