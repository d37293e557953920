"""`hir run --config` and `hir demo --config`: the keys of the file that the job's
schedule replaces are named in a warning, before any work."""

from __future__ import annotations

import pytest

from hir_sdk.cli.demo import demo_settings
from hir_sdk.cli.main import build_parser, main
from hir_sdk.errors import InputError
from hir_sdk.pipeline import SCHEDULED_KEYS

SCHEDULED = """\
steps = 5
seed = 3
train_until = "garbage"
select = "last"
eval_every = 2
checkpoint_every = 2
init_from = ""
[optim]
lr = 0.001
"""


@pytest.fixture
def stopped_job(monkeypatch):
    """`hir run`'s job replaced by one that records its settings and stops at once."""
    seen = []

    def run_job(data, tmp, settings, **kwargs):
        seen.append(settings)
        raise InputError("stopped before any work")

    monkeypatch.setattr("hir_sdk.cli.run.run_job", run_job)
    return seen


def test_the_keys_the_schedule_replaces_are_named_before_any_work(
    tiny_world, tmp_path, capsys, stopped_job
):
    data, out, config = tiny_world, tmp_path / "job", tmp_path / "encoder.toml"
    config.write_text(SCHEDULED)
    argv = ["run", "--data", str(data), "--out", str(out), "--config", str(config)]
    assert main([*argv, "--steps", "6", "--seed", "1"]) == 2  # the stopped job
    err = capsys.readouterr().err
    warning, stopped = err.splitlines()
    assert warning.startswith(f"hir run: warning: {config}: hir run sets ")
    assert "steps, seed, train_until, select, eval_every, checkpoint_every itself" in warning
    assert "and does not use the file's values" in warning
    for key in ("steps", "seed", "train_until", "select", "eval_every", "checkpoint_every"):
        assert f"{key}: {SCHEDULED_KEYS[key]}" in warning
    assert "the refreshes until the validation and the test start" in warning
    assert "init_from" not in warning and "lr" not in warning  # those it uses
    assert "stopped before any work" in stopped and not out.exists()
    # what the job trains with: the command line and the schedule, the file's lr
    [settings] = stopped_job
    first = settings.first_run()
    assert (first.steps, first.seed, first.eval_every, first.optim.lr) == (6, 1, 2, 0.001)


def test_a_file_without_those_keys_gives_no_warning(tiny_world, tmp_path, capsys, stopped_job):
    data, config = tiny_world, tmp_path / "encoder.toml"
    config.write_text('init_from = ""\n[optim]\nlr = 0.001\n')
    argv = ["run", "--data", str(data), "--out", str(tmp_path / "job"), "--config", str(config)]
    assert main(argv) == 2  # the stopped job
    err = capsys.readouterr().err
    assert "warning" not in err and "stopped before any work" in err


def test_a_bad_file_is_one_error_and_no_warning(tiny_world, tmp_path, capsys, stopped_job):
    data, config = tiny_world, tmp_path / "encoder.toml"
    config.write_text("steps = 5\nwidth = 3\n")
    argv = ["run", "--data", str(data), "--out", str(tmp_path / "job"), "--config", str(config)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "unknown config keys ['width']" in err and "warning" not in err
    assert not stopped_job


def test_the_demo_warns_the_same(tmp_path, capsys):
    config = tmp_path / "encoder.toml"
    config.write_text('select = "validation"\n')
    demo_settings(build_parser().parse_args(["demo", "--config", str(config)]))
    err = capsys.readouterr().err
    assert err.startswith(f"hir demo: warning: {config}: hir demo sets select itself")
