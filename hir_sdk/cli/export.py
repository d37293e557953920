"""`hir export`: the encoder, the BoM quantizer and the online ranker as ONNX files, each
carrying its contract (inputs, outputs, SDK version, opset, data fingerprint) and passing
`onnx.checker`. With `--check`, onnxruntime and torch run the same real batches: the
command fails (exit 1) when a float output differs by more than 1e-4, or when a row's
BoM tokens differ and its two codes are not equally good (see hir_sdk.export.parity).
"""

from __future__ import annotations

import argparse
import time

from hir_sdk.cli.bounded_int import at_least
from hir_sdk.cli.overwrite_option import add_overwrite_option


def register(commands: argparse._SubParsersAction) -> None:
    parser = commands.add_parser("export", help="export models to ONNX", description=__doc__)
    parser.add_argument("--run", dest="run_dir", required=True, help="training run (hir fit --out)")
    parser.add_argument("--data", required=True, help="dataset folder the run embeds")
    parser.add_argument("--out", required=True, help="output folder (written atomically)")
    parser.add_argument(
        "--as-of",
        default="test_start",
        help="time of the views the quantizer is fitted on and the check embeds "
        "(default test_start)",
    )
    parser.add_argument(
        "--embeddings", help="hir embed output whose BoM quantizer to export (default: fit one)"
    )
    parser.add_argument(
        "--ranker", help="saved online ranker (hir ab --treatment multistage: multistage_ranker/)"
    )
    parser.add_argument("--check", action="store_true", help="parity-check onnxruntime vs torch")
    parser.add_argument(
        "--check-nodes", type=at_least(1), default=512, help="entities the check embeds"
    )
    parser.add_argument("--checkpoint", default="best", choices=("best", "last"))
    add_overwrite_option(parser, "hir export")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from hir_sdk.export.export_run import export_run  # torch.onnx loads only when used

    started = time.perf_counter()
    result = export_run(
        args.run_dir,
        args.data,
        args.out,
        as_of=args.as_of,
        embeddings=args.embeddings,
        ranker=args.ranker,
        check=args.check,
        check_nodes=args.check_nodes,
        checkpoint=args.checkpoint,
        overwrite=args.overwrite,
    )
    print(
        f"exported {', '.join(result.files)} to {result.out} ({time.perf_counter() - started:.1f}s)"
    )
    for parity in result.parity:
        print("  " + parity.render())
    if not result.ok:
        print("parity check FAILED (tolerance 1e-4)")
        return 1
    return 0
