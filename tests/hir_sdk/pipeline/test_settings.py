"""`JobSettings`: the main job's settings in one object, checked when made."""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

import pytest
import tomli_w

from hir_sdk.cli.run import add_job_options, job_settings
from hir_sdk.errors import InputError
from hir_sdk.evaluation.rankers import needs_hir
from hir_sdk.pipeline import TREATMENTS, JobSettings, encoder_settings
from hir_sdk.schema.dataset import CONTENT_FILE
from hir_sdk.synth import TRUTH_DIR
from hir_sdk.training import TrainConfig
from hir_sdk.training.config import ModelSizes, OptimConfig


def test_content_follows_the_data_and_the_config_file(tiny_world, tmp_path):
    bare = tmp_path / "bare"
    shutil.copytree(tiny_world, bare, ignore=shutil.ignore_patterns(CONTENT_FILE, TRUTH_DIR))
    assert JobSettings.for_data(tiny_world).encoder.use_content
    assert not JobSettings.for_data(bare).encoder.use_content
    config = tmp_path / "lr.toml"
    config.write_text("[optim]\nlr = 0.001\n")
    settings = JobSettings.for_data(tiny_world, config, seed=3, steps=30)
    assert settings.encoder.use_content and settings.encoder.optim.lr == 0.001
    assert settings.encoder == encoder_settings(config, has_content=True)
    # the same settings from the content flag alone (hir demo knows it before the data)
    assert JobSettings.with_encoder(config, True, seed=3, steps=30) == settings
    defaults = TrainConfig(batch_size=32)
    quick = JobSettings.with_encoder(None, False, defaults, steps=9, refresh_steps=0)
    assert quick.encoder == encoder_settings(None, False, defaults) and quick.refresh == 0


def test_a_config_file_changes_only_what_it_sets_of_the_defaults(tmp_path):
    defaults = TrainConfig(batch_size=32, model=ModelSizes(dim=64), optim=OptimConfig(lr=0.01))
    assert encoder_settings(None, True, defaults) == dataclasses.replace(defaults, use_content=True)
    config = tmp_path / "encoder.toml"
    config.write_text("steps = 7\n[model]\nheads = 2\n[optim]\nwarmup_steps = 3\n")
    encoder = encoder_settings(config, False, defaults)
    assert (encoder.model.dim, encoder.model.heads, encoder.batch_size) == (64, 2, 32)
    assert (encoder.optim.lr, encoder.optim.warmup_steps, encoder.steps) == (0.01, 3, 7)
    assert not encoder.use_content
    config.write_text("[model]\nwidth = 64\n")  # a typo names the file, as without defaults
    with pytest.raises(InputError, match="unknown config keys") as info:
        encoder_settings(config, False, defaults)
    assert str(config) in str(info.value)


def test_the_schedule_of_the_first_run_and_its_refreshes():
    settings = JobSettings(encoder=encoder_settings(None, False), seed=4, steps=30)
    first = settings.first_run()
    assert (first.steps, first.seed, first.eval_every, first.checkpoint_every) == (30, 4, 10, 10)
    assert first.batch_size == settings.encoder.batch_size
    assert settings.refresh == 10  # a third of the steps
    assert JobSettings(encoder=settings.encoder, steps=2).refresh == 1  # at least one
    assert JobSettings(encoder=settings.encoder, refresh_steps=0).refresh == 0
    ab = settings.ab
    assert (ab.control, ab.treatment, ab.n_bootstrap, ab.seed) == ("xgboost", "xgboost+hir", 200, 4)


def test_every_setting_goes_into_the_job_file():
    encoder = encoder_settings(None, True)
    settings = JobSettings(encoder=encoder, seed=1, steps=9, refresh_steps=2, bootstrap=50)
    written = tomllib.loads(tomli_w.dumps(settings.to_dict("data")))
    assert written["data"] == "data"
    assert (written["seed"], written["steps"], written["refresh_steps"]) == (1, 9, 2)
    assert written["ab"] == {"control": "xgboost", "treatment": "xgboost+hir", "bootstrap": 50}
    assert written["encoder"] == tomllib.loads(tomli_w.dumps(encoder.to_dict()))
    stacked = dataclasses.replace(settings, treatment="xgboost+multistage")
    written = tomllib.loads(tomli_w.dumps(stacked.to_dict("data")))
    assert written["ab"]["treatment"] == "xgboost+multistage"


def test_the_command_line_chooses_the_treatment():
    parser = argparse.ArgumentParser()
    add_job_options(parser)
    default = job_settings(parser.parse_args([]), has_content=False)
    assert default.ab.treatment == "xgboost+hir" and default.treatment == TREATMENTS[0]
    for name in TREATMENTS:
        chosen = job_settings(parser.parse_args(["--treatment", name]), has_content=False)
        assert (chosen.ab.control, chosen.ab.treatment) == ("xgboost", name)
        assert needs_hir(name)  # every offered arm reads the job's snapshots
    with pytest.raises(SystemExit):
        parser.parse_args(["--treatment", "popularity"])


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        ({"steps": 0}, "steps >= 1"),
        ({"refresh_steps": -1}, "refresh_steps >= 0"),
        ({"bootstrap": 0}, "bootstrap resamples must be between"),
        ({"treatment": "popularity"}, "treatment must be one of"),
    ],
)
def test_bad_settings_stop_when_made(schedule, message):
    with pytest.raises(InputError, match=message):
        JobSettings(encoder=encoder_settings(None, False), **schedule)
