"""Training config: TOML round trip, schedules, validation."""

from __future__ import annotations

import sys

import pytest

from hir_sdk.errors import InputError
from hir_sdk.training import TrainConfig, load_config
from hir_sdk.training.config import DistillConfig, config_from_dict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


def test_toml_round_trip(tmp_path):
    config = TrainConfig(
        steps=7,
        seed=4,
        device="cpu",
        distill=DistillConfig(teacher_epsilon_start=0.1, teacher_warmup_steps=10),
    )
    path = tmp_path / "c.toml"
    path.write_text(config.to_toml())
    assert load_config(path) == config
    assert config_from_dict(tomllib.loads(config.to_toml())) == config


def test_teacher_temperature_schedule():
    d = DistillConfig(teacher_epsilon=0.04, teacher_epsilon_start=0.08, teacher_warmup_steps=4)
    assert [round(d.teacher_epsilon_at(s), 4) for s in range(6)] == [
        0.08,
        0.07,
        0.06,
        0.05,
        0.04,
        0.04,
    ]
    assert DistillConfig().teacher_epsilon_at(0) == DistillConfig().teacher_epsilon


def test_invalid_values():
    with pytest.raises(ValueError, match="device"):
        TrainConfig(device="tpu")
    with pytest.raises(InputError, match="must be a table"):
        config_from_dict({"optim": 3})
    with pytest.raises(InputError, match="config file not found"):
        load_config("/nonexistent/train.toml")
