"""`add_overwrite_option`: the `--overwrite` flag every writing command shares, with one
help text that states the rule `io.output_folder` enforces."""

from __future__ import annotations

import argparse


def add_overwrite_option(parser: argparse.ArgumentParser, writer: str) -> None:
    """Add `--overwrite` to `parser`; `writer` names the command(s) whose output it may
    replace ("hir run", "hir synth or hir dataset")."""
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help=f"replace an existing --out that {writer} wrote, only while it holds nothing "
        "but what hir-sdk wrote there (never another folder, never your files)",
    )
