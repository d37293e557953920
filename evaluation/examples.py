"""Deep-funnel examples: one per exposure, labelled by a later conversion on the same owner.

For a chronological window `[lo, hi)` (train, validation or test):

- every exposure edge (role `exposure`, e.g. user -impression-> ad) with `lo <= ts < hi` is
  one example, with request time `ts`;
- its label is 1 when the same user has a conversion edge (role `conversion`) on a node of
  the same owner (the ad's advertiser: its products, its pixel) with
  `ts < conversion_ts <= ts + attribution window`;
- owners are as of time (`OwnersAsOf`): the ad's owner from the structural edges before
  the exposure, the converted-on node's from those before the conversion;
- labels are read only before the window's *label horizon*: its end `hi` (the data's end
  for the test window), exclusive like every window end. An exposure is labelled only
  when its whole attribution window lies before the horizon, `ts + window < hi`; one whose
  window reaches the horizon or runs past it has an unknown label: it is **censored**,
  left out and counted, never labelled negative. So a training label never uses a
  conversion from the validation or test period, not even one at `validation_start`
  itself.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex
from hir_sdk.graph.owners import OwnersAsOf, conversion_index, converted_within
from hir_sdk.schema.manifest import DAY, DatasetManifest

WINDOWS = ("train", "validation", "test")


@dataclass(frozen=True)
class Examples:
    """Labelled exposures of one window.

    `frame` columns: `user`, `ad`, `owner` (global node indices), `ts` (request time, s),
    `label` (0/1). Rows are in time order.
    """

    window: str
    frame: pl.DataFrame
    horizon: int  # labels use conversions with ts < horizon only
    attribution_window_s: int
    censored: int  # exposures left out because their label is not known by the horizon

    @property
    def size(self) -> int:
        return self.frame.height

    @property
    def positives(self) -> int:
        return int(self.frame["label"].sum())


def attribution_seconds(manifest: DatasetManifest, attribution_days: float | None = None) -> int:
    """The attribution window in whole seconds, as the labels read it: `attribution_days`
    (the A/B's override) or the manifest's; an `InputError` unless it is > 0."""
    days = manifest.attribution_window_days if attribution_days is None else attribution_days
    if not days > 0:
        raise InputError(f"attribution window must be > 0 days, got {days}")
    return int(round(days * DAY))


def build_examples(
    graph: TemporalGraph,
    window: str,
    *,
    attribution_days: float | None = None,
    owners: OwnersAsOf | None = None,
    conversions: EventIndex | None = None,
) -> Examples:
    """Examples of one chronological window (see the module docstring). `owners` and
    `conversions` (`conversion_index(graph, owners)`): when the caller has them already,
    so that several windows and the features share them; built here otherwise."""
    if window not in WINDOWS:
        raise ValueError(f"window must be one of {WINDOWS}, got {window!r}")
    manifest = graph.manifest
    if not manifest.edge_types_with_role("exposure"):
        raise InputError('the manifest declares no exposure edge type (role = "exposure")')
    if not manifest.edge_types_with_role("conversion"):
        raise InputError('the manifest declares no conversion edge type (role = "conversion")')
    attribution_s = attribution_seconds(manifest, attribution_days)
    owners = OwnersAsOf(graph) if owners is None else owners
    lo, hi = manifest.time.window(window)
    horizon = hi
    edges = np.arange(graph.window(window).start, graph.window(window).stop)
    exposure = graph.role_codes("exposure")
    edges = edges[np.isin(graph.etype[edges], exposure)]
    ts = graph.ts[edges]
    mature = ts + attribution_s < horizon  # the label window (ts, ts + w] ends before it
    edges, ts = edges[mature], ts[mature]
    user, ad = graph.src[edges], graph.dst[edges]
    owner = owners.at(ad, ts)
    index = conversion_index(graph, owners) if conversions is None else conversions
    label = converted_within(index, user, owner, ts, ts + attribution_s, graph.num_nodes).astype(
        np.int8
    )
    frame = pl.DataFrame({"user": user, "ad": ad, "owner": owner, "ts": ts, "label": label})
    return Examples(
        window=window,
        frame=frame,
        horizon=horizon,
        attribution_window_s=attribution_s,
        censored=int((~mature).sum()),
    )
