"""Training config: TOML round trip, schedules, validation."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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
    with pytest.raises(InputError, match="precision must be one of"):
        config_from_dict({"precision": "fp16"})
    with pytest.raises(InputError, match="anchor_order must be one of"):
        config_from_dict({"anchor_order": "shuffled"})
    with pytest.raises(InputError, match="EngagementConfig: scale must be > 0"):
        config_from_dict({"engagement": {"scale": 0.0}})
    with pytest.raises(InputError, match="must be a table"):
        config_from_dict({"optim": 3})
    with pytest.raises(InputError, match="config file not found"):
        load_config("/nonexistent/train.toml")
    with pytest.raises(ValueError, match="ContentConfig"):
        ContentConfig(target_temperature=0.0)
    with pytest.raises(InputError, match="invalid config"):
        config_from_dict({"content": {"weight": -1.0}})
    for bad in ({"dim": 0}, {"heads": 3}, {"out_dim": -1}):
        with pytest.raises(InputError, match="ModelSizes: dim, heads"):
            config_from_dict({"model": bad})
    with pytest.raises(InputError, match="ModelSizes: PrototypeConfig.sizes needs"):
        config_from_dict({"model": {"prototypes": [4, 0]}})
    with pytest.raises(InputError, match="ModelSizes: prototype level 6 is not a multiple of 4"):
        config_from_dict({"model": {"prototypes": [4, 6]}})


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


BAD_CONFIGS = {
    # was accepted, then a traceback from the loader (ValueError) after the data was read
    "negative num_workers": ("num_workers = -1", "num_workers must be >= 0"),
    "negative seed": ("seed = -1", "seed must be in [0, 2**63 - 1]"),
    "zero eval_anchors": ("eval_anchors = 0", "eval_anchors"),
    "steps as text": ('steps = "10"', "'steps' must be of type int"),
    "boolean steps": ("steps = true", "'steps' must be of type int"),
    "prototypes not an array": ("[model]\nprototypes = 16", "'model.prototypes' must be an array"),
    "text in prototypes": ('[model]\nprototypes = [16, "x"]', "'model.prototypes' must be of type"),
    "infinite learning rate": ("[optim]\nlr = inf", "'optim.lr' must be a finite number"),
    "NaN weight": ("[content]\nweight = nan", "'content.weight' must be a finite number"),
    "init_from a number": ("init_from = 3", "'init_from' must be of type str"),
    # was accepted, then a traceback after the graph was built
    "engagement role typo": ('[engagement]\nroles = ["clicks"]', "roles ['clicks'] are not"),
    # was a bare UnicodeDecodeError
    "not UTF-8": ("# caf\xe9 in latin-1", "it is not UTF-8"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIGS))
def test_bad_config_value_is_one_message_and_exit_2(case, tmp_path, capsys):
    from hir_sdk.cli.main import main

    text, fragment = BAD_CONFIGS[case]
    path = tmp_path / "train.toml"
    path.write_bytes((text + "\n").encode("latin-1"))
    with pytest.raises(InputError, match=re.escape(fragment)):
        load_config(path)
    args = ["fit", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "run")]
    assert main([*args, "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert fragment in err and "train.toml" in err and "Traceback" not in err


def test_a_bad_cli_override_is_exit_2(tmp_path, capsys):
    from hir_sdk.cli.main import main

    # `hir fit --seed -1` replaces the config's seed: the check runs there too
    args = ["fit", "--data", str(tmp_path / "none"), "--out", str(tmp_path / "run")]
    assert main([*args, "--seed", "-1"]) == 2
    assert "seed must be in [0, 2**63 - 1], got -1" in capsys.readouterr().err
    with pytest.raises(ValueError, match="num_workers"):  # still a ValueError for callers
        TrainConfig(num_workers=-1)
    assert TrainConfig(num_workers=0, seed=2**63 - 1).num_workers == 0


@settings(max_examples=100, deadline=None)
@given(
    init_from=st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
    train_until=st.sampled_from(["", "validation_start", 'C:\\runs\\"q"', "a\nb", "\x00"]),
)
def test_any_string_round_trips_through_toml(init_from, train_until):
    # an `init_from` with a backslash or a quote used to produce unreadable TOML
    config = TrainConfig(init_from=init_from, train_until=train_until)
    assert config_from_dict(tomllib.loads(config.to_toml())) == config


def test_the_training_sizes_default_to_the_encoders():
    """One default per size: `ModelSizes` (what a run trains) and `EncoderConfig` (the
    model built directly) agree on every size they share."""
    import dataclasses

    from hir_sdk.model import EncoderConfig
    from hir_sdk.training.config import ModelSizes

    encoder = EncoderConfig(num_node_types=1, num_edge_types=1, stats_dim=0, content_dim=0)
    sizes = ModelSizes()
    for field in dataclasses.fields(ModelSizes):
        mine = getattr(sizes, field.name)
        theirs = getattr(encoder, field.name)
        if field.name == "prototypes":
            theirs = theirs.sizes
        assert mine == theirs, field.name


def test_a_config_saved_with_a_byte_order_mark_reads_as_without(tmp_path):
    """Editors on Windows save "UTF-8 with BOM"; the mark is invisible, so it is read."""
    plain, marked = tmp_path / "plain.toml", tmp_path / "marked.toml"
    plain.write_text("steps = 7\n[model]\ndim = 48\n", encoding="utf-8")
    marked.write_text("steps = 7\n[model]\ndim = 48\n", encoding="utf-8-sig")
    assert marked.read_bytes().startswith(b"\xef\xbb\xbf")
    assert load_config(marked) == load_config(plain)
    assert load_config(marked).steps == 7
