"""As-of lookups into HIR snapshots: the embedding, clusters and BoM tokens an entity had
at a request time.

For a query `(node, t)` the snapshot used is the latest one with `as_of <= t` that holds
the node (a snapshot at `as_of` only saw edges before it), never a newer one: a full
snapshot holds every entity that existed at its time, and arrival snapshots
(`hir_sdk.interests.arrivals`) add the entities created since, with the full snapshot's
quantizer. A row is served only from its own `as_of` on: in creation snapshots
(`embed_on_creation`) each row has its own time. With none, `found` is False and the
values are fill values (zeros, -1).

Snapshots also say until when their encoder read the log: `trained_until`, the end of its
training window, and `selected_until`, the end of the window it chose its checkpoint on
(the test start for a run that selects on validation, None for a refresh run); with
refreshed encoders each snapshot has its own. An example at time `t` reads the snapshot
before `t`; if that snapshot's encoder read past `t` (trained or selected on it), the
features saw the example's label. `fit_from` is the earliest time from which no example
can do so and every example can find a snapshot; `check_fit_window` refuses a ranker that
fits on earlier examples. A snapshot written before `selected_until` was recorded does
not say what its encoder read: `fit_from` refuses it (re-embed it).

Each snapshot's rows are found by a binary search over its node indices, sorted: memory
in the snapshot's rows, not in the graph's nodes (daily arrival snapshots hold a few
hundred ads each, against millions of nodes).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from hir_sdk.errors import InputError
from hir_sdk.graph import TemporalGraph
from hir_sdk.interests import EntityEmbeddings
from hir_sdk.interests.arrivals import ARRIVALS_SINCE, ON_CREATION
from hir_sdk.interests.hierarchy import snapshot_nodes
from hir_sdk.schema.manifest import iso_time

UNKNOWN = np.iinfo(np.int64).max
# metadata key of a snapshot aligned onto an earlier encoder's space
# (`ranking.snapshot_alignment`): the end of what the encoders it was aligned through read
ALIGNED_READ_UNTIL = "aligned_read_until"


def _arrival(snapshot: EntityEmbeddings) -> bool:
    return ARRIVALS_SINCE in snapshot.meta


def read_until(meta: dict) -> int:
    """The end of everything a snapshot (its `meta`) was made from: its encoder's
    training window and, for a run that chose its checkpoint on validation, that window
    too, and for an aligned snapshot what the encoders it was aligned through read;
    UNKNOWN when the snapshot does not record the first two."""
    if "trained_until" not in meta or "selected_until" not in meta:
        return UNKNOWN
    trained, selected = int(meta["trained_until"]), meta["selected_until"]
    end = trained if selected is None else max(trained, int(selected))
    return max(end, int(meta.get(ALIGNED_READ_UNTIL, end)))


class _RowIndex:
    """Row of each global node in one snapshot: its node indices sorted, searched."""

    def __init__(self, nodes: np.ndarray) -> None:
        order = np.argsort(nodes, kind="stable")
        self.nodes = nodes[order]  # (rows,) sorted
        self.rows = order  # (rows,) the row of each sorted node

    def __call__(self, nodes: np.ndarray) -> np.ndarray:
        """(n,) the row of each node, -1 where it is not in the snapshot (a node listed
        twice: its last row)."""
        if len(self.nodes) == 0:
            return np.full(np.shape(nodes), -1, dtype=np.int64)
        at = np.maximum(np.searchsorted(self.nodes, nodes, side="right") - 1, 0)
        return np.where(self.nodes[at] == nodes, self.rows[at], -1)


@dataclass(frozen=True)
class HirRows:
    """What `HirLookup.lookup` returns; arrays shaped like the query plus a last axis."""

    z: np.ndarray  # (..., D) float32, zeros where not found
    clusters: np.ndarray  # (..., levels) int64, -1 where not found
    tokens: np.ndarray  # (..., M) token ids m * K + k, -1 where not found
    found: np.ndarray  # (...) bool


class HirLookup:
    def __init__(self, graph: TemporalGraph, snapshots: Sequence[EntityEmbeddings]) -> None:
        if not snapshots:
            raise ValueError("HirLookup needs at least one snapshot")
        levels = {s.levels for s in snapshots}
        dims = {s.embeddings().shape[1] for s in snapshots}
        if len(levels) != 1 or len(dims) != 1:
            raise ValueError(
                f"snapshots disagree on levels {sorted(levels)} or dimensions {sorted(dims)}"
            )
        self.snapshots = sorted(snapshots, key=lambda s: s.as_of)
        self.as_of = np.array([s.as_of for s in self.snapshots], dtype=np.int64)
        # per snapshot: the end of what its encoder read (UNKNOWN when not recorded)
        self._ends = [read_until(s.meta) for s in self.snapshots]
        self.levels = levels.pop()
        self.dim = dims.pop()
        self.codebooks = int(self.snapshots[0].tokens().shape[1])
        self.codewords = max(int(s.meta["bom"]["codewords"]) for s in self.snapshots)
        self.prototype_sizes = [int(p.shape[0]) for p in self.snapshots[0].prototypes]
        # per snapshot: the row of a global node, -1 when absent
        self._rows = [_RowIndex(snapshot_nodes(s, graph)) for s in self.snapshots]
        # per snapshot: (rows,) the time each row was embedded at, served from then on
        self._from = [s.table["as_of"].to_numpy() for s in self.snapshots]
        # per snapshot: the full snapshot it extends (itself, unless an arrival snapshot)
        full = {int(s.as_of): k for k, s in enumerate(self.snapshots) if not _arrival(s)}
        self.base_of = np.array(
            [
                full.get(int(s.meta[ARRIVALS_SINCE]), k) if _arrival(s) else k
                for k, s in enumerate(self.snapshots)
            ],
            dtype=np.int64,
        )
        self.full_indices: list[int] = np.unique(self.base_of).tolist()
        self._z = [s.embeddings() for s in self.snapshots]
        self._tokens = [s.tokens() for s in self.snapshots]
        self._clusters = [
            np.stack([s.clusters(level) for level in range(self.levels)], axis=1).astype(np.int64)
            for s in self.snapshots
        ]

    @property
    def full_snapshots(self) -> list[EntityEmbeddings]:
        """The full snapshots (not arrival snapshots), oldest first."""
        return [self.snapshots[k] for k in self.full_indices]

    @property
    def created_rows(self) -> int:
        """How many entities the creation snapshots embedded on creation."""
        return sum(len(s.table) for s in self.snapshots if ON_CREATION in s.meta)

    @property
    def trained_until(self) -> int:
        """The latest end of what a snapshot's encoder read (training and checkpoint
        selection; unknown, for snapshots written before it was recorded, counts as the
        far future)."""
        return max(self._ends)

    @property
    def refreshed(self) -> bool:
        """Whether the full snapshots come from encoders trained until different times."""
        return len({self._ends[k] for k in self.full_indices}) > 1

    @property
    def aligned(self) -> bool:
        """Whether snapshots were aligned onto an earlier encoder's space."""
        return any(ALIGNED_READ_UNTIL in s.meta for s in self.snapshots)

    @property
    def fit_from(self) -> int:
        """The earliest example time from which every example reads a snapshot whose
        encoder's read window (training and checkpoint selection) ended at or before the
        example (see the module docstring): the first snapshot's time, or later where a
        snapshot's encoder read past its own time."""
        ends = self._ends
        if UNKNOWN in ends:
            raise InputError(
                "a HIR snapshot does not record when the windows its encoder trained and "
                "chose its checkpoint on ended (trained_until, selected_until); re-embed it "
                "with this version (hir embed)"
            )
        # a snapshot serves until the next full one (later arrival snapshots hold only
        # the entities created since, so the others keep reading it)
        full = self.as_of[self.full_indices]
        leaky = [
            min(end, int(full[full > at].min(initial=UNKNOWN)))
            for end, at in zip(ends, self.as_of.tolist(), strict=True)
            if end > at
        ]
        return max([int(self.as_of[0]), *leaky])

    def check_fit_window(self, earliest_example: int, what: str = "ranker") -> None:
        """Refuse fitting on examples dated before `fit_from`."""
        fit_from = self.fit_from
        if earliest_example < fit_from:
            why = (
                f"the HIR encoder's training window ended, with its checkpoint selection "
                f"window ({iso_time(fit_from)}): its features would have seen those "
                "examples' labels"
                if fit_from in self._ends
                else f"the first HIR snapshot ({iso_time(fit_from)})"
            )
            raise InputError(
                f"the {what} would fit on examples from {iso_time(earliest_example)}, before "
                f"{why}. Train the encoder with an earlier train_until as a refresh run "
                "(hir fit --refresh --until), embed later snapshots, or fit on later examples"
            )

    def snapshot_of(self, t: np.ndarray) -> np.ndarray:
        """Index of the snapshot each time uses; -1 when none is old enough."""
        return np.searchsorted(self.as_of, np.asarray(t, dtype=np.int64), side="right") - 1

    def lookup(self, nodes: np.ndarray, t: np.ndarray) -> HirRows:
        """Embeddings, clusters and tokens of `nodes` as of times `t` (same shape, any)."""
        nodes = np.asarray(nodes, dtype=np.int64)
        t = np.broadcast_to(np.asarray(t, dtype=np.int64), nodes.shape)
        flat_nodes, flat_t = nodes.reshape(-1), t.reshape(-1)
        n = len(flat_nodes)
        z = np.zeros((n, self.dim), dtype=np.float32)
        clusters = np.full((n, self.levels), -1, dtype=np.int64)
        tokens = np.full((n, self.codebooks), -1, dtype=np.int64)
        found = np.zeros(n, dtype=bool)
        pick = self.snapshot_of(flat_t)
        valid = flat_nodes >= 0
        for k in reversed(range(len(self.snapshots))):  # the latest holding the node wins
            mine = np.flatnonzero((pick >= k) & valid & ~found)
            rows = self._rows[k](flat_nodes[mine])
            held = rows >= 0
            held[held] = self._from[k][rows[held]] <= flat_t[mine[held]]
            hit, rows = mine[held], rows[held]
            z[hit] = self._z[k][rows]
            clusters[hit] = self._clusters[k][rows]
            tokens[hit] = self._tokens[k][rows]
            found[hit] = True
        shape = nodes.shape
        return HirRows(
            z=z.reshape(*shape, self.dim),
            clusters=clusters.reshape(*shape, self.levels),
            tokens=tokens.reshape(*shape, self.codebooks),
            found=found.reshape(shape),
        )
