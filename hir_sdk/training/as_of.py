"""Times a user names on the command line or in a config (`--as-of`, `train_until`), and the
training window they cut.

A time is integer seconds, an ISO date or time (UTC unless it says otherwise), or the
name of a split boundary of the dataset's manifest (`test_start`).

`train_until` ends a run's training window early: the encoder then learns only from edges
before it, and the manifest's validation window is widened to `[train_until,
test_start)` for model selection. A downstream ranker may then fit on examples after
`train_until` with features from this encoder, knowing the encoder never saw their labels
(`hir ab` relies on it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.schema.manifest import TimeSplits

SPLIT_NAMES = ("start", "validation_start", "test_start", "end")


def parse_as_of(value: str | int, splits: object, *, what: str = "--as-of") -> int:
    """Seconds since the epoch (see the module docstring for the accepted forms)."""
    if isinstance(value, (int, np.integer)):
        return int(value)
    text = str(value).strip()
    if text in SPLIT_NAMES:
        return int(getattr(splits, text))
    if text.lstrip("-").isdigit():
        return int(text)
    try:
        moment = dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(
            f"{what} {text!r} is not a time: give ISO-8601 (2026-03-01 or "
            f"2026-03-01T12:00:00Z), integer seconds, or one of {list(SPLIT_NAMES)}"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int(moment.timestamp())


def trained_until(train_until: str, splits: TimeSplits) -> int:
    """End of a run's training window: `train_until`, or the validation start when empty."""
    if not train_until:
        return splits.validation_start
    until = parse_as_of(train_until, splits, what="train_until")
    if not splits.start < until <= splits.validation_start:
        raise InputError(
            f"train_until {train_until!r} ({until}) must fall inside the training window "
            f"({splits.start}, {splits.validation_start}]"
        )
    return until


def training_midpoint(splits: TimeSplits) -> int:
    """The middle of the training window: where `hir demo` ends the encoder's window
    (`train_until`), so the rankers fit on the half after it."""
    return splits.start + (splits.validation_start - splits.start) // 2


def training_graph(graph: TemporalGraph, train_until: str) -> TemporalGraph:
    """`graph` with its training window ended at `train_until` (see the module docstring)."""
    t = graph.manifest.time
    until = trained_until(train_until, t)
    if until == t.validation_start:
        return graph
    splits = TimeSplits(t.start, until, t.test_start, t.end)
    return dataclasses.replace(graph, manifest=dataclasses.replace(graph.manifest, time=splits))
