"""Bad command-line values are one message and exit code 2, before any work or output.

Each check lives in the library function the command calls (`generate_world`,
`ABConfig`), so library callers get the same `InputError`."""

from __future__ import annotations

import pytest

from hir_sdk.cli.main import main

OPTIONS = {
    # was a traceback from numpy's SeedSequence
    "synth seed -1": (["synth", "--scale", "tiny", "--seed", "-1"], "seed must be a non-negative"),
    # inf (and huge windows) overflowed in the attribution arithmetic after the graph was built
    "ab attribution inf": (["ab", "--attribution-days", "inf"], "got inf"),
    "ab attribution 1e300": (["ab", "--attribution-days", "1e300"], "got 1e+300"),
    "ab attribution nan": (["ab", "--attribution-days", "nan"], "got nan"),
    "ab attribution -1": (["ab", "--attribution-days", "-1"], "got -1.0"),
}


@pytest.mark.parametrize("case", sorted(OPTIONS))
def test_a_bad_option_is_one_message_and_exit_2(case, write_dataset, tmp_path, capsys):
    argv, fragment = OPTIONS[case]
    out = tmp_path / "out"
    data = [] if argv[0] == "synth" else ["--data", str(write_dataset())]
    assert main([*argv, *data, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err and err.count("\n") == 1, err
    assert not out.exists()
