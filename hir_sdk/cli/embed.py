"""`hir embed`: every entity's embedding, interest clusters and BoM tokens as of a time.

Only edges before `--as-of` are used (views, statistics and pooled world knowledge), so
the output does not change when later days are appended to the data.

Under `torchrun --nproc_per_node=N -m hir_sdk.cli.main embed --run-dir RUN ...` (torchrun
reads `--run` as its own `--run-path`) the ranks share the work (each embeds and encodes
every N-th batch; rank 0 fits the BoM quantizer) and rank 0 writes the one output
folder, atomically; it is bit-identical to one process's.
"""

from __future__ import annotations

import argparse

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.cli.overwrite_option import add_overwrite_option
from hir_sdk.errors import InputError


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("embed", help="embed entities as of a time", description=__doc__)
    parser.add_argument(
        "--run",
        "--run-dir",
        dest="run_dir",
        required=True,
        help="training run folder (hir fit --out); under torchrun write --run-dir, since "
        "torchrun takes --run for its own --run-path",
    )
    parser.add_argument("--data", required=True, help="dataset folder to embed")
    parser.add_argument(
        "--as-of",
        required=True,
        help="ISO time (2026-03-01, 2026-03-01T12:00:00Z), integer seconds, or a split "
        "boundary of the manifest: start, validation_start, test_start, end",
    )
    parser.add_argument("--out", required=True, help="output folder (written atomically)")
    parser.add_argument("--types", help="comma-separated node types (default: all)")
    parser.add_argument("--checkpoint", default="best", choices=("best", "last"))
    parser.add_argument("--codebooks", type=at_least(1), default=8, help="BoM codebooks M")
    parser.add_argument(
        "--codewords",
        type=at_least(1),
        default=256,
        help="codewords K per codebook (at most; fewer on a small snapshot, see docs/bom.md)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the BoM quantizer")
    add_overwrite_option(parser, "hir embed")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.io import check_free

    inputs = [args.run_dir, args.data]
    check_free(args.out, kind="embeddings", overwrite=args.overwrite, inputs=inputs)
    # the slow imports, once the quick checks have passed
    import torch

    from hir_sdk.bom.quantizer import check_sizes
    from hir_sdk.interests import embed_entities, write_embeddings
    from hir_sdk.training.distributed import init_from_env, on_rank_zero, world

    check_sizes(args.codebooks, args.codewords)  # before the embedding, not after it
    types = None
    if args.types is not None:
        types = list(dict.fromkeys(t.strip() for t in args.types.split(",") if t.strip()))
        if not types:
            raise InputError(f"--types {args.types!r} names no node type")
    distributed = init_from_env()  # every rank has checked --out before joining
    rank, ranks = world()
    try:
        result = embed_entities(
            args.run_dir,
            args.data,
            args.as_of,
            node_types=types,
            checkpoint=args.checkpoint,
            codebooks=args.codebooks,
            codewords=args.codewords,
            seed=args.seed,
            across_ranks=distributed,
        )
        out = on_rank_zero(
            lambda: write_embeddings(result, args.out, overwrite=args.overwrite, inputs=inputs)
        )
    finally:
        if distributed:
            torch.distributed.destroy_process_group()
    if rank != 0:
        return 0
    meta = result.meta
    counts = ", ".join(f"{n:,} {t}" for t, n in meta["counts"].items())
    bom = meta["bom"]
    print(
        f"embedded {meta['rows']:,} entities as of {meta['as_of_iso']} ({counts}); "
        f"BoM {bom['codebooks']}x{bom['codewords']}, relative reconstruction error "
        f"{bom['relative_error']:.3f}; {ranks} rank(s); wrote {out}"
    )
    return 0
