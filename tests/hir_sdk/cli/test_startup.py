"""`hir --help`, every sub-command's help and a usage error answer without loading the
libraries that take seconds to import: the parser is built from light modules, and each
sub-command imports what its work needs when it runs. Each check runs in a fresh
interpreter, since this one has imported them all."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

# the libraries the `hir` parser does without (benchmarks/results/cli_startup.md)
SLOW_IMPORTS = (
    "torch",
    "torchrec",
    "xgboost",
    "sklearn",
    "onnx",
    "onnxruntime",
    "matplotlib",
    "polars",
    "pyarrow",
    "numpy",
)

# runs each command line given (JSON; null: every command's --help) in a fresh
# interpreter and prints, as JSON, how each exited and which of SLOW_IMPORTS it loaded
_PROBE = """
import argparse, contextlib, io, json, sys
from hir_sdk.cli.main import build_parser, main

def commands(parser, prefix=()):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield [*prefix, name]
                yield from commands(sub, [*prefix, name])

def exit_code(argv):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            return main(argv)
        except SystemExit as exit:
            return exit.code

requested = json.loads(sys.argv[1])
if requested is None:
    requested = [[*argv, "--help"] for argv in [[], *commands(build_parser())]]
codes = {" ".join(argv): exit_code(argv) for argv in requested}
loaded = [name for name in json.loads(sys.argv[2]) if name in sys.modules]
print(json.dumps({"codes": codes, "loaded": loaded}))
"""


def _probe(command_lines: list[list[str]] | None) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(command_lines), json.dumps(SLOW_IMPORTS)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout)


def test_every_help_text_loads_none_of_the_slow_libraries():
    probe = _probe(None)
    commands = ["synth", "dataset", "graph", "graph build", "graph info", "fit", "embed"]
    commands += ["ab", "export", "run", "demo"]
    assert {f"{c} --help".strip(): 0 for c in ["", *commands]}.items() <= probe["codes"].items()
    assert set(probe["codes"].values()) == {0}
    assert probe["loaded"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["ab", "--data", "data", "--out", "report", "--bootstrap", "0"],  # out of range
        ["run", "--data", "data"],  # no --out
        ["embed", "--run", "run", "--data", "data", "--out", "out"],  # no --as-of
        ["demo", "--scale", "huge"],  # not a choice
        ["graph"],  # no action
    ],
)
def test_a_usage_error_exits_2_before_loading_the_slow_libraries(argv):
    probe = _probe([argv])
    assert probe["codes"] == {" ".join(argv): 2}
    assert probe["loaded"] == []
