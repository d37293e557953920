"""Training config: TOML round trip, schedules, validation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from hir_sdk.errors import InputError
from hir_sdk.training import TrainConfig, load_config
from hir_sdk.training.config import ContentConfig, DistillConfig, config_from_dict

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
    with pytest.raises(ValueError, match="ContentConfig"):
        ContentConfig(target_temperature=0.0)
    with pytest.raises(InputError, match="invalid config"):
        config_from_dict({"content": {"weight": -1.0}})


def test_the_training_page_lists_every_key_with_its_default():
    page = (Path(__file__).parents[3] / "docs" / "training.md").read_text(encoding="utf-8")
    block = page.split("Every key, with its default")[1].split("```toml\n")[1].split("```")[0]
    assert config_from_dict(tomllib.loads(block)) == TrainConfig()
    documented = tomllib.loads(block)
    for section, values in TrainConfig().to_dict().items():
        keys = set(values) if isinstance(values, dict) else None
        assert section in documented, section
        if keys is not None:
            assert set(documented[section]) == keys, section
