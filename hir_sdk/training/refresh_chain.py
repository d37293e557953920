"""A refreshed encoder: a first run, then refresh runs trained until later times, each
(by default) warm-started from the run before it (`hir fit --refresh --init-from`).

This is how `hir demo` and `benchmarks/ab_hir.py` keep the encoder that embeds a snapshot
as fresh as that snapshot: one run per snapshot time, each trained until it
(`refresh_ends` names them as the demo does: `run`, `run_validation`, `run_test`). Every
run of a chain, a chain of one run too, is a refresh run (`select = "last"`): it keeps
its last checkpoint, so nothing after its `train_until` is read, not even for model
selection (a run that selected on validation would have read up to the test start, the
window the A/B's rankers fit and choose on).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from hir_sdk.schema.manifest import TimeSplits
from hir_sdk.training.config import TrainConfig
from hir_sdk.training.trainer import Trainer


def refresh_ends(splits: TimeSplits, first_until: int, refresh: bool = True) -> dict[str, int]:
    """Run folder name -> `train_until`: `run` until `first_until`, then (with `refresh`)
    `run_validation` and `run_test` until the validation and the test start."""
    ends = {"run": first_until}
    if refresh:
        ends |= {"run_validation": splits.validation_start, "run_test": splits.test_start}
    return ends


def train_refreshed(
    data: str | Path,
    out: str | Path,
    first: TrainConfig,
    ends: Mapping[str, int],
    *,
    refresh_steps: int | None = None,
    warm_start: bool = True,
    progress: bool = False,
) -> list[Path]:
    """Train one run per entry of `ends` (folder name -> `train_until`, in time order) into
    `out/<name>`, and return their folders in that order.

    The first run is `first` (its `train_until` replaced); each later run is `first` with
    `refresh_steps` steps (default `first.steps`), its evaluation and checkpoint cadence
    capped at those steps, and, with `warm_start`, `init_from` the run before it."""
    times = list(ends.values())
    if not times:
        raise ValueError("train_refreshed: no run to train (ends is empty)")
    if times != sorted(times) or len(set(times)) != len(times):
        raise ValueError(f"train_refreshed: run ends must increase, got {dict(ends)}")
    steps = first.steps if refresh_steps is None else refresh_steps
    if steps < 1:
        raise ValueError(f"train_refreshed: refresh_steps must be >= 1, got {steps}")
    select = "last"  # see the module docstring
    runs: list[Path] = []
    for name, until in ends.items():
        config = dataclasses.replace(first, train_until=str(until), select=select)
        if runs:
            config = dataclasses.replace(
                config,
                steps=steps,
                eval_every=min(first.eval_every, steps),
                checkpoint_every=min(first.checkpoint_every, steps),
                init_from=str(runs[-1]) if warm_start else "",
            )
        Trainer(data, Path(out) / name, config).fit(progress=progress)
        runs.append(Path(out) / name)
    return runs
