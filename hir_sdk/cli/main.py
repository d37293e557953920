"""The `hir` command line: one entry point, a sub-command per pipeline stage.

User mistakes (`InputError`) print one clear message and exit with code 2; nothing is
left half-written because every output is written atomically. A reader that goes away
(`hir graph info | head -1`) ends the command quietly with 141, as SIGPIPE would.

The parser is built from light modules only: each sub-command imports what its work needs
(torch, XGBoost, polars, ...) in its `run`, after the checks that take no time, so
`hir --help` and usage errors answer at once (tests/hir_sdk/cli/test_startup.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Sequence

from hir_sdk import __version__
from hir_sdk.cli import ab, dataset, demo, embed, export, fit, graph, run, synth
from hir_sdk.errors import InputError, LabelWarning

BROKEN_PIPE = 128 + 13  # the status of a process ended by SIGPIPE
INTERRUPTED = 128 + 2  # the status of a process ended by SIGINT (Ctrl-C)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hir", description="Hierarchical Interest Representations for ads entities."
    )
    parser.add_argument("--version", action="version", version=f"hir-sdk {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module in (synth, dataset, graph, fit, embed, ab, export, run, demo):
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _shown_as(f"hir {args.command}", warnings.showwarning)
            return int(args.run(args) or 0)
    except InputError as err:
        print(f"hir {args.command}: error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        # Ctrl-C is the user's choice, not a failure to explain: one line, no traceback
        # (an output being published has been removed on the way out)
        print(f"\nhir {args.command}: interrupted", file=sys.stderr)
        return INTERRUPTED
    except BrokenPipeError:
        # the rest of the output goes nowhere, so the interpreter's last flush cannot fail
        # again on the closed pipe (the recipe of Python's `signal` documentation)
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return BROKEN_PIPE


def _shown_as(command: str, shown):
    """`warnings.showwarning` that prints the SDK's own warnings about the data as the
    command's one line (`hir run: warning: ...`), and any other as before."""

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, LabelWarning):
            print(f"{command}: warning: {message}", file=sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)

    return show


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
