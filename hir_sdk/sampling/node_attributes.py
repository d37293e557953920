"""Numeric node attributes (the extra columns of `nodes.parquet`, the graph's
`attributes`) as encoder statistics.

A log's attributes come in any unit and range: a user's age, a product's price in cents,
an ad's bid, a movie's year. The encoder reads each one through its empirical CDF over
the nodes known when the run's window ends, so that the scale of a column never matters
and a heavy tail cannot swamp the other inputs:

    level(x) = (#{values < x} + #{values <= x}) / (2 n)     at up to `KNOTS` quantiles,
               linear between them, clipped to [level of the smallest, of the largest]

and each column becomes two statistics of its node: `level - 1/2` (0 when the node has no
value) and a 1/0 flag saying whether it has one. A binary column gets its two mid-ranks
(a 70/30 split: 0.35 and 0.85), a constant column a constant.

Which nodes shape the scale: those created before the scale's `as_of`, and of those
with no creation time, those with an edge before it (a log that leaves creation times out
would otherwise rank a user among users who arrive later). The run fits the scale at the
end of its training window, the window its weights read, and saves it
(`attributes.npz`), so refreshes warm-started from it, the embedder and export read every
later node through the same scale. A node's attributes are static properties of it,
stated once in `nodes.parquet`; a column whose value changes over time belongs in the
edges.

A run reads the columns it was trained on: a dataset without one of them does not fit
the run and is refused (`AttributeScale.rows`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph.temporal_graph import UNKNOWN_TIME, TemporalGraph
from hir_sdk.io.atomic import atomic_write_npz

ATTRIBUTES_FILE = "attributes.npz"
KNOTS = 129  # quantiles kept per column (fewer where values tie)


@dataclass(frozen=True)
class AttributeScale:
    """Per column: its sorted distinct knots and their levels (module doc). `knots[i]`
    and `levels[i]` hold `lengths[i]` values, padded to one width."""

    as_of: int
    columns: tuple[str, ...]
    knots: np.ndarray  # (A, K) float64
    levels: np.ndarray  # (A, K) float64
    lengths: np.ndarray  # (A,) int64, >= 1

    @property
    def dim(self) -> int:
        """Statistics per node: a level and a has-value flag per column."""
        return 2 * len(self.columns)

    def rows(self, graph: TemporalGraph) -> np.ndarray:
        """(num_nodes, dim) float32 statistics of `graph`'s nodes; an `InputError` when
        the graph lacks one of the scale's columns (its columns beyond them are not
        read)."""
        missing = [c for c in self.columns if c not in graph.attribute_names]
        if missing:
            raise InputError(
                f"this dataset does not fit the run: its nodes table lacks the numeric "
                f"columns {missing} that the encoder was trained on (it read "
                f"{list(self.columns)}); use the dataset the run was trained on, or train "
                "a run on this one",
                column=missing[0],
            )
        out = np.zeros((graph.num_nodes, self.dim), dtype=np.float32)
        for i, column in enumerate(self.columns):
            values = graph.attributes[:, graph.attribute_names.index(column)]
            has = ~np.isnan(values)
            n = int(self.lengths[i])
            level = np.interp(values[has], self.knots[i, :n], self.levels[i, :n])
            out[has, 2 * i] = level - 0.5
            out[has, 2 * i + 1] = 1.0
        return out

    def save(self, path: str | Path) -> None:
        atomic_write_npz(
            path,
            as_of=np.int64(self.as_of),
            columns=np.array(self.columns, dtype=str),
            knots=self.knots,
            levels=self.levels,
            lengths=self.lengths,
        )

    @classmethod
    def load(cls, path: str | Path) -> AttributeScale:
        with np.load(path, allow_pickle=False) as f:
            return cls(
                int(f["as_of"]),
                tuple(str(c) for c in f["columns"]),
                f["knots"],
                f["levels"],
                f["lengths"],
            )


def known_nodes(graph: TemporalGraph, as_of: int) -> np.ndarray:
    """(N,) bool: created before `as_of`, or, with no creation time, on an edge before it."""
    view = graph.at(as_of)
    return np.where(graph.created_ts == UNKNOWN_TIME, view.degree() > 0, view.node_exists())


def fit_attribute_scale(graph: TemporalGraph, as_of: int) -> AttributeScale | None:
    """The scale of `graph`'s numeric node columns, from the nodes known at `as_of`
    (`known_nodes`); None when it has no such column. A column with no value among those
    nodes is kept, and reads as "no value" everywhere."""
    columns = graph.attribute_names
    if not columns:
        return None
    known = known_nodes(graph, as_of)
    knots = np.zeros((len(columns), KNOTS))
    levels = np.zeros((len(columns), KNOTS))
    lengths = np.ones(len(columns), dtype=np.int64)
    for i in range(len(columns)):
        values = graph.attributes[known, i]
        values = np.sort(values[~np.isnan(values)])
        if len(values) == 0:
            knots[i, 0], levels[i, 0] = 0.0, 0.5
            continue
        at = np.unique(np.quantile(values, np.linspace(0.0, 1.0, KNOTS), method="nearest"))
        below = np.searchsorted(values, at, side="left")
        upto = np.searchsorted(values, at, side="right")
        lengths[i] = len(at)
        knots[i, : len(at)] = at
        levels[i, : len(at)] = (below + upto) / (2.0 * len(values))
    return AttributeScale(int(as_of), tuple(columns), knots, levels, lengths)
