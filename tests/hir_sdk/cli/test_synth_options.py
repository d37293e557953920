"""`hir synth --content-reveal / --interest-drift`: the knobs from the command line."""

from __future__ import annotations

import polars as pl
import pytest

from hir_sdk.cli.main import main
from hir_sdk.synth import TRUTH_DIR


def test_knobs_reach_the_world(tmp_path, capsys):
    out = tmp_path / "hidden"
    argv = ["synth", "--out", str(out), "--scale", "tiny", "--seed", "2"]
    assert main([*argv, "--content-reveal", "0", "--interest-drift", "0.02"]) == 0
    printed = capsys.readouterr().out
    assert "content reveal 0, interest drift 0.02" in printed
    text_leaves = pl.read_parquet(out / TRUTH_DIR / "text_leaves.parquet")
    assert text_leaves.height > 0 and not text_leaves["reveals"].any()
    moves = pl.read_parquet(out / TRUTH_DIR / "interest_moves.parquet")
    assert 0.01 < moves.height / (1000 * 60) < 0.03


def test_default_run_writes_no_knob_truth(tmp_path, capsys):
    out = tmp_path / "plain"
    assert main(["synth", "--out", str(out), "--scale", "tiny"]) == 0
    assert "content reveal" not in capsys.readouterr().out
    assert sorted(p.name for p in (out / TRUTH_DIR).iterdir()) == [
        "entities.parquet",
        "taxonomy.parquet",
        "users.parquet",
    ]


@pytest.mark.parametrize(
    ("option", "value"),
    [("--content-reveal", "1.5"), ("--content-reveal", "-0.2"), ("--interest-drift", "2")],
)
def test_out_of_range_knob_exits_2_and_writes_nothing(tmp_path, capsys, option, value):
    out = tmp_path / "never"
    assert main(["synth", "--out", str(out), "--scale", "tiny", option, value]) == 2
    assert "must be a number in [0, 1]" in capsys.readouterr().err
    assert not out.exists()


def test_non_number_knob_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as stop:
        main(["synth", "--out", str(tmp_path / "x"), "--content-reveal", "half"])
    assert stop.value.code == 2
