"""The ranker protocol: what the offline A/B fits, scores with and describes.

An A/B arm is any object with

- `fit(data)`: learn from `data`'s "train" window; the "validation" window is there for
  early stopping and model selection, never the "test" window;
- `predict(data, window)`: conversion probabilities, one per example of `window`, in the
  examples' order;
- `describe()`: one line for the report's protocol section (settings, what was chosen).

An arm that can be stored also follows `SavableRanker`: `save(folder)` writes the fitted
arm into an existing folder, `load(folder)` restores it into a fresh, unfitted arm of the
same kind, whose predictions are then identical (`hir_sdk.evaluation.rankers.save_ranker`
and `load_ranker` add the folder's marker and the arm's name).

`RankingData` holds what an arm may read: the temporal graph, each window's labelled
examples (`user`, `ad`, `owner`, `ts`, `label`, graph node ids) with their as-of feature
rows (`hir_sdk.ranking.features.AsOfFeatures`, row-aligned), and the HIR snapshots when
the A/B has encoder runs; `with_hir(window)` adds the HIR feature columns
(`hir_sdk.ranking.hir_features.HirFeatures`) to a window's rows, computed once per window
and shared by every arm that reads them. `regroup` makes windows out of rows of other
windows (a first stage fitted on the older training rows, a subsample) without computing
those columns again. Every feature in it is as of its example's request time. The
registry that maps names to arms is `hir_sdk.evaluation.rankers`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np
import polars as pl

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex
from hir_sdk.graph.owners import OwnersAsOf
from hir_sdk.ranking.hir_features import HirFeatures
from hir_sdk.ranking.hir_lookup import HirLookup


@dataclass(frozen=True)
class RankingData:
    """One A/B's inputs, by window ("train", "validation", "test")."""

    graph: TemporalGraph
    examples: Mapping[str, pl.DataFrame]  # user, ad, owner, ts, label (+ bookkeeping)
    features: Mapping[str, pl.DataFrame]  # the as-of feature rows of those examples
    hir: HirLookup | None = None  # the HIR snapshots, for arms that read them
    owners: OwnersAsOf | None = None  # the owners the labels were read with, to share
    # the conversions the labels were read from (`conversion_index`), to share
    conversions: EventIndex | None = None
    # set by `regroup`: the data whose windows these rows come from, and for each window
    # here, (its window there, the row indices, the examples frame it made)
    source: tuple[RankingData, Mapping[str, tuple[str, np.ndarray, pl.DataFrame]]] | None = field(
        default=None, repr=False, compare=False
    )

    # Caches (`cached_property` writes past `frozen`); a `dataclasses.replace` copy, whose
    # windows may hold other rows, starts without them.
    @cached_property
    def _hir_columns(self) -> dict[str, pl.DataFrame]:
        """window -> its HIR feature columns."""
        return {}

    @cached_property
    def _hir_features(self) -> HirFeatures:
        return HirFeatures(self.graph, self.hir, owners=self.owners, conversions=self.conversions)

    def labels(self, window: str) -> np.ndarray:
        """(n,) 0/1 labels of `window`'s examples."""
        return self.examples[window]["label"].to_numpy()

    def column(self, window: str, name: str) -> np.ndarray:
        """(n,) one column of `window`'s examples (`user`, `ad`, `owner` or `ts`)."""
        return self.examples[window][name].to_numpy()

    def with_hir(self, window: str) -> pl.DataFrame:
        """`window`'s as-of feature rows followed by its HIR feature columns."""
        if self.hir is None:
            raise InputError("the HIR feature columns need HIR snapshots (encoder runs)")
        if window not in self._hir_columns:
            if self._regrouped(window):
                parent, (whole, rows, _) = self.source[0], self.source[1][window]
                parent.with_hir(whole)  # computed there once, whatever takes rows of it
                self._hir_columns[window] = parent._hir_columns[whole][rows]
            else:
                keys = (self.column(window, c) for c in ("user", "ad", "ts"))
                self._hir_columns[window] = self._hir_features.compute(*keys)
        return pl.concat([self.features[window], self._hir_columns[window]], how="horizontal")

    def _regrouped(self, window: str) -> bool:
        """Whether `window` is still the rows `regroup` took (a `dataclasses.replace`
        copy may hold other rows, snapshots or graph)."""
        if self.source is None or window not in self.source[1]:
            return False
        parent, (_, _, frame) = self.source[0], self.source[1][window]
        same = parent.hir is self.hir and parent.graph is self.graph
        return same and self.examples.get(window) is frame

    def regroup(self, windows: Mapping[str, tuple[str, np.ndarray | None]]) -> RankingData:
        """Data whose windows are rows of this data's: `windows` maps each new window to
        (a window here, its row indices or boolean mask, or None for every row). The new
        windows' HIR columns are rows of the ones computed here, so an arm that fits on
        the regrouped data and predicts on this one computes them once."""
        examples, features, rows = {}, {}, {}
        for name, (whole, pick) in windows.items():
            size = self.examples[whole].height
            index = np.arange(size) if pick is None else np.asarray(pick)
            if index.dtype == bool:
                if index.shape != (size,):
                    raise ValueError(f"regroup {name!r}: a mask of {index.shape} for {size} rows")
                index = np.flatnonzero(index)
            examples[name] = self.examples[whole][index]
            rows[name] = (whole, index, examples[name])
            features[name] = self.features[whole][index]
        return RankingData(
            self.graph,
            examples,
            features,
            self.hir,
            self.owners,
            self.conversions,
            source=(self, rows),
        )


@runtime_checkable
class Ranker(Protocol):
    def fit(self, data: RankingData) -> object: ...

    def predict(self, data: RankingData, window: str) -> np.ndarray: ...

    def describe(self) -> str: ...


@runtime_checkable
class SavableRanker(Ranker, Protocol):
    def save(self, folder: Path) -> None: ...

    def load(self, folder: Path) -> object: ...
