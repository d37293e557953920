"""`hir run --config` and `hir demo --config`: the keys of the file that the job's
schedule replaces with other values, and an `init_from`, are named in a warning, before
any work; `JobSettings` gives the same warning to its library callers."""

from __future__ import annotations

import warnings

import pytest

from hir_sdk.cli.demo import demo_settings
from hir_sdk.cli.main import build_parser, main
from hir_sdk.errors import InputError
from hir_sdk.pipeline import SCHEDULED_KEYS, JobSettings, ScheduleWarning
from hir_sdk.training import TrainConfig

SCHEDULED = """\
steps = 5
seed = 3
train_until = "garbage"
select = "validation"
eval_every = 3
checkpoint_every = 3
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


def test_keys_set_to_the_jobs_own_values_give_no_warning(tiny_world, tmp_path, capsys, stopped_job):
    """`seed = 0` without --seed, `select = "last"`, an empty `train_until`, `hir fit`'s
    own config.toml: the job trains with what they say (or they say nothing)."""
    config = tmp_path / "encoder.toml"
    config.write_text(
        'seed = 0\nselect = "last"\ntrain_until = ""\nsteps = 300\neval_every = 100\n'
        'checkpoint_every = 100\ninit_from = ""\n[optim]\nlr = 0.001\n'
    )
    argv = ["run", "--data", str(tiny_world), "--out", str(tmp_path / "o"), "--config"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScheduleWarning)
        JobSettings.for_data(tiny_world, config)
    assert main([*argv, str(config)]) == 2  # the stopped job
    assert "warning" not in capsys.readouterr().err
    fit = tmp_path / "fit.toml"  # what `hir fit` writes: its seed and train_until are the job's
    fit.write_text(TrainConfig(steps=300, eval_every=100, checkpoint_every=100).to_toml())
    assert main([*argv, str(fit)]) == 2
    err = capsys.readouterr().err
    assert "hir run sets select itself" in err  # hir fit's default selects on validation
    for key in ("seed", "train_until", "steps", "eval_every", "init_from"):
        assert f"{key}:" not in err.split("does not use")[1]


def test_an_init_from_is_said_to_warm_start_the_first_encoder(
    tiny_world, tmp_path, capsys, stopped_job
):
    early = tmp_path / "runs" / "early"
    early.mkdir(parents=True)
    (early / "config.toml").write_text(TrainConfig().to_toml())
    config = tmp_path / "encoder.toml"
    config.write_text(f'seed = 5\ninit_from = "{early}"\n')
    argv = ["run", "--data", str(tiny_world), "--out", str(tmp_path / "o"), "--config"]
    assert main([*argv, str(config)]) == 2  # the stopped job
    warning, stopped = capsys.readouterr().err.splitlines()
    assert warning.endswith(
        f"with them. The first encoder warm-starts from the file's init_from, {early} (each "
        'refresh from the run before it); set init_from = "" to train it from scratch'
    )
    assert "stopped before any work" in stopped
    [settings] = stopped_job
    assert settings.first_run().init_from == str(early)  # as the warning says
    with pytest.warns(ScheduleWarning) as caught:  # the library says the same
        JobSettings.for_data(tiny_world, config)
    [warned] = caught
    assert str(warned.message) == f"{config}: " + warning.split(f"{config}: ", 1)[1].replace(
        "hir run sets", "the job sets"
    )
    assert warned.filename == __file__  # the caller's line, not the library's
    config.write_text(f'init_from = "{early}"\n')  # alone, it opens the warning
    assert main([*argv, str(config)]) == 2
    assert capsys.readouterr().err.startswith(
        f"hir run: warning: {config}: the first encoder warm-starts from the file's init_from"
    )
