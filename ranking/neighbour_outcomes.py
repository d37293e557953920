"""Neighbour outcomes: how the user responded to the past exposures most like the
candidate, in HIR embedding space, as of the request.

A user's overall conversion rate says how often they convert; it does not say on what.
Weighting each past exposure's outcome by its similarity to the candidate does: a user
who converts on thrillers and never on comedies gets a high rate for a thriller and a
low one for a comedy. This is a nearest-neighbour estimate of the label from the user's
own history, with HIR's embeddings as the metric; on a log with no click role it is the
only HIR feature that contrasts what a user converted on with what they were shown and
did not.

For an example `(user, ad, t)` the history is the user's last `last` exposures with
`ts < t` (`EventHistory.window`). The outcome of exposure `(ad_j, t_j)` is 1 when the user
converted on the owner `ad_j` had at `t_j` (`OwnersAsOf`, the rule of the labels,
`evaluation.examples`) within `(t_j, t_j + attribution window]` *and before `t`*: a
conversion at or after the request is never read, so an exposure whose attribution
window is still open at `t` counts as what it is so far (0 unless it already converted).
Every embedding, the candidate's and the history's, is read as of `t` (`HirLookup`).

Columns (`c_j` the cosine between the candidate and exposure j, `y_j` its outcome, over
the history exposures found in a snapshot):

    hir_nbr_rate_t{tau}   sum_j softmax(c / tau)_j * y_j, for each temperature
    hir_nbr_rate_top{k}   the mean outcome of the k most similar exposures
    hir_nbr_gap           max c over converted exposures - max c over the others
    hir_nbr_count         how many exposures were found
NaN when the candidate is not in a snapshot or no history exposure is (the gap also when
either side is empty); the count is 0 then.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

from hir_sdk.graph import TemporalGraph
from hir_sdk.graph.event_index import EventIndex
from hir_sdk.graph.owners import OwnersAsOf, conversion_index, converted_before
from hir_sdk.ranking.hir_lookup import HirLookup
from hir_sdk.ranking.sequence.history import EventHistory
from hir_sdk.schema.manifest import DAY

TEMPERATURES = (0.05, 0.1)
CHUNK = 4_096  # examples per block: the block's history embeddings are CHUNK x last x D


class NeighbourOutcomes:
    """Similarity-weighted outcomes of the user's last `last` exposures (module doc)."""

    def __init__(
        self,
        graph: TemporalGraph,
        lookup: HirLookup,
        *,
        last: int = 50,
        temperatures: Sequence[float] = TEMPERATURES,
        top: int = 10,
        attribution_days: float | None = None,
        owners: OwnersAsOf | None = None,
        exposures: EventHistory | None = None,
        conversions: EventIndex | None = None,
    ) -> None:
        if last < 1 or top < 1:
            raise ValueError(f"NeighbourOutcomes: last and top must be >= 1, got {last}, {top}")
        if not all(tau > 0 for tau in temperatures):
            raise ValueError(f"NeighbourOutcomes: temperatures must be > 0, got {temperatures}")
        days = attribution_days
        if days is None:
            days = graph.manifest.attribution_window_days
        if not days > 0:
            raise ValueError(f"NeighbourOutcomes: attribution window must be > 0 days, got {days}")
        self.graph = graph
        self.lookup = lookup
        self.last = last
        self.top = top
        self.temperatures = tuple(float(tau) for tau in temperatures)
        self.window_s = int(round(days * DAY))
        self.owners = OwnersAsOf(graph) if owners is None else owners
        self._history = EventHistory(graph, roles=("exposure",)) if exposures is None else exposures
        self._conversions = (
            conversion_index(graph, self.owners) if conversions is None else conversions
        )

    @property
    def columns(self) -> list[str]:
        return [
            *(f"hir_nbr_rate_t{tau:g}" for tau in self.temperatures),
            f"hir_nbr_rate_top{self.top}",
            "hir_nbr_gap",
            "hir_nbr_count",
        ]

    def compute(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> pl.DataFrame:
        """Feature columns for examples (global user and ad indices, request times)."""
        user, ad, t = (np.asarray(a, dtype=np.int64) for a in (user, ad, t))
        out = {c: np.full(len(ad), np.nan) for c in self.columns}
        out["hir_nbr_count"] = np.zeros(len(ad))
        for lo in range(0, len(ad), CHUNK):
            block = slice(lo, lo + CHUNK)
            for name, values in self._block(user[block], ad[block], t[block]).items():
                out[name][block] = values
        return pl.DataFrame(out)

    def outcomes(self, user: np.ndarray, item: np.ndarray, ts: np.ndarray, t: np.ndarray):
        """(n,) 1.0 where `user` converted on the owner `item` had at `ts`, within the
        attribution window after `ts` and before `t`; arrays of one shape."""
        converted = converted_before(
            self._conversions, self.owners, user, item, ts, t, self.window_s
        )
        return converted.astype(np.float64)

    def _block(self, user: np.ndarray, ad: np.ndarray, t: np.ndarray) -> dict[str, np.ndarray]:
        n = len(ad)
        candidate = self.lookup.lookup(ad, t)
        past = self._history.window(user, t, self.last).trimmed()
        when = np.broadcast_to(t[:, None], past.item.shape)
        rows = self.lookup.lookup(past.item, when)
        have = past.mask & rows.found & candidate.found[:, None]
        y = np.zeros(past.item.shape)
        if have.any():
            y[have] = self.outcomes(
                np.broadcast_to(user[:, None], have.shape)[have],
                past.item[have],
                (when - past.age)[have],
                when[have],
            )
        cos = np.einsum("nkd,nd->nk", rows.z, candidate.z, dtype=np.float64)
        count = have.sum(axis=1)
        some = count > 0
        out: dict[str, np.ndarray] = {"hir_nbr_count": count.astype(np.float64)}
        for tau in self.temperatures:
            logits = np.where(have, cos / tau, -np.inf)
            top = logits.max(axis=1, initial=-np.inf, where=have)
            weight = np.where(have, np.exp(logits - np.where(some, top, 0.0)[:, None]), 0.0)
            total = weight.sum(axis=1)
            rate = (weight * y).sum(axis=1) / np.maximum(total, 1e-300)
            out[f"hir_nbr_rate_t{tau:g}"] = np.where(some, rate, np.nan)
        # the k most similar: ranks of the cosines among the found exposures, best first
        order = np.argsort(np.where(have, -cos, np.inf), axis=1, kind="stable")
        k = min(self.top, order.shape[1]) if n else 0
        best = order[:, :k]
        taken = np.take_along_axis(have, best, axis=1)
        hits = (np.take_along_axis(y, best, axis=1) * taken).sum(axis=1)
        out[f"hir_nbr_rate_top{self.top}"] = np.where(
            some, hits / np.maximum(taken.sum(axis=1), 1), np.nan
        )
        pos = np.where(have & (y > 0), cos, -np.inf).max(axis=1, initial=-np.inf)
        neg = np.where(have & (y == 0), cos, -np.inf).max(axis=1, initial=-np.inf)
        both = np.isfinite(pos) & np.isfinite(neg)
        out["hir_nbr_gap"] = np.subtract(pos, neg, out=np.full(n, np.nan), where=both)
        return out
