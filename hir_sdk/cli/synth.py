"""`hir synth`: write a synthetic ads world (tables, manifest, hidden truth)."""

from __future__ import annotations

import argparse
import time

from hir_sdk.io import check_free
from hir_sdk.synth import SCALES, generate_world, write_world


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "synth", help="generate a synthetic ads world", description=__doc__
    )
    parser.add_argument("--out", required=True, help="output folder (absent or empty)")
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that hir synth or hir dataset wrote (never another folder)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    check_free(args.out, kind="dataset", overwrite=args.overwrite)
    world = generate_world(SCALES[args.scale], args.seed)
    write_world(world, args.out, overwrite=args.overwrite)
    print(
        f"wrote {args.scale} world (seed {args.seed}) to {args.out}: "
        f"{world.nodes.num_rows:,} nodes, {world.edges.num_rows:,} edges, "
        f"{world.content.num_rows:,} content rows in {time.perf_counter() - started:.1f}s"
    )
    return 0
