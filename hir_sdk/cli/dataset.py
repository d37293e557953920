"""`hir dataset`: write a public data set in the input format (`manifest.toml`, `nodes`,
`edges`, `content` parquet), ready for `hir run`: MovieLens-100K read from its installed
package, or a MovieLens CSV release (ml-latest-small, ml-25m, ml-32m, ...) read from the
folder you unzipped it to (`--source`)."""

from __future__ import annotations

import argparse
import time

from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.dataset_names import MOVIELENS_100K, MOVIELENS_CSV
from hir_sdk.errors import InputError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser(
        "dataset", help="write a public data set in the input format", description=__doc__
    )
    parser.add_argument("name", choices=[MOVIELENS_100K, MOVIELENS_CSV])
    parser.add_argument(
        "--source",
        help=f"{MOVIELENS_CSV}: the unzipped release (ratings.csv, movies.csv, tags.csv)",
    )
    parser.add_argument("--out", required=True, help="output folder (absent or empty)")
    add_overwrite_option(parser, "hir synth or hir dataset")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.io import check_free

    started = time.perf_counter()
    if (args.name == MOVIELENS_CSV) != (args.source is not None):
        raise InputError(f"--source is for {MOVIELENS_CSV} (and required there), not {args.name}")
    check_free(args.out, kind="dataset", overwrite=args.overwrite, inputs=[args.source])
    # the slow imports, once the quick checks have passed
    from hir_sdk.datasets import movielens_100k, movielens_csv
    from hir_sdk.synth import write_world

    world = movielens_csv(args.source) if args.source else movielens_100k()
    write_world(world, args.out, overwrite=args.overwrite)
    print(
        f"wrote {args.name} to {args.out}: {world.nodes.num_rows:,} nodes, "
        f"{world.edges.num_rows:,} edges, {world.content.num_rows:,} content rows in "
        f"{time.perf_counter() - started:.1f}s"
    )
    return 0
