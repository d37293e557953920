"""Times a user names on the command line or in a config (`--as-of`, `train_until`), and the
training window they cut.

A time is integer seconds, an ISO date or time (UTC unless it says otherwise), or the
name of a split boundary of the dataset's manifest (`test_start`).

`train_until` ends a run's training window early: the encoder then learns only from edges
before it, and the manifest's validation window is widened to `[train_until,
test_start)` for model selection. Choosing the checkpoint reads that window too, so the
whole span such a run read ends at `selected_until`, the test start (its meta.json
records it): a downstream ranker fitted on features of this encoder starts there
(`HirLookup.fit_from`), never at `train_until`.

A *refresh run* (`select = "last"`, `hir fit --refresh`) keeps its last checkpoint instead
of choosing one on the window after `train_until`, so it reads no edge at or after
`train_until`, which may then be any time before the dataset's end: the validation or
the test start, to re-train the encoder for each full HIR snapshot (see
`ranking.hir_snapshots`). A downstream ranker may fit on the examples after its
`train_until` with its features, knowing the encoder never saw their labels (`hir ab`
relies on it).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.schema.manifest import TimeSplits, iso_time

SPLIT_NAMES = ("start", "validation_start", "test_start", "end")
SELECTIONS = ("validation", "last")  # how a run picks best.pt (TrainConfig.select)


def parse_as_of(
    value: str | int, splits: TimeSplits, *, what: str = "as_of", inside: bool = True
) -> int:
    """Seconds since the epoch (see the module docstring for the accepted forms).
    `inside`: an `InputError` unless the time falls in the dataset's `[start, end]` (an
    embedding before the start has no edge to read; a larger number is most often
    milliseconds)."""
    at = _parse(value, splits, what)
    if inside and not splits.start <= at <= splits.end:
        hint = "; times are seconds, not milliseconds" if at > splits.end * 100 else ""
        raise InputError(
            f"{what} {value!r} ({at} seconds) is outside the dataset's time range "
            f"[{iso_time(splits.start)}, {iso_time(splits.end)}]{hint}"
        )
    return at


def _parse(value: str | int, splits: TimeSplits, what: str) -> int:
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


def trained_until(train_until: str, splits: TimeSplits, select: str = "validation") -> int:
    """End of a run's training window: `train_until`, or the validation start when empty.

    A run that selects on validation needs a validation window after it, so `train_until`
    may not pass the validation start; a refresh run (`select="last"`) may train until
    any time before the dataset's end."""
    if not train_until:
        return splits.validation_start
    until = parse_as_of(train_until, splits, what="train_until", inside=False)
    if select == "last":
        if not splits.start < until < splits.end - 1:
            raise InputError(
                f"train_until {train_until!r} ({until}) of a refresh run must fall inside "
                f"the dataset ({splits.start}, {splits.end - 1})"
            )
        return until
    if not splits.start < until <= splits.validation_start:
        raise InputError(
            f"train_until {train_until!r} ({until}) must fall inside the training window "
            f"({splits.start}, {splits.validation_start}]; a refresh run (hir fit --refresh) "
            "may train until later"
        )
    return until


def selected_until(select: str, splits: TimeSplits) -> int | None:
    """End (exclusive) of the window a run chose its checkpoint on: the test start for a
    run that selects on validation (its validation window is `[train_until,
    test_start)`), None for a refresh run (it reads nothing after `train_until`)."""
    return splits.test_start if select == "validation" else None


def run_selected_until(run: str | Path, select: str, splits: TimeSplits) -> int | None:
    """`selected_until` as the run recorded it in its meta.json; for a run written before
    it was recorded (or with no meta.json), from its config's `select` and `splits`."""
    found, value = _recorded(run, "selected_until")
    if not found:
        return selected_until(select, splits)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise InputError(
            f"selected_until must be an integer or null, got {value!r}",
            file=Path(run) / "meta.json",
        )
    return value


def run_trained_until(run: str | Path, train_until: str, select: str, splits: TimeSplits) -> int:
    """The end of a run's training window as the run recorded it in its meta.json (in
    seconds); for a run with no meta.json, from its config's `train_until` and `select` on
    `splits`. The record decides: a config's "" or split name (`test_start`) names a time
    of the data the run was trained on, which another dataset's manifest (a truncated
    copy, another cut of the log) may place earlier, and the run would then look as if it
    had read less than it did."""
    found, value = _recorded(run, "trained_until")
    if not found:
        return trained_until(train_until, splits, select)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(
            f"trained_until must be an integer, got {value!r}", file=Path(run) / "meta.json"
        )
    return value


def _recorded(run: str | Path, key: str) -> tuple[bool, object]:
    """`(found, value)` of `key` in the run's meta.json (`found` False where the file or
    the key is absent)."""
    path = Path(run) / "meta.json"
    if not path.is_file():
        return False, None
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        raise InputError("the run's meta.json is not readable JSON", file=path) from None
    if not isinstance(meta, dict) or key not in meta:
        return False, None
    return True, meta[key]


def training_midpoint(splits: TimeSplits, first: int | None = None) -> int:
    """The middle of the training window: where `hir demo` ends the encoder's window
    (`train_until`), so the rankers fit on the half after it.

    `first`, the time of the dataset's first edge, starts the window where the manifest's
    `start` lies before it: a start set long before the log begins (a round date) would
    otherwise put the middle before any edge, and the encoder would have nothing to learn
    from."""
    begin = training_start(splits, first)
    return begin + (splits.validation_start - begin) // 2


def training_start(splits: TimeSplits, first: int | None = None) -> int:
    """Where `training_midpoint` counts the training window from: the first edge's time
    `first` where it lies inside the window, else the manifest's `start`."""
    if first is not None and splits.start < first < splits.validation_start:
        return first
    return splits.start


def _first_edge(graph: TemporalGraph) -> int | None:
    return int(graph.ts[0]) if graph.num_edges else None  # the edges are sorted by time


def first_window_end(graph: TemporalGraph) -> int:
    """Where `hir run` ends its first encoder's window on `graph`: `training_midpoint` of
    its windows from its first edge."""
    return training_midpoint(graph.manifest.time, _first_edge(graph))


def first_window_start(graph: TemporalGraph) -> int:
    """Where that window's days are counted from (`training_start`)."""
    return training_start(graph.manifest.time, _first_edge(graph))


def training_graph(
    graph: TemporalGraph, train_until: str, select: str = "validation"
) -> TemporalGraph:
    """`graph` with its training window ended at `train_until` (see the module docstring).

    For a refresh run the validation window is one second wide (the splits need one);
    the trainer reads nothing of it."""
    t = graph.manifest.time
    until = trained_until(train_until, t, select)
    if until == t.validation_start:
        return graph
    if select == "last":
        splits = TimeSplits(t.start, until, until + 1, t.end)
    else:
        splits = TimeSplits(t.start, until, t.test_start, t.end)
    return dataclasses.replace(graph, manifest=dataclasses.replace(graph.manifest, time=splits))
