"""`hir dataset`: write a public data set, read from its installed package, in the input
format (`manifest.toml`, `nodes`, `edges`, `content` parquet), ready for `hir fit`."""

from __future__ import annotations

import argparse
import time

from hir_sdk.datasets import MOVIELENS_100K, movielens_100k
from hir_sdk.io import check_free
from hir_sdk.synth import write_world


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "dataset", help="write a public data set in the input format", description=__doc__
    )
    parser.add_argument("name", choices=[MOVIELENS_100K])
    parser.add_argument("--out", required=True, help="output folder (absent or empty)")
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that hir synth or hir dataset wrote (never another folder)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    check_free(args.out, kind="dataset", overwrite=args.overwrite)
    world = movielens_100k()
    write_world(world, args.out, overwrite=args.overwrite)
    print(
        f"wrote {args.name} to {args.out}: {world.nodes.num_rows:,} nodes, "
        f"{world.edges.num_rows:,} edges, {world.content.num_rows:,} content rows in "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0
