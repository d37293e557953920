"""`hir embed`: every entity's embedding, interest clusters and BoM tokens as of a time.

Only edges before `--as-of` are used (views, statistics and pooled world knowledge), so
the output does not change when later days are appended to the data.
"""

from __future__ import annotations

import argparse

from hir_sdk.bom.quantizer import check_sizes
from hir_sdk.cli.bounded_int import at_least
from hir_sdk.interests import embed_entities, write_embeddings
from hir_sdk.io import check_free


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("embed", help="embed entities as of a time", description=__doc__)
    parser.add_argument(
        "--run", dest="run_dir", required=True, help="training run folder (hir fit --out)"
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
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --out that hir embed wrote (never another folder)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    inputs = [args.run_dir, args.data]
    check_free(args.out, kind="embeddings", overwrite=args.overwrite, inputs=inputs)
    check_sizes(args.codebooks, args.codewords)  # before the embedding, not after it
    types = [t.strip() for t in args.types.split(",") if t.strip()] if args.types else None
    result = embed_entities(
        args.run_dir,
        args.data,
        args.as_of,
        node_types=types,
        checkpoint=args.checkpoint,
        codebooks=args.codebooks,
        codewords=args.codewords,
        seed=args.seed,
    )
    out = write_embeddings(result, args.out, overwrite=args.overwrite, inputs=inputs)
    meta = result.meta
    counts = ", ".join(f"{n:,} {t}" for t, n in meta["counts"].items())
    bom = meta["bom"]
    print(
        f"embedded {meta['rows']:,} entities as of {meta['as_of_iso']} ({counts}); "
        f"BoM {bom['codebooks']}x{bom['codewords']}, relative reconstruction error "
        f"{bom['relative_error']:.3f}; wrote {out}"
    )
    return 0
