"""The `hir` command line: one entry point, a sub-command per pipeline stage.

User mistakes (`InputError`) print one clear message and exit with code 2; nothing is
left half-written because every output is written atomically.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from hir_sdk import __version__
from hir_sdk.cli import ab, dataset, demo, embed, export, fit, graph, synth
from hir_sdk.errors import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hir", description="Hierarchical Interest Representations for ads entities."
    )
    parser.add_argument("--version", action="version", version=f"hir-sdk {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (synth, dataset, graph, fit, embed, ab, export, demo):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args) or 0)
    except InputError as err:
        print(f"hir {args.command}: error: {err}", file=sys.stderr)
        return err.exit_code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
