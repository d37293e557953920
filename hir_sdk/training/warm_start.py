"""Warm starts (`TrainConfig.init_from`, `hir fit --init-from RUN`): a run begins with the
weights of an earlier run's `best.pt` (student, EMA teacher, engagement scorer) instead
of a fresh initialisation; the optimizer, schedule and cluster queue start anew. A
refresh run warm-started from the encoder it replaces needs fewer steps.

The earlier run must have read nothing this run may not: its training window, and for a
run that selects on validation its validation window too, must end at or before this
run's `train_until`. Its model shapes must match this run's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hir_sdk.errors import InputError
from hir_sdk.schema.manifest import TimeSplits, iso_time
from hir_sdk.training.as_of import run_selected_until, run_trained_until
from hir_sdk.training.checkpoint import load_checkpoint
from hir_sdk.training.config import load_config
from hir_sdk.training.preflight import check_init_from
from hir_sdk.training.type_layout import LAYOUT_KEYS

PARTS = ("student", "teacher", "scorer")


def read_until(run: str | Path, splits: TimeSplits) -> int:
    """The end of everything a run read from the data: its training window, or for a run
    that selects on validation, the validation window after it; as the run recorded them
    (`training.as_of.run_trained_until`), else from its config on `splits`."""
    config = load_config(Path(run) / "config.toml")
    selected = run_selected_until(run, config.select, splits)
    if selected is not None:
        return selected
    return run_trained_until(run, config.train_until, config.select, splits)


def warm_start_state(init_from: str | Path, splits: TimeSplits, until: int) -> dict[str, Any]:
    """The weights to start from, after checking the earlier run read nothing from `until`
    on (see the module docstring)."""
    run = Path(init_from)
    check_init_from(run)
    seen = read_until(run, splits)
    if seen > until:
        raise InputError(
            f"init_from read the data until {iso_time(seen)}, after this run's train_until "
            f"({iso_time(until)}): its weights would carry what this run may not see. Warm-"
            "start from a run trained (and, unless a refresh run, validated) before it",
            file=run,
        )
    state = load_checkpoint(run / "checkpoints" / "best.pt")
    layout = {key: state[key] for key in LAYOUT_KEYS if key in state}  # absent: older runs
    return {part: state[part] for part in PARTS} | layout
