"""A refreshed encoder (`train_refreshed`): the first run, then refresh runs until later
times, each warm-started from the run before it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from hir_sdk.sampling.audience import AUDIENCE_FILE, AudienceBasis
from hir_sdk.sampling.node_attributes import ATTRIBUTES_FILE, AttributeScale
from hir_sdk.training.as_of import training_midpoint
from hir_sdk.training.checkpoint import load_checkpoint
from hir_sdk.training.config import load_config
from hir_sdk.training.refresh_chain import refresh_ends, train_refreshed
from tests.hir_sdk.training.test_refresh_run import REFRESH

# the refresh-run tests' tiny model, as a first run that selects on validation
FIRST = dataclasses.replace(
    REFRESH, steps=3, eval_every=2, checkpoint_every=3, train_until="", select="validation"
)


def test_refresh_ends(tiny_graph):
    t = tiny_graph.manifest.time
    middle = training_midpoint(t)
    assert refresh_ends(t, middle) == {
        "run": middle,
        "run_validation": t.validation_start,
        "run_test": t.test_start,
    }
    assert refresh_ends(t, middle, refresh=False) == {"run": middle}


def test_train_refreshed_chains_warm_started_refresh_runs(tiny_world, tiny_graph, tmp_path):
    t = tiny_graph.manifest.time
    ends = refresh_ends(t, training_midpoint(t))
    runs = train_refreshed(tiny_world, tmp_path, FIRST, ends, refresh_steps=1)
    assert runs == [tmp_path / name for name in ends]
    configs = [load_config(run / "config.toml") for run in runs]
    assert [c.steps for c in configs] == [3, 1, 1]
    assert [c.select for c in configs] == ["last"] * 3  # a chain: no model selection
    assert [int(c.train_until) for c in configs] == list(ends.values())
    assert [c.init_from for c in configs] == ["", str(runs[0]), str(runs[1])]
    assert [(c.eval_every, c.checkpoint_every) for c in configs] == [(2, 3), (1, 1), (1, 1)]
    # the runs read no text (use_content = false): "auto" resolves to the engagement
    # settings, and the refreshes keep what the first run resolved (keep_init_choices)
    assert configs[0].objectives == "engagement" and configs[0].engagement.logq_correction
    unchanged = ("seed", "batch_size", "model", "use_content")
    assert all(getattr(configs[0], f) == getattr(FIRST, f) for f in unchanged)
    resolved = (*unchanged, "objectives", "engagement", "distill", "optim", "collaborative")
    for c in configs[1:]:
        assert all(getattr(c, f) == getattr(configs[0], f) for f in resolved)
    for run, steps in zip(runs, (3, 1, 1), strict=True):
        assert load_checkpoint(run / "checkpoints" / "best.pt")["step"] == steps
    # the warm starts read their first run's audience basis: one input space throughout
    first, *later = [AudienceBasis.load(run / AUDIENCE_FILE) for run in runs]
    for basis in later:
        assert basis.as_of == first.as_of
        np.testing.assert_array_equal(basis.source_vectors, first.source_vectors)
    # ... and its attribute scale
    first, *later = [AttributeScale.load(run / ATTRIBUTES_FILE) for run in runs]
    assert first.as_of == ends["run"] and first.columns == ("price", "bid")
    for scale in later:
        assert scale.as_of == first.as_of
        np.testing.assert_array_equal(scale.knots, first.knots)


def test_train_refreshed_from_scratch_and_single_runs(tiny_world, tiny_graph, tmp_path):
    t = tiny_graph.manifest.time
    cold = train_refreshed(
        tiny_world,
        tmp_path / "cold",
        dataclasses.replace(FIRST, steps=1),
        {"run": training_midpoint(t), "run_test": t.test_start},
        warm_start=False,
    )
    configs = [load_config(run / "config.toml") for run in cold]
    assert [(c.steps, c.init_from, c.select) for c in configs] == [(1, "", "last")] * 2
    # from scratch, each run fits its own basis inside its own window
    times = [AudienceBasis.load(run / AUDIENCE_FILE).as_of for run in cold]
    assert times[0] < times[1] < t.test_start
    middle = training_midpoint(t)
    [single] = train_refreshed(
        tiny_world, tmp_path / "one", dataclasses.replace(FIRST, steps=1), {"run": middle}
    )
    config = load_config(single / "config.toml")
    # one run alone is a refresh run too: selecting on validation would read past middle
    assert config.select == "last" and int(config.train_until) == middle


@pytest.mark.parametrize(
    ("ends", "kwargs", "message"),
    [
        ({}, {}, "no run to train"),
        ({"run": 2, "run_test": 1}, {}, "run ends must increase"),
        ({"run": 1, "run_test": 1}, {}, "run ends must increase"),
        ({"run": 1, "run_test": 2}, {"refresh_steps": 0}, "refresh_steps must be >= 1"),
    ],
)
def test_train_refreshed_checks_its_arguments(ends, kwargs, message, tmp_path):
    with pytest.raises(ValueError, match=message):
        train_refreshed(tmp_path, tmp_path, FIRST, ends, **kwargs)
    assert not any(Path(tmp_path).iterdir())  # nothing trained
